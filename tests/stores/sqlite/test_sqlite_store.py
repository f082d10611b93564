"""SqliteStore as a whole: restart and crash durability, torn WAL tails, the lock, rollback,
group commit and its failure, a really full disk.

Writes go through the real observe use cases, so what is checked is what a mutation leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from gateway.stores.file.lock import StoreLockedError
from gateway.stores.sqlite import store as store_module
from gateway.stores.sqlite.migrate import DATABASE_NAME
from gateway.stores.sqlite.store import SqliteStore
from resolvers.errors import StoreUnavailableError, StoreWriteError
from resolvers.events import ExecutionObserved, FirstMessageObserved
from resolvers.observe import observe_execution, observe_session_first_message
from resolvers.records import Direction, EdgeRecord, EdgeType, Label, NodeRecord, node_id
from tests.stores.killing import KILL_ROUNDS, half_applied, run_until_killed, writer_script
from tests.timing import once_within

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

REPO_ROOT = Path(__file__).resolve().parents[3]
T0 = datetime(2026, 1, 1, tzinfo=UTC)
S1 = "s1"
GOAL = node_id(Label.RESEARCH_GOAL, "goal:session:s1")

CRASH_WRITER = writer_script(
    "from gateway.stores.sqlite.store import SqliteStore", "SqliteStore.open(Path(directory))"
)
OPEN_IN_CHILD = (
    "import asyncio, pathlib, sys; from gateway.stores.sqlite.store import SqliteStore; "
    "asyncio.run(SqliteStore.open(pathlib.Path(sys.argv[1])))"
)

Contents = tuple[dict[str, NodeRecord], dict[tuple[EdgeType, str, str], EdgeRecord]]


def execution_event(execution_id: str, finished: int) -> ExecutionObserved:
    return ExecutionObserved(
        session_id=S1,
        execution_id=execution_id,
        turn_id="turn-1",
        tool="run_python",
        code_hash=f"hash-{execution_id}",
        status="succeeded",
        started_at=T0 + timedelta(seconds=finished - 1),
        finished_at=T0 + timedelta(seconds=finished),
    )


def call_id(execution_id: str) -> str:
    return node_id(Label.TOOL_CALL, f"subtask:{execution_id}")


async def goal(store: SqliteStore) -> None:
    event = FirstMessageObserved(session_id=S1, goal_id="goal:session:s1", core_objective="TP53")
    await observe_session_first_message(store, event)


async def executions(store: SqliteStore, *finished: int) -> None:
    for at in finished:
        await observe_execution(store, execution_event(f"e{at}", at))


async def contents(store: SqliteStore) -> Contents:
    ids = await store.session_node_ids(S1)
    nodes = {node.id: node for node in await store.get_nodes(ids) if node is not None}
    edges = {edge.identity: edge for edge in await store.edges_among(ids)}
    return nodes, edges


async def reopened_contents(directory: Path) -> Contents:
    store = await SqliteStore.open(directory)
    try:
        return await contents(store)
    finally:
        await store.aclose()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = await SqliteStore.open(tmp_path)
    yield opened
    await opened.aclose()


# --- restart and crash durability -----------------------------------------------------------


async def test_everything_written_survives_a_restart(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path)
    await goal(store)
    await executions(store, 10, 20)
    before = await contents(store)
    await store.aclose()

    store = await SqliteStore.open(tmp_path)
    after = await contents(store)
    await executions(store, 30)
    nodes, _ = await contents(store)
    await store.aclose()

    assert after == before
    assert len(before[0]) >= 5
    assert nodes[call_id("e30")].seq == 3  # the seq counter was kept, not restarted


async def test_acknowledged_writes_are_on_disk_without_a_close(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "graph")
    await executions(store, 10, 20, 30)
    expected = await contents(store)

    shutil.copytree(tmp_path / "graph", tmp_path / "copy")
    await store.aclose()
    (tmp_path / "copy" / "LOCK").unlink()
    found = await reopened_contents(tmp_path / "copy")

    assert found == expected
    assert call_id("e30") in found[0]


@pytest.mark.slow
async def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    chooser = random.Random(os.environ.get("GATEWAY_KILL_SEED", "issue-18"))
    acknowledged: set[int] = set()

    for round_ in range(KILL_ROUNDS):
        kill_after = chooser.randint(1, 40)
        acknowledged |= await asyncio.to_thread(
            run_until_killed, CRASH_WRITER, tmp_path, 1000 * round_, kill_after
        )
        store = await SqliteStore.open(tmp_path)  # opens cleanly, the lock is free
        nodes, edges = await contents(store)
        steps = await store.chain_members(S1, None)
        await store.aclose()

        context = f"round {round_}, killed after {kill_after} ACKs"
        stored = {int(step.key.removeprefix("subtask:e")) for step in steps}
        assert acknowledged <= stored, context
        assert half_applied(nodes, set(edges)) == [], context
        assert len({step.seq for step in steps}) == len(steps), context


async def test_a_torn_wal_tail_loses_only_the_unfinished_commit(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "graph")
    await executions(store, 10)
    kept = await contents(store)
    copy = tmp_path / "torn"
    await executions(store, 20)
    shutil.copytree(tmp_path / "graph", copy)  # the WAL holds both commits, not checkpointed
    await store.aclose()
    (copy / "LOCK").unlink()
    wal = copy / f"{DATABASE_NAME}-wal"
    assert wal.stat().st_size > 0

    with wal.open("r+b") as file:  # the last commit's frames, half written
        file.truncate(wal.stat().st_size - 100)
    found = await reopened_contents(copy)

    assert found == kept


# --- the lock -------------------------------------------------------------------------------


async def test_a_second_store_on_the_directory_is_refused(
    store: SqliteStore, tmp_path: Path
) -> None:
    with pytest.raises(StoreLockedError, match="locked"):
        await SqliteStore.open(tmp_path)


async def test_another_process_is_refused_while_the_store_is_open(
    store: SqliteStore, tmp_path: Path
) -> None:
    child = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", OPEN_IN_CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )

    assert child.returncode != 0
    assert "StoreLockedError" in child.stderr


# --- rollback and group commit --------------------------------------------------------------


async def write_then_fail(store: SqliteStore, stray: NodeRecord) -> None:
    """Use every kind of change, then raise inside the transaction."""
    async with store.transaction(S1) as tx:
        await tx.put_node(stray)
        await tx.put_edge(EdgeRecord(EdgeType.PRODUCES, call_id("e10"), stray.id))
        await tx.park_edge(EdgeRecord(EdgeType.INPUT, "SourceFile:f", stray.id), "SourceFile:f")
        await tx.next_seq(S1)
        raise RuntimeError("abort")


async def test_a_failed_transaction_keeps_nothing(store: SqliteStore) -> None:
    await executions(store, 10)
    before = await contents(store)
    stray = NodeRecord("Code:stray", Label.CODE, "stray", S1, T0, {"content": "stray words"})

    with pytest.raises(RuntimeError, match="abort"):
        await write_then_fail(store, stray)
    await executions(store, 20)

    nodes, _ = await contents(store)
    assert {k: v for k, v in nodes.items() if k in before[0]} == before[0]
    assert stray.id not in nodes
    assert await store.search(["stray"]) == []
    assert nodes[call_id("e20")].seq == 2  # the aborted next_seq was rolled back too
    async with store.transaction(S1) as tx:
        assert await tx.take_parked("SourceFile:f") == []


WAITING = EdgeRecord(EdgeType.INPUT, "SourceFile:f", call_id("e10"))


async def park_waiting(store: SqliteStore) -> None:
    async with store.transaction(S1) as tx:
        await tx.park_edge(WAITING, WAITING.source)


async def create_source(store: SqliteStore) -> None:
    """Create the edge's missing endpoint and connect what waited for it (as ``Writer``)."""
    async with store.transaction(S1) as tx:
        await tx.put_node(NodeRecord(WAITING.source, Label.SOURCE_FILE, "f", S1, T0))
        for edge in await tx.take_parked(WAITING.source):
            await tx.put_edge(edge)


