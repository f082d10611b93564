"""Making a data directory's SQLite database: a new, empty one (``prepare_database``), or one
moved from a log-engine data directory (``gateway.stores.file``).

Runs once, on the first open of a directory that holds a log or snapshot but no database, with
the directory's lock held: the graph is loaded as the log engine loads it (torn tail dropped,
corruption refused), written into ``graph.sqlite3.migrating`` (the indexes built after the
rows; progress logged), and that file renamed to ``graph.sqlite3`` — the rename is the commit
point. The log and snapshot files are then moved into ``migrated-from-log/``. Interrupted
anywhere, the next open starts over from the log (a half-written ``.migrating`` file is
discarded) or only finishes moving the files: running it again never duplicates or loses a
record.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from typing import TYPE_CHECKING

from gateway.stores.file.codec import Captured, capture
from gateway.stores.file.loading import load
from gateway.stores.sqlite.schema import (
    INDEXES,
    SCHEMA_VERSION,
    TABLES,
    node_values,
    props_text,
    term_rows,
)

if TYPE_CHECKING:
    from pathlib import Path

logger = logging.getLogger(__name__)

DATABASE_NAME = "graph.sqlite3"
MIGRATED_DIRECTORY = "migrated-from-log"
_LOG_PATTERNS = ("log.*.jsonl", "snapshot.*.jsonl")
# Records written between two progress lines.
BATCH = 50_000
# The page cache of the build (KiB): the indexes are sorted in it.
BUILD_CACHE_KIB = 256 * 1024


def log_files(directory: Path) -> list[Path]:
    return sorted(path for pattern in _LOG_PATTERNS for path in directory.glob(pattern))


def prepare_database(directory: Path, *, fsync: bool = True) -> None:
    """Make sure ``directory`` holds its database (blocking): migrate a log engine's files found
    there, or create an empty graph, whole or not at all (the migration's build of nothing).
    A database this store made is never an empty file, so one found empty was truncated or
    replaced outside it: refused (``DatabaseFileError``) rather than opened as an empty graph
    that new writes would then fill; so are a link to a database that is not there and a
    write-ahead log without its database (SQLite would apply its pages to the new one)."""
    database = directory / DATABASE_NAME
    log = directory / f"{DATABASE_NAME}-wal"
    aside = f"move {database.name} and its -wal and -shm files aside to start with an empty graph"
    if database.is_symlink() and not database.exists():
        raise DatabaseFileError(
            f"{database}: a link to {os.readlink(database)}, which does not exist (a volume not "
            f"mounted?); mount it, or {aside}"
        )
    if not database.exists() and log.exists() and log.stat().st_size > 0:
        # SQLite would apply it to the new database: the pages of another one.
        raise DatabaseFileError(
            f"{log}: the write-ahead log of a database that is not there ({database} is "
            f"missing); restore the database from a backup, or {aside}"
        )
    if migrate_file_log(directory, fsync=fsync):
        return
    if not database.exists():
        build_database(directory, Captured([], [], {}, []), fsync=fsync, origin="empty")
    elif database.stat().st_size == 0:
        raise DatabaseFileError(
            f"{database}: the file is empty (0 bytes), but a graph database is never empty: "
            f"it was truncated or replaced; restore it from a backup, or {aside}"
        )


class DatabaseFileError(Exception):
    """The database file cannot be opened as one (damaged, not a database, unreadable, empty):
    the message names the file, what is wrong with it and what to do."""


def migrate_file_log(directory: Path, *, fsync: bool = True) -> bool:
    """Migrate ``directory`` if it holds a log engine's files; True when it did (blocking)."""
    database = directory / DATABASE_NAME
    if database.exists():
        _set_aside(directory)  # a migration interrupted after its commit point
        return False
    if not any(path.stat().st_size for path in log_files(directory)):
        _set_aside(directory)
        return False
    # Reading the log is most of the time at size (about a minute at 1M nodes): said first.
    logger.info("migrating the graph in %s to SQLite: reading the log engine's files", directory)
    loaded = load(directory, fsync)
    try:
        captured = capture(loaded.graph)
    finally:
        loaded.log.close_now()
    build_database(directory, captured, fsync=fsync, origin="log")
    _set_aside(directory)
    logger.info("migrated the graph in %s to SQLite", directory)
    return True


def build_database(directory: Path, captured: Captured, *, fsync: bool, origin: str) -> None:
    """Write ``captured`` as ``directory``'s database (blocking; there must be none yet): rows
    first, then the sorted index builds, into a ``.migrating`` file renamed when complete."""
    database = directory / DATABASE_NAME
    partial = directory / f"{DATABASE_NAME}.migrating"
    total = captured.record_count()
    if total:
        logger.info("writing the graph to SQLite: %d records", total)
    for leftover in directory.glob(f"{DATABASE_NAME}.migrating*"):
        leftover.unlink()  # an earlier build that was stopped before its rename
    try:
        _write_database(partial, captured, total, origin)
    except BaseException:
        # Nothing half built stays behind: the next attempt starts from an empty directory.
        for suffix in ("", "-wal", "-shm"):
            (directory / f"{DATABASE_NAME}.migrating{suffix}").unlink(missing_ok=True)
        raise
    if fsync:
        _fsync_file(partial)
    for suffix in ("-wal", "-shm"):
        (directory / f"{DATABASE_NAME}.migrating{suffix}").unlink(missing_ok=True)
    os.replace(partial, database)
    _fsync_directory(directory, fsync)


def _write_database(partial: Path, captured: Captured, total: int, origin: str) -> None:
    say = logger.info if total else logger.debug  # a new, empty graph: nothing to follow
    db = sqlite3.connect(partial, isolation_level=None)
    try:
        # The file is not the database until it is renamed: no journal, one fsync at the end.
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        db.execute(f"PRAGMA cache_size = -{BUILD_CACHE_KIB}")
        db.executescript(TABLES)
        db.execute("CREATE TEMP TABLE loaded_terms AS SELECT * FROM terms WHERE 0")
        db.execute("BEGIN")
        _load_records(db, captured, total)
        say("writing the graph to SQLite: sorting the search index")
        db.execute("INSERT INTO terms SELECT * FROM loaded_terms ORDER BY token, rank, newer, nid")
        db.execute("DROP TABLE loaded_terms")
        say("writing the graph to SQLite: building the indexes")
        for statement in INDEXES.split(";"):  # not executescript: it would commit first
            db.execute(statement)
        db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        db.execute("INSERT INTO meta VALUES ('migrated_from', ?)", (origin,))
        db.execute("COMMIT")
        db.execute("PRAGMA journal_mode = WAL")
    finally:
        db.close()


def _load_records(db: sqlite3.Connection, captured: Captured, total: int) -> None:
    """Insert every captured record as it is (the graph is consistent: no checks needed)."""
    sessions: dict[str, str] = {}
    done = 0
    for start in range(0, len(captured.nodes), BATCH):
        batch = captured.nodes[start : start + BATCH]
        db.executemany(
            f"INSERT INTO nodes VALUES (?, {', '.join('?' * 13)})",
            ((rid, *node_values(node)) for rid, node in enumerate(batch, start + 1)),
        )
        db.executemany(
            "INSERT INTO loaded_terms VALUES (?, ?, ?, ?, ?)",
            (row for rid, node in enumerate(batch, start + 1) for row in term_rows(node, rid)),
        )
        sessions.update((node.id, node.session_id) for node in batch)
        done += len(batch)
        logger.info("writing the graph to SQLite: %d of %d records", done, total)
    for start in range(0, len(captured.edges), BATCH):
        edges = captured.edges[start : start + BATCH]
        db.executemany(
            "INSERT INTO edges (type, source, target, props, session) VALUES (?, ?, ?, ?, ?)",
            (
                (
                    edge.type.value,
                    edge.source,
                    edge.target,
                    props_text(edge.props),
                    sessions[edge.source]
                    if sessions[edge.source] == sessions[edge.target]
                    else None,
                )
                for edge in edges
            ),
        )
        done += len(edges)
        logger.info("writing the graph to SQLite: %d of %d records", done, total)
    db.executemany("INSERT INTO seqs VALUES (?, ?)", captured.seq.items())
    db.executemany(
        "INSERT OR IGNORE INTO parked (waiting_for, type, source, target, props)"
        " VALUES (?, ?, ?, ?, ?)",
        (
            (waiting_for, edge.type.value, edge.source, edge.target, props_text(edge.props))
            for waiting_for, edge in captured.parked
        ),
    )


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _set_aside(directory: Path) -> None:
    """Move the log engine's files out of the way (kept, for a way back)."""
    files = log_files(directory)
    if not files:
        return
    target = directory / MIGRATED_DIRECTORY
    target.mkdir(exist_ok=True)
    for path in files:
        os.replace(path, target / path.name)


def _fsync_directory(directory: Path, fsync: bool) -> None:
    if not fsync:
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
