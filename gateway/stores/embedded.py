"""Opening the embedded (``file``) backend with the engine the settings name.

``sqlite``, the default (``gateway.settings.DEFAULT_FILE_ENGINE``), is ``gateway.stores.sqlite``
(one SQLite database; it migrates a log directory on first start, once); ``log`` is
``gateway.stores.file`` (a JSON-lines log, the graph in memory). A directory migrated to SQLite
is refused by the log engine instead of being read as empty.
``export_graph`` / ``import_graph``: the whole graph as JSON lines, for people who want text.
"""

from __future__ import annotations

import asyncio
import shutil
from typing import TYPE_CHECKING

from gateway.settings import DEFAULT_FILE_ENGINE
from gateway.stores.file.codec import apply_op, capture, decode, encode, snapshot_ops
from gateway.stores.file.graph import MemoryGraph
from gateway.stores.file.lock import DirectoryLock
from gateway.stores.file.store import FileStore
from gateway.stores.graph_lines import RecordRefusedError, check_record
from gateway.stores.sqlite import queries
from gateway.stores.sqlite.migrate import DATABASE_NAME, build_database, log_files
from gateway.stores.sqlite.salvage import Salvaged, salvage
from gateway.stores.sqlite.store import READERS, SqliteStore
from resolvers.errors import InvalidInputError
from resolvers.integrity import Chains, check_edge
from resolvers.values import check_finite, finite_json

if TYPE_CHECKING:
    from pathlib import Path

    from gateway.stores.file.codec import Captured


class EngineMismatchError(Exception):
    """The data directory belongs to another engine than the one configured."""


async def open_embedded_store(
    directory: Path,
    *,
    engine: str = DEFAULT_FILE_ENGINE,
    fsync: bool = True,
    heavy_readers: int | None = None,
) -> FileStore | SqliteStore:
    """Open the embedded store in ``directory`` with ``engine`` (``sqlite``, the default, or
    ``log``): SQLite migrates a log engine's directory first (once, progress logged), the log
    engine refuses a directory migrated to SQLite (``EngineMismatchError``);
    ``heavy_readers``: the heavy queries the gateway runs at once (SQLite gives reads one
    connection more than that)."""
    if engine == "sqlite":
        readers = READERS if heavy_readers is None else heavy_readers + 1
        return await SqliteStore.open(directory, fsync=fsync, readers=readers)
    if (directory / DATABASE_NAME).exists():
        raise EngineMismatchError(
            f"the graph in {directory} was migrated to the SQLite engine: set "
            "SCIENCE_AGENT_MEMORY_GRAPH_FILE_ENGINE=sqlite (its log files are kept in "
            f"{directory / 'migrated-from-log'})"
        )
    return await FileStore.open(directory, fsync=fsync)


def stored_engine(directory: Path) -> str | None:
    """The engine whose files hold the graph in ``directory`` (``sqlite`` once it has a
    database, else ``log`` when it has a log engine's records), or None when it holds none.
    For the commands that only read a graph: they read it where it is, without migrating it."""
    if (directory / DATABASE_NAME).exists():
        return "sqlite"
    if any(path.stat().st_size for path in log_files(directory)):
        return "log"
    return None


async def capture_embedded(store: FileStore | SqliteStore) -> Captured:
    """A consistent copy of every record of an embedded store (for migration and export)."""
    if isinstance(store, FileStore):
        return store.capture()
    return await store.read(queries.capture)


async def export_graph(store: FileStore | SqliteStore, output: Path) -> int:
    """Write every record of ``store`` to ``output`` as JSON lines, one op a line (the log
    engine's snapshot ops, ``gateway.stores.file.codec``); the number of lines. A stored
    non-finite number, which JSON lacks, is written as ``null``, so every line is JSON that
    ``import_graph`` and any other reader accept."""
    captured = await capture_embedded(store)
    return await asyncio.to_thread(_write_lines, captured, output)