async def take_then_fail(store: SqliteStore) -> None:
    async with store.transaction(S1) as tx:
        assert await tx.take_parked(WAITING.source) == [WAITING]
        raise RuntimeError("abort")


async def test_edges_taken_by_a_failed_transaction_wait_again(store: SqliteStore) -> None:
    await executions(store, 10)
    await park_waiting(store)

    with pytest.raises(RuntimeError, match="abort"):
        await take_then_fail(store)
    await create_source(store)

    assert WAITING.identity in (await contents(store))[1]


async def test_edges_parked_before_a_restart_still_wait(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path)
    await executions(store, 10)
    await park_waiting(store)
    await store.aclose()

    store = await SqliteStore.open(tmp_path)
    try:
        await create_source(store)
        edges = (await contents(store))[1]
    finally:
        await store.aclose()

    assert WAITING.identity in edges


async def test_a_transaction_reads_what_it_wrote(store: SqliteStore) -> None:
    await goal(store)
    code = NodeRecord("Code:c", Label.CODE, "c", S1, T0, {"content": "first words"})

    async with store.transaction(S1) as tx:
        assert await tx.get_nodes([code.id, GOAL]) == [None, *await store.get_nodes([GOAL])]
        await tx.put_node(code)
        changed = code.with_props(content="second words")
        await tx.put_node(changed)
        assert await tx.get_nodes([code.id]) == [changed]
        assert await tx.put_edge(EdgeRecord(EdgeType.PRODUCES, GOAL, code.id))
        assert await tx.delete_node(code.id)
        assert await tx.get_nodes([code.id]) == [None]
        assert not await tx.delete_node(code.id)
        with pytest.raises(ValueError, match="endpoint missing"):
            await tx.put_edge(EdgeRecord(EdgeType.PRODUCES, GOAL, code.id))
        await tx.put_node(changed)

    assert await store.get_nodes([code.id]) == [changed]
    assert await store.expand([GOAL], EdgeType.PRODUCES, Direction.OUT) == []
    assert [hit.node.id for hit in await store.search(["second"])] == [code.id]
    assert await store.search(["first"]) == []


