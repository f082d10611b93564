"""Moving a log-engine data directory (``gateway.stores.file``) into the SQLite database.

Runs once, on the first open of a directory that holds a log or snapshot but no database, with
the directory's lock held: the graph is loaded as the log engine loads it (torn tail dropped,
corruption refused), written into ``graph.sqlite3.migrating`` in batches (progress logged),
and that file renamed to ``graph.sqlite3`` — the rename is the commit point. The log and
snapshot files are then moved into ``migrated-from-log/``. Interrupted anywhere, the next open
starts over from the log (a half-written ``.migrating`` file is discarded) or only finishes
moving the files: running it again never duplicates or loses a record.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from typing import TYPE_CHECKING

from gateway.stores.file.codec import capture
from gateway.stores.file.loading import load
from gateway.stores.sqlite import writes
from gateway.stores.sqlite.schema import SCHEMA, SCHEMA_VERSION

if TYPE_CHECKING:
    from pathlib import Path

logger = logging.getLogger(__name__)

DATABASE_NAME = "graph.sqlite3"
MIGRATED_DIRECTORY = "migrated-from-log"
_LOG_PATTERNS = ("log.*.jsonl", "snapshot.*.jsonl")
# Records written between two progress lines and two commits of the migration.
BATCH = 50_000


def log_files(directory: Path) -> list[Path]:
    return sorted(path for pattern in _LOG_PATTERNS for path in directory.glob(pattern))


def migrate_file_log(directory: Path, *, fsync: bool = True) -> bool:
    """Migrate ``directory`` if it holds a log engine's files; True when it did (blocking)."""
    database = directory / DATABASE_NAME
    if database.exists():
        _set_aside(directory)  # a migration interrupted after its commit point
        return False
    if not any(path.stat().st_size for path in log_files(directory)):
        _set_aside(directory)
        return False
    partial = directory / f"{DATABASE_NAME}.migrating"
    for leftover in directory.glob(f"{DATABASE_NAME}.migrating*"):
        leftover.unlink()
    loaded = load(directory, fsync)
    try:
        captured = capture(loaded.graph)
    finally:
        loaded.log.close_now()
    total = captured.record_count()
    logger.info("migrating the graph in %s to SQLite: %d records", directory, total)
    db = sqlite3.connect(partial, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute(f"PRAGMA synchronous = {'FULL' if fsync else 'OFF'}")
        db.executescript(SCHEMA)
        db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        db.execute("INSERT INTO meta VALUES ('migrated_from', 'log')")
        done = 0
        steps = [
            *((writes.put_node, node) for node in captured.nodes),
            *((writes.put_edge, edge) for edge in captured.edges),
            *((_put_seq, item) for item in captured.seq.items()),
            *((_park, item) for item in captured.parked),
        ]
        for start in range(0, len(steps), BATCH):
            db.execute("BEGIN")
            for step, argument in steps[start : start + BATCH]:
                step(db, argument)  # type: ignore[operator]
            db.execute("COMMIT")
            done = min(start + BATCH, len(steps))
            logger.info("migrating the graph to SQLite: %d of %d records", done, total)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    for suffix in ("-wal", "-shm"):
        (directory / f"{DATABASE_NAME}.migrating{suffix}").unlink(missing_ok=True)
    os.replace(partial, database)
    _fsync_directory(directory, fsync)
    _set_aside(directory)
    logger.info("migrated the graph in %s to SQLite (%d records)", directory, total)
    return True


def _put_seq(db: sqlite3.Connection, item: tuple[str, int]) -> None:
    db.execute("INSERT OR REPLACE INTO seqs VALUES (?, ?)", item)


def _park(db: sqlite3.Connection, item: tuple[str, object]) -> None:
    waiting_for, edge = item
    writes.park_edge(db, edge, waiting_for)  # type: ignore[arg-type]


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
