"""A database file SQLite cannot read, or a lock another process holds, is a state of the store
with a reason, never an unexpected error: the start stops with one line naming the file and
what to do; a damaged page met by a read makes that read ``StoreUnavailableError`` (the API's
``MemoryGraphUnreachable``), the health check degraded and writes refused until a restart; a
write lock held by another process (a SQLite shell, a backup tool) is waited for with the event
loop serving, then refused as ``StoreWriteError``, and writes go on once it is let go."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from gateway.cli.main import main
from gateway.stores.embedded import capture_embedded, import_graph
from gateway.stores.sqlite import migrate
from gateway.stores.sqlite import store as store_module
from gateway.stores.sqlite.migrate import DATABASE_NAME, DatabaseFileError
from gateway.stores.sqlite.store import SqliteStore
from resolvers.errors import StoreUnavailableError, StoreWriteError
from tests.stores.sqlite.test_sqlite_store import GOAL, call_id, executions, goal

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

PAGE = 4096


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda path: path.write_bytes(b"not a database at all " * 400), id="garbage"),
        pytest.param(
            lambda path: path.write_bytes(path.read_bytes()[: 3 * PAGE // 2]), id="truncated"
        ),
        # SQLite reads an empty file as an empty database: the store would start as an empty
        # graph and take new writes in it.
        pytest.param(lambda path: path.write_bytes(b""), id="emptied"),
    ],
)
async def test_a_file_sqlite_cannot_read_stops_the_start_naming_it(
    tmp_path: Path, damage: object
) -> None:
    store = await SqliteStore.open(tmp_path)
    await goal(store)
    await executions(store, 1, 2)
    await store.aclose()
    damage(tmp_path / DATABASE_NAME)  # type: ignore[operator]

    with pytest.raises(DatabaseFileError) as raised:
        await SqliteStore.open(tmp_path)

    message = str(raised.value)
    assert str(tmp_path / DATABASE_NAME) in message
    assert "restore it from a backup" in message
    again = await SqliteStore.open(tmp_path / "elsewhere")  # the lock was let go of
    await again.aclose()


def _damage_the_nodes_table(path: Path) -> None:
    """Overwrite the first leaf of the ``nodes`` table (the oldest rows) with garbage."""
    with sqlite3.connect(path) as db:
        pages = [
            page
            for (page,) in db.execute(
                "SELECT pageno FROM dbstat WHERE name = 'nodes' AND pagetype = 'leaf'"
            )
        ]
    assert len(pages) > 2, "the table has leaves"
    with path.open("r+b") as file:
        file.seek((min(pages) - 1) * PAGE)
        file.write(b"\xa5" * PAGE)


async def test_a_new_directory_gets_its_database_whole_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: object) -> None:
        (tmp_path / f"{DATABASE_NAME}.migrating").write_bytes(b"")  # begun, then a fault
        raise OSError("no space left on device")

    monkeypatch.setattr(migrate, "_write_database", fail)
    with pytest.raises(OSError, match="no space"):
        await SqliteStore.open(tmp_path)
    assert not [name for name in os.listdir(tmp_path) if name.startswith(DATABASE_NAME)]

    monkeypatch.undo()
    store = await SqliteStore.open(tmp_path)  # a kill right after the start, before a write
    await store.aclose()
    assert (tmp_path / DATABASE_NAME).stat().st_size > 0  # never an empty file of its own
    store = await SqliteStore.open(tmp_path)
    await goal(store)
    await store.aclose()


async def test_a_database_left_whole_under_its_build_name_by_a_kill_is_built_again(
    tmp_path: Path,
) -> None:
    # Killed between the build and its rename: the next start builds anew over the leftover.
    elsewhere = tmp_path / "elsewhere"
    store = await SqliteStore.open(elsewhere)
    await store.aclose()
    data = tmp_path / "data"
    data.mkdir()
    (data / f"{DATABASE_NAME}.migrating").write_bytes((elsewhere / DATABASE_NAME).read_bytes())

    store = await SqliteStore.open(data)
    await goal(store)
    await store.aclose()

    assert not [name for name in os.listdir(data) if name.endswith(".migrating")]


@pytest.mark.parametrize(
    ("make", "named", "says"),
    [
        pytest.param(
            lambda d: (d / f"{DATABASE_NAME}-wal").write_bytes(b"\x37\x7f\x06\x82" * 64),
            f"{DATABASE_NAME}-wal",
            "the write-ahead log of a database that is not there",
            id="a log without its database",
        ),
        pytest.param(
            lambda d: (d / DATABASE_NAME).symlink_to(d / "unmounted" / DATABASE_NAME),
            DATABASE_NAME,
            "which does not exist",
            id="a link to nothing",
        ),
    ],
)
async def test_what_is_left_of_a_database_that_is_gone_stops_the_start(
    tmp_path: Path, make: object, named: str, says: str
) -> None:
    # Not a new, empty graph: SQLite would apply the log's pages to it; the link's target is
    # where the graph is meant to be.
    make(tmp_path)  # type: ignore[operator]

    with pytest.raises(DatabaseFileError) as raised:
        await SqliteStore.open(tmp_path)

    message = str(raised.value)
    assert str(tmp_path / named) in message
    assert says in message
    assert "-wal and -shm files aside" in message
    assert not (tmp_path / DATABASE_NAME).exists()


async def test_a_damaged_page_is_unreachable_degraded_and_refuses_writes(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path)
    await goal(store)
    await executions(store, *range(1, 40))
    await store.merge_search_tail()  # an open reads the nodes not merged yet
    await store.aclose()
    _damage_the_nodes_table(tmp_path / DATABASE_NAME)
    store = await SqliteStore.open(tmp_path)
    try:
        await store.ping()  # nothing read yet: nothing known

        with pytest.raises(StoreUnavailableError, match="is damaged"):
            await store.list_nodes(session_id="s1", limit=100)
        with pytest.raises(StoreUnavailableError, match="restore it from a backup"):
            await store.ping()
        with pytest.raises(StoreWriteError, match="is damaged"):
            await executions(store, 100)
    finally:
        await store.aclose()


async def test_a_lock_another_process_holds_is_waited_for_then_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "BUSY_SECONDS", 0.4)
    store = await SqliteStore.open(tmp_path)
    await goal(store)
    other = sqlite3.connect(tmp_path / DATABASE_NAME, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # what a SQLite shell's write would hold
        loop = asyncio.get_running_loop()
        started = loop.time()
        write = asyncio.create_task(executions(store, 1))
        await asyncio.sleep(0.1)
        (found,) = await store.get_nodes([GOAL])  # the event loop serves meanwhile
        served = loop.time() - started

        with pytest.raises(StoreWriteError, match="another process holds"):
            await write
        with pytest.raises(StoreUnavailableError, match="another process holds"):
            await store.ping()
        refused_at = loop.time()
        with pytest.raises(StoreWriteError, match="another process holds"):
            await executions(store, 3)  # the lock still held: refused at once, not waited for
        refused_again = loop.time() - refused_at
        other.execute("ROLLBACK")
        await executions(store, 2)
        await store.ping()

        assert found is not None
        assert served < 0.3
        assert refused_again < 0.2
        assert await store.get_nodes([call_id("e1"), call_id("e2")]) == [
            None,
            *(await store.get_nodes([call_id("e2")])),
        ]
    finally:
        other.close()
        await store.aclose()


def test_an_export_of_a_file_sqlite_cannot_read_says_so_and_why_nothing_was_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "graph" / DATABASE_NAME
    database.parent.mkdir()
    database.write_bytes(b"not a database at all " * 400)
    monkeypatch.setenv("SCIENCE_AGENT_MEMORY_GRAPH_DATA_DIR", str(tmp_path))

    code = main(["export-graph", "--output", str(tmp_path / "out.jsonl")])

    found, rescue = capsys.readouterr().err.splitlines()
    assert code == 1
    assert found.startswith(f"science-memory: {database}: SQLite cannot read it")
    assert rescue == f"science-memory: nothing of {database} can be read as a graph"


def _garbage_database(data: Path) -> tuple[Path, str]:
    database = data / "graph" / DATABASE_NAME
    database.parent.mkdir()
    database.write_bytes(b"not a database at all " * 400)
    return database, "SQLite cannot read it"


def _file_for_directory(data: Path) -> tuple[Path, str]:
    (data / "graph").write_text("not a directory")
    return data / "graph", "not a directory"


@pytest.mark.parametrize("damage", [_garbage_database, _file_for_directory])
def test_a_server_refused_at_start_says_why_in_one_line_without_a_traceback(
    tmp_path: Path, damage: Callable[[Path], tuple[Path, str]]
) -> None:
    named, why = damage(tmp_path)
    environment = {**os.environ, "SCIENCE_AGENT_MEMORY_GRAPH_DATA_DIR": str(tmp_path)}
    for name in ("INTERNAL_TOKEN", "BACKEND", "FILE_ENGINE"):
        environment.pop(f"SCIENCE_AGENT_MEMORY_GRAPH_{name}", None)

    done = subprocess.run(
        [sys.executable, "-m", "gateway", "serve", "--host", "127.0.0.1", "--port", "0"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    said = done.stdout + done.stderr
    (refusal,) = [line for line in said.splitlines() if "cannot start" in line]
    assert done.returncode != 0
    assert f"{named}: {why}" in refusal
    assert "Traceback" not in said, said


async def test_an_export_of_a_damaged_database_copies_out_what_can_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = tmp_path / "graph"
    store = await SqliteStore.open(graph)
    await goal(store)
    await executions(store, *range(1, 40))
    await store.merge_search_tail()
    whole = await capture_embedded(store)
    await store.aclose()
    _damage_the_nodes_table(graph / DATABASE_NAME)
    monkeypatch.setenv("SCIENCE_AGENT_MEMORY_GRAPH_DATA_DIR", str(tmp_path))
    output = tmp_path / "rescued.jsonl"

    code = await asyncio.to_thread(main, ["export-graph", "--output", str(output)])
    said = capsys.readouterr().err
    imported = await import_graph(tmp_path / "again", output)  # every line an import takes
    rescued = await SqliteStore.open(tmp_path / "again")
    found = await capture_embedded(rescued)
    await rescued.aclose()

    assert code == 0
    assert "copying out what can still be read" in said
    assert "left out (damaged): nodes rows 1-" in said
    assert imported == found.record_count()
    assert 0 < len(found.nodes) < len(whole.nodes)
    assert {node.id for node in found.nodes} < {node.id for node in whole.nodes}
    assert len(found.edges) < len(whole.edges)  # those of the nodes lost went with them
    ids = {node.id for node in found.nodes}
    assert all(edge.source in ids and edge.target in ids for edge in found.edges)