async def test_concurrent_writers_share_commits(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    commits = 0
    real = store_module._commit_sql

    def counted(db: sqlite3.Connection, tail_version: int | None) -> None:
        nonlocal commits
        commits += 1
        real(db, tail_version)

    monkeypatch.setattr(store_module, "_commit_sql", counted)
    await goal(store)
    commits = 0

    await asyncio.gather(*(executions(store, at) for at in range(10, 42)))

    steps = await store.chain_members(S1, None)
    assert len(steps) == 32
    assert 1 <= commits < 32


async def test_a_waiter_that_gives_up_does_not_strand_the_open_group(
    store: SqliteStore,
) -> None:
    await goal(store)
    go = asyncio.Event()

    async def first() -> None:
        async with store.transaction(S1) as tx:
            await go.wait()
            await tx.put_node(NodeRecord("Code:first", Label.CODE, "first", S1, T0))

    async def second() -> None:
        async with store.transaction(S1) as tx:
            await tx.put_node(NodeRecord("Code:second", Label.CODE, "second", S1, T0))

    writing = asyncio.ensure_future(first())
    await asyncio.sleep(0)
    waiting = asyncio.ensure_future(second())
    await asyncio.sleep(0)
    go.set()
    await asyncio.sleep(0)  # the first hands the open group over to the second…
    waiting.cancel()  # …which gives up before it runs

    await once_within(5, writing)
    stored = await store.get_nodes(["Code:first", "Code:second"])

    assert waiting.cancelled()
    assert [node is not None for node in stored] == [True, False]


async def test_a_refused_commit_fails_every_member_and_keeps_nothing(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await goal(store)
    before = await contents(store)

    def full(db: sqlite3.Connection, tail_version: int | None) -> None:
        error = sqlite3.OperationalError("database or disk is full")
        error.sqlite_errorcode = sqlite3.SQLITE_FULL
        raise error

    monkeypatch.setattr(store_module, "_commit_sql", full)
    results = await asyncio.gather(
        *(executions(store, at) for at in (10, 20, 30)), return_exceptions=True
    )
    with pytest.raises(StoreUnavailableError, match="disk is full"):
        await store.ping()
    monkeypatch.undo()
    after = await contents(store)
    await executions(store, 40)
    await store.ping()

    assert all(isinstance(result, StoreWriteError) for result in results), results
    assert after == before
    assert call_id("e40") in (await contents(store))[0]


# --- a really full disk ---------------------------------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def big_node(number: int) -> NodeRecord:
    return NodeRecord(f"Code:c{number}", Label.CODE, f"c{number}", S1, T0, {"code": "x" * 20_000})


async def put(store: SqliteStore, node: NodeRecord) -> None:
    async with store.transaction(S1) as tx:
        await tx.put_node(node)


async def test_a_full_disk_refuses_writes_keeps_what_was_acknowledged(tiny_disk: Path) -> None:
    store = await SqliteStore.open(tiny_disk / "graph")
    kept: list[Any] = []
    with contextlib.suppress(StoreWriteError):
        for number in range(1000):
            await put(store, big_node(number))
            kept.append(f"Code:c{number}")

    with pytest.raises(StoreWriteError, match="disk is full"):
        await put(store, big_node(5000))
    found = await store.get_nodes(kept)
    await store.aclose()
    reopened = await SqliteStore.open(tiny_disk / "graph")
    after = await reopened.get_nodes([*kept, "Code:c5000"])
    await reopened.aclose()

    assert 0 < len(kept) < 1000
    assert None not in found
    assert after == [*found, None]


# --- the write-ahead log ------------------------------------------------------------------


async def test_the_wal_is_copied_into_the_database_and_starts_over_during_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 320 nodes of ~20 KB: ~2,100 pages of the WAL if it were never copied and started over.
    monkeypatch.setattr(store_module, "WAL_CHECKPOINT_PAGES", 64)
    store = await SqliteStore.open(tmp_path)
    wal = tmp_path / f"{DATABASE_NAME}-wal"
    largest = 0

    async def writer(first: int) -> None:
        nonlocal largest
        for number in range(first, first + 40):
            await put(store, big_node(number))
            largest = max(largest, wal.stat().st_size)

    try:
        await asyncio.gather(*(writer(40 * n) for n in range(8)))
        found = await store.get_nodes([f"Code:c{n}" for n in range(320)])
    finally:
        await store.aclose()

    assert all(node is not None for node in found)
    # Never copied, it grows to ~8.8 MB; copied, to the bound and what is written while a
    # checkpoint runs (on a busy machine that can be several times the bound).
    assert largest < 16 * 64 * 4096
    assert (tmp_path / DATABASE_NAME).stat().st_size > 320 * 20_000  # copied into the database
