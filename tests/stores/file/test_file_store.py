"""FileStore as a whole: restart and crash durability, recovery, the lock, snapshots, rollback,
group commit under concurrent writers, and reads served from indexes.

Writes go through the real observe use cases, so what is checked is what a mutation leaves.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import random
import shutil
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from gateway.stores.file.log import CorruptLogError, StoreLockedError
from gateway.stores.file.snapshot import write_snapshot
from gateway.stores.file.store import FileStore
from resolvers.events import FirstMessageObserved, UploadFileObserved
from resolvers.observe import (
    observe_execution,
    observe_session_first_message,
    observe_upload_file,
)
from resolvers.records import Direction, EdgeRecord, EdgeType, Label, NodeRecord, node_id
from tests.resolvers.builders import execution_event, file_id
from tests.stores.killing import KILL_ROUNDS, half_applied, run_until_killed, writer_script
from tests.timing import once_within

if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_values
    from collections.abc import AsyncIterator, Iterable, Iterator

REPO_ROOT = Path(__file__).resolve().parents[3]
T0 = datetime(2026, 1, 1, tzinfo=UTC)
S1, S2 = "s1", "s2"
GOAL = node_id(Label.RESEARCH_GOAL, "goal:session:s1")
STRAY = node_id(Label.CODE, "stray")

# Snapshots are frequent, so that kills also land while a snapshot is written or the log rotates.
CRASH_WRITER = writer_script(
    "from gateway.stores.file.store import FileStore",
    "FileStore.open(Path(directory), snapshot_every=60)",
)
OPEN_IN_CHILD = (
    "import asyncio, pathlib, sys; from gateway.stores.file.store import FileStore; "
    "asyncio.run(FileStore.open(pathlib.Path(sys.argv[1])))"
)

Contents = tuple[dict[str, NodeRecord], dict[tuple[EdgeType, str, str], EdgeRecord]]


def call_id(execution_id: str) -> str:
    return node_id(Label.TOOL_CALL, f"subtask:{execution_id}")


async def goal(store: FileStore) -> None:
    event = FirstMessageObserved(session_id=S1, goal_id="goal:session:s1", core_objective="TP53")
    await observe_session_first_message(store, event)


async def executions(store: FileStore, *finished: int, session: str = S1) -> None:
    for at in finished:
        await observe_execution(store, execution_event(f"e{at}", at, session=session))


async def contents(store: FileStore, session: str = S1) -> Contents:
    """Every node of ``session`` and every edge among them, through the port."""
    ids = await store.session_node_ids(session)
    nodes = {node.id: node for node in await store.get_nodes(ids) if node is not None}
    edges = {edge.identity: edge for edge in await store.edges_among(ids)}
    return nodes, edges


async def next_path(store: FileStore, start: str) -> list[str]:
    """The ids met following ``next`` from ``start``; fails on a fork or a cycle."""
    path = [start]
    while True:
        edges = await store.expand([path[-1]], EdgeType.NEXT, Direction.OUT)
        assert len(edges) <= 1, f"fork after {path[-1]}: {edges}"
        if not edges:
            return path
        assert edges[0].target not in path, f"cycle through {edges[0].target}"
        path.append(edges[0].target)


async def reopened_contents(directory: Path) -> Contents:
    store = await FileStore.open(directory)
    try:
        return await contents(store)
    finally:
        await store.aclose()


def file_names(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


def log_file(directory: Path, generation: int = 0) -> Path:
    return directory / f"log.{generation:08d}.jsonl"


async def write_then_fail(store: FileStore) -> None:
    """Use every kind of change, then raise inside the transaction."""
    stray = NodeRecord(STRAY, Label.CODE, "stray", S1, T0)
    async with store.transaction(S1) as tx:
        await tx.put_node(stray)
        await tx.put_edge(EdgeRecord(EdgeType.PRODUCES, call_id("e10"), STRAY))
        await tx.park_edge(EdgeRecord(EdgeType.INPUT, "SourceFile:f9", STRAY), "SourceFile:f9")
        await tx.next_seq(S1)
        raise RuntimeError("abort")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[FileStore]:
    opened = await FileStore.open(tmp_path)
    yield opened
    await opened.aclose()


class CountingNodes(dict[str, NodeRecord]):
    """The node table, counting single lookups and whole-table scans."""

    def __init__(self, nodes: dict[str, NodeRecord]) -> None:
        super().__init__(nodes)
        self.lookups = 0
        self.scans = 0

    def __getitem__(self, key: str) -> NodeRecord:
        self.lookups += 1
        return super().__getitem__(key)

    def __iter__(self) -> Iterator[str]:
        self.scans += 1
        return super().__iter__()

    def values(self) -> dict_values[str, NodeRecord]:
        self.scans += 1
        return super().values()

    def items(self) -> dict_items[str, NodeRecord]:
        self.scans += 1
        return super().items()


# --- restart and crash durability -----------------------------------------------------------


async def test_everything_written_survives_a_restart(tmp_path: Path) -> None:
    store = await FileStore.open(tmp_path)
    await goal(store)
    await executions(store, 10)
    await observe_execution(store, execution_event("e20", 20, reads_files=["f1"]))  # parks an edge
    before = await contents(store)
    await store.aclose()

    store = await FileStore.open(tmp_path)
    after = await contents(store)
    await executions(store, 30)
    await observe_upload_file(
        store, UploadFileObserved(session_id=S1, file_id=file_id("f1"), name="f1", path="f1")
    )
    nodes, edges = await contents(store)
    await store.aclose()

    assert after == before
    assert nodes[call_id("e30")].seq == 3  # the seq counter was restored, not restarted
    source, code = node_id(Label.SOURCE_FILE, file_id("f1")), node_id(Label.CODE, "e20")
    assert (EdgeType.INPUT, source, code) in edges  # the parked edge was restored


async def test_acknowledged_writes_are_on_disk_without_a_close(
    store: FileStore, tmp_path: Path
) -> None:
    await executions(store, 10, 20, 30)
    expected = await contents(store)

    shutil.copytree(tmp_path, tmp_path.parent / "copy")
    copy = await reopened_contents(tmp_path.parent / "copy")

    assert copy == expected


@pytest.mark.slow
async def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    chooser = random.Random(os.environ.get("GATEWAY_KILL_SEED", "issue-5"))
    acknowledged: set[int] = set()

    for round_ in range(KILL_ROUNDS):
        kill_after = chooser.randint(1, 40)
        acknowledged |= await asyncio.to_thread(
            run_until_killed, CRASH_WRITER, tmp_path, 1000 * round_, kill_after
        )
        store = await FileStore.open(tmp_path)  # opens cleanly: no CorruptLogError, lock free
        nodes, edges = await contents(store)
        steps = await store.chain_members(S1, None)
        path = await next_path(store, GOAL)
        await store.aclose()

        context = f"round {round_}, killed after {kill_after} ACKs"
        stored = {int(step.key.removeprefix("subtask:e")) for step in steps}
        assert acknowledged <= stored, context
        assert half_applied(nodes, set(edges)) == [], context
        assert path == [GOAL, *(step.id for step in steps)], context
        assert len({step.seq for step in steps}) == len(steps), context


# --- recovery on open -----------------------------------------------------------------------


async def test_torn_tail_is_truncated_on_open_and_the_store_works(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = await FileStore.open(tmp_path)
    await executions(store, 10, 20)
    before = await contents(store)
    await store.aclose()
    with log_file(tmp_path).open("ab") as file:
        file.write(b'0badc0de {"at":"2026-01-01T00:00:00+00:00","ops":[{"op":"n"')

    with caplog.at_level(logging.WARNING):
        store = await FileStore.open(tmp_path)
    after = await contents(store)
    await executions(store, 30)
    await store.aclose()

    assert after == before
    assert "truncating the torn or corrupt tail" in caplog.text
    assert b"0badc0de" not in log_file(tmp_path).read_bytes()
    nodes, _ = await reopened_contents(tmp_path)
    assert call_id("e30") in nodes


async def test_a_corrupt_record_mid_log_refuses_to_open(tmp_path: Path) -> None:
    store = await FileStore.open(tmp_path)
    await executions(store, 10, 20, 30)
    await store.aclose()
    path = log_file(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"e20"', b'"e99"')
    path.write_bytes(b"".join(lines))

    with pytest.raises(CorruptLogError) as first:
        await FileStore.open(tmp_path)
    with pytest.raises(CorruptLogError) as again:  # the failed open released the lock
        await FileStore.open(tmp_path)

    assert f"{path} at byte offset {len(lines[0])}" in str(first.value)
    assert "refusing to skip it" in str(first.value)
    assert str(again.value) == str(first.value)


# --- single writer --------------------------------------------------------------------------


async def test_a_second_store_in_the_same_process_is_refused(
    store: FileStore, tmp_path: Path
) -> None:
    with pytest.raises(StoreLockedError) as excinfo:
        await FileStore.open(tmp_path)

    assert f"data directory {tmp_path} is locked by this process" in str(excinfo.value)
    await executions(store, 10)  # the holder is unaffected


async def test_a_second_process_is_refused(store: FileStore, tmp_path: Path) -> None:
    command = [sys.executable, "-c", OPEN_IN_CHILD, str(tmp_path)]

    result = await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, cwd=REPO_ROOT, check=False
    )

    assert result.returncode != 0
    assert "StoreLockedError" in result.stderr
    assert f"{tmp_path} is locked by another process (pid {os.getpid()})" in result.stderr


# --- snapshots ------------------------------------------------------------------------------


async def test_snapshot_drops_old_logs_and_restart_replays_only_the_newer_log(
    tmp_path: Path,
) -> None:
    store = await FileStore.open(tmp_path)
    await executions(store, 10, 20)

    await store.snapshot()
    await executions(store, 30)
    before = await contents(store)
    await store.aclose()

    assert file_names(tmp_path) == ["LOCK", "log.00000001.jsonl", "snapshot.00000000.jsonl"]
    assert len(log_file(tmp_path, 1).read_bytes().splitlines()) == 1  # e30's transaction only
    assert await reopened_contents(tmp_path) == before


async def test_snapshot_is_taken_automatically_after_enough_ops(tmp_path: Path) -> None:
    store = await FileStore.open(tmp_path, snapshot_every=1)

    await executions(store, 10)
    await store.aclose()

    assert "snapshot.00000000.jsonl" in file_names(tmp_path)
    assert "log.00000000.jsonl" not in file_names(tmp_path)


async def test_automatic_snapshots_come_after_half_the_last_ones_size_in_ops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[int] = []

    def counting(directory: Path, generation: int, payloads: Iterable[bytes]) -> Path:
        records = list(payloads)
        written.append(len(records))
        return write_snapshot(directory, generation, records)

    monkeypatch.setattr("gateway.stores.file.store.write_snapshot", counting)
    store = await FileStore.open(tmp_path, snapshot_every=1)

    await executions(store, *range(10, 810, 10))  # 80 transactions of ~9 ops
    before = await contents(store)
    await store.aclose()

    # Each snapshot waits for half its predecessor's size in new ops, so the sizes grow
    # geometrically: a handful of rewrites instead of one per transaction.
    assert 3 <= len(written) <= 16
    assert all(later >= 1.4 * earlier for earlier, later in itertools.pairwise(written[1:]))
    assert await reopened_contents(tmp_path) == before


async def test_a_write_does_not_wait_for_the_snapshot_it_triggers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()

    def blocked(directory: Path, generation: int, payloads: Iterable[bytes]) -> Path:
        release.wait(timeout=30)
        return write_snapshot(directory, generation, payloads)

    monkeypatch.setattr("gateway.stores.file.store.write_snapshot", blocked)
    store = await FileStore.open(tmp_path, snapshot_every=1)

    async def write_on() -> None:
        await executions(store, 10)  # crosses the threshold: the snapshot starts
        await executions(store, 20)  # and writes go on while it is being written

    try:
        await once_within(10, write_on())
        during = file_names(tmp_path)
        before = await contents(store)
    finally:
        release.set()
    await store.aclose()

    assert not any(name.startswith("snapshot.") for name in during)
    assert "snapshot.00000000.jsonl" in file_names(tmp_path)
    assert await reopened_contents(tmp_path) == before


async def test_a_snapshot_asked_for_while_one_is_written_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    started: list[int] = []

    def first_blocked(directory: Path, generation: int, payloads: Iterable[bytes]) -> Path:
        started.append(generation)
        if len(started) == 1:
            release.wait(timeout=30)
        return write_snapshot(directory, generation, payloads)

    monkeypatch.setattr("gateway.stores.file.store.write_snapshot", first_blocked)
    store = await FileStore.open(tmp_path, snapshot_every=1)
    try:
        await executions(store, 10)  # the automatic snapshot starts, and blocks
        manual = asyncio.create_task(store.snapshot())
        await asyncio.sleep(0.2)
        while_blocked = (list(started), manual.done())
    finally:
        release.set()
    await manual
    before = await contents(store)
    await store.aclose()

    assert while_blocked == ([0], False)  # the manual one has not started writing
    assert len(started) == 2
    assert started == sorted(started)  # one after the other, oldest first
    assert await reopened_contents(tmp_path) == before


# --- transactions ---------------------------------------------------------------------------


async def test_an_exception_in_a_transaction_leaves_no_trace(
    store: FileStore, tmp_path: Path
) -> None:
    await executions(store, 10)
    before = await contents(store)
    log_before = log_file(tmp_path).read_bytes()

    with pytest.raises(RuntimeError, match="abort"):
        await write_then_fail(store)
    after = await contents(store)
    log_after = log_file(tmp_path).read_bytes()
    await executions(store, 20)
    nodes, _ = await contents(store)

    assert after == before
    assert STRAY not in after[0]
    assert log_after == log_before
    assert nodes[call_id("e20")].seq == 2  # the counter was rolled back too


async def test_a_change_that_cannot_be_logged_is_rolled_back(
    store: FileStore, tmp_path: Path
) -> None:
    await executions(store, 10)
    before = await contents(store)
    log_before = log_file(tmp_path).read_bytes()
    unloggable = NodeRecord(STRAY, Label.CODE, "stray", S1, T0).with_props(text="\ud800")

    with pytest.raises(UnicodeEncodeError):
        async with store.transaction(S1) as tx:
            await tx.put_node(unloggable)
    after = await contents(store)
    await executions(store, 20)

    assert after == before  # not left in memory, where reads would see an unlogged write
    assert log_file(tmp_path).read_bytes().startswith(log_before)


async def test_concurrent_writers_share_fsyncs_and_keep_one_chain(store: FileStore) -> None:
    await goal(store)
    finished = [(i * 7) % 50 + 1 for i in range(50)]  # arrival order differs from time order
    fsyncs_before = store._log.fsync_count

    await asyncio.gather(*(executions(store, at) for at in finished))

    fsyncs = store._log.fsync_count - fsyncs_before
    nodes, edges = await contents(store)
    calls = sorted((n for n in nodes.values() if n.label is Label.TOOL_CALL), key=lambda n: n.seq)
    assert [call.seq for call in calls] == list(range(1, 51))
    assert await next_path(store, GOAL) == [GOAL, *(call_id(f"e{at}") for at in range(1, 51))]
    assert sum(1 for edge_type, _, _ in edges if edge_type is EdgeType.NEXT) == 50
    assert 0 < fsyncs < 50


# --- reads ----------------------------------------------------------------------------------


async def test_listing_a_session_costs_its_result_not_the_store(store: FileStore) -> None:
    await executions(store, 10, 20, 30, 40, session=S1)
    await executions(store, 50, session=S2)
    counting = CountingNodes(store._graph.nodes)
    store._graph.nodes = counting

    page = await store.list_nodes(session_id=S2, limit=10)

    assert {node.session_id for node in page.items} == {S2}
    assert page.total == len(page.items) == 2
    assert (counting.scans, counting.lookups) == (0, 2)