async def salvage_graph(directory: Path, output: Path) -> tuple[int, Salvaged]:
    """``export_graph`` of what can still be read of a damaged SQLite database in
    ``directory`` (``gateway.stores.sqlite.salvage``), with what was left out."""
    lock = DirectoryLock.acquire(directory)
    try:
        captured, salvaged = await asyncio.to_thread(salvage, directory / DATABASE_NAME)
        return await asyncio.to_thread(_write_lines, captured, output), salvaged
    finally:
        lock.release()


def _write_lines(captured: Captured, output: Path) -> int:
    count = 0
    with output.open("wb") as file:
        for op in snapshot_ops(captured):
            file.write(encode(finite_json(op)) + b"\n")
            count += 1
    return count


async def import_graph(
    directory: Path, source: Path, *, fsync: bool = True, old_key_forms: bool = False
) -> int:
    """Build the SQLite database of an empty ``directory`` from JSON lines written by
    ``export_graph``; the number of records. Raises ``ValueError`` naming the line of a bad
    record (one holding a ``NaN`` or infinity, which JSON lacks, names the field too), of one
    holding a value no later read could answer or that two reads would disagree on
    (``gateway.stores.graph_lines``), and of an edge whose end no line defines or that the
    graph model refuses (``resolvers.integrity``); ``FileExistsError`` when the directory
    already holds a graph. Nothing is built unless every line is good. ``old_key_forms``: keys
    of forms the API refuses in new ids are kept (``check_record``)."""

    def build() -> int:
        if (directory / DATABASE_NAME).exists() or log_files(directory):
            raise FileExistsError(f"{directory} already holds a graph; import into a new one")
        graph = MemoryGraph()
        strings: dict[str, str] = {}
        edges: list[tuple[int, str, str, str]] = []  # line, type, source, target
        line_of: dict[tuple[str, str, str], int] = {}  # an edge's first line
        with source.open("rb") as file:
            for number, line in enumerate(file, 1):
                if not line.strip():
                    continue
                try:
                    op = decode(line)
                    check_record(op, old_key_forms=old_key_forms)
                    check_finite(op, "")
                    apply_op(graph, op, strings)
                except InvalidInputError as exc:
                    raise ValueError(f"{source}, line {number}: {exc.message}") from exc
                except RecordRefusedError as exc:
                    raise ValueError(f"{source}, line {number}: {exc}") from exc
                except (ValueError, KeyError, TypeError, RecursionError) as exc:
                    raise ValueError(
                        f"{source}, line {number}: not a graph record ({type(exc).__name__}: {exc})"
                    ) from exc
                if op["op"] == "e":
                    edges.append((number, op["type"], op["source"], op["target"]))
                    line_of.setdefault((op["type"], op["source"], op["target"]), number)
        chains = Chains(graph.nodes.values())
        for number, edge_type, *ends in edges:
            missing = [end for end in ends if end not in graph.nodes]
            if missing:
                raise ValueError(
                    f"{source}, line {number}: an edge to {missing[0]!r}, which no line defines"
                )
            try:
                check_edge(edge_type, graph.nodes[ends[0]], graph.nodes[ends[1]], chains)
            except ValueError as exc:
                raise ValueError(f"{source}, line {number}: {exc}") from exc
        for node in graph.nodes.values():  # a session's next step comes after every one here
            if node.seq > graph.seq.get(node.session_id, 0):
                graph.seq[node.session_id] = node.seq
        captured = capture(graph)
        # In the order of the lines, as exported (newest last): edges are listed by it.
        captured.edges.sort(key=lambda edge: line_of[edge.type.value, edge.source, edge.target])
        directory.mkdir(parents=True, exist_ok=True)
        build_database(directory, captured, fsync=fsync, origin="json-lines")
        return captured.record_count()

    def locked() -> int:
        made = not directory.exists()
        lock = DirectoryLock.acquire(directory)
        try:
            return build()
        except BaseException:
            if made:  # refused or failed: nothing of it stays, not even the lock's directory
                shutil.rmtree(directory, ignore_errors=True)
            raise
        finally:
            lock.release()

    return await asyncio.to_thread(locked)
