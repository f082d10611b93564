"""A disk that refuses writes (full, read-only, failing): typed answers, no corruption.

The mutation answers ``MemoryGraphUnreachable`` with ``queued: false`` (nothing was kept to be
replayed), the refused write is not visible, the next write succeeds once the disk recovers,
and the data directory reopens cleanly with no partial record.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import logging
import os
import shutil
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from gateway.runtime.state import Runtime, SavedState
from gateway.schema import build_schema
from gateway.settings import Settings
from gateway.stores.file.graph import MemoryGraph
from gateway.stores.file.log import RecordLog
from gateway.stores.file.memory import FileMemoryStore
from gateway.stores.file.store import FileStore
from resolvers.errors import StoreWriteError
from resolvers.records import Backend
from tests import builders as b
from tests.conftest import GraphQLClient

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

EXECUTION = """mutation($input: ObserveExecutionInput!) { observeExecution(input: $input) {
  __typename ... on Observed { written }
  ... on MemoryGraphUnreachable { code message backend queued } } }"""
MEMORY = """mutation { recordMemory(input: {pitfall: {project: "p", context: "c", issue: "i",
  fix: "f"}}) { __typename ... on MemoryGraphUnreachable { code backend queued } } }"""
MEMORY_MESSAGE = MEMORY.replace("code backend queued", "message")
FAULTS = [("write", errno.ENOSPC), ("write", errno.EROFS), ("fsync", errno.EIO)]
FAULT_IDS = ["disk-full", "read-only", "fsync-fails"]


def refuse(monkeypatch: pytest.MonkeyPatch, path: Path, call: str, code: int) -> None:
    """Make ``os.write`` (after writing half the bytes) or ``os.fsync`` fail on ``path``."""
    real_write, real_fsync = os.write, os.fsync

    def is_target(fd: int) -> bool:
        return os.path.samestat(os.fstat(fd), path.stat())

    def write(fd: int, data: bytes | memoryview) -> int:
        if is_target(fd):
            real_write(fd, bytes(data)[: len(data) // 2])
            raise OSError(code, os.strerror(code))
        return real_write(fd, data)

    def fsync(fd: int) -> None:
        if is_target(fd):
            raise OSError(code, os.strerror(code))
        real_fsync(fd)

    monkeypatch.setattr(os, call, write if call == "write" else fsync)


def execution(execution_id: str, at: int) -> dict[str, Any]:
    return {
        "executionId": execution_id,
        "sessionId": "s1",
        "turnId": "t1",
        "tool": "run_python",
        "codeHash": f"h-{execution_id}",
        "status": "succeeded",
        "startedAt": b.at(at),
        "finishedAt": b.at(at + 1),
        "producedArtifacts": [{"artifactId": f"fig-{execution_id}", "version": 1}],
    }


@pytest.fixture
async def gql(tmp_path: Path) -> AsyncIterator[GraphQLClient]:
    store = await FileStore.open(tmp_path / "graph")
    memory = await FileMemoryStore.open(tmp_path / "memory")
    runtime = Runtime(Settings(data_dir=tmp_path), SavedState(), memory, {Backend.FILE: store})
    yield GraphQLClient(build_schema(), runtime)
    await store.aclose()
    await memory.aclose()


def graph_log(tmp_path: Path) -> Path:
    return tmp_path / "graph" / "log.00000000.jsonl"


@pytest.mark.parametrize(("call", "code"), FAULTS, ids=FAULT_IDS)
async def test_a_refused_write_is_unreachable_not_queued_and_leaves_nothing(
    gql: GraphQLClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, code: int
) -> None:
    await b.first_message(gql, "s1")
    log_before = graph_log(tmp_path).read_bytes()
    refuse(monkeypatch, graph_log(tmp_path), call, code)

    answer = (await gql.execute(EXECUTION, input=execution("e1", 10)))["observeExecution"]
    graph = await b.subgraph(gql, "s1")

    assert (answer["__typename"], answer["backend"], answer["queued"]) == (
        "MemoryGraphUnreachable",
        "FILE",
        False,
    )
    assert errno.errorcode[code] in answer["message"]
    assert b.node_ids(graph) == {"ResearchGoal:goal:session:s1"}
    assert graph_log(tmp_path).read_bytes() == log_before


@pytest.mark.parametrize(("call", "code"), FAULTS, ids=FAULT_IDS)
async def test_writes_succeed_again_once_the_disk_recovers_and_the_store_reopens_cleanly(
    gql: GraphQLClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    call: str,
    code: int,
) -> None:
    await b.first_message(gql, "s1")
    refuse(monkeypatch, graph_log(tmp_path), call, code)
    await gql.execute(EXECUTION, input=execution("e1", 10))
    monkeypatch.undo()

    retried = (await gql.execute(EXECUTION, input=execution("e1", 10)))["observeExecution"]
    after = (await gql.execute(EXECUTION, input=execution("e2", 20)))["observeExecution"]
    expected = b.node_ids(await b.subgraph(gql, "s1"))
    await gql.runtime.aclose()
    with caplog.at_level(logging.WARNING):
        reopened = await FileStore.open(tmp_path / "graph")
    stored = set(await reopened.session_node_ids("s1"))
    await reopened.aclose()

    assert [answer["__typename"] for answer in (retried, after)] == ["Observed", "Observed"]
    assert retried["written"] > 0  # the refused write was not kept: this one wrote it
    assert stored == expected
    assert "Artifact:fig-e1#v1" in stored
    assert "torn" not in caplog.text  # no partial record was left behind


async def test_a_refused_memory_write_is_unreachable_and_not_kept(
    gql: GraphQLClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await gql.execute(MEMORY.replace('"p"', '"first"'))
    memory_file = next((tmp_path / "memory").glob("*.jsonl"))
    before = memory_file.read_bytes()
    refuse(monkeypatch, memory_file, "write", errno.ENOSPC)

    answer = (await gql.execute(MEMORY))["recordMemory"]
    monkeypatch.undo()
    again = (await gql.execute(MEMORY))["recordMemory"]

    assert answer == {
        "__typename": "MemoryGraphUnreachable",
        "code": "MEMORY_GRAPH_UNREACHABLE",
        "backend": "FILE",
        "queued": False,
    }
    assert memory_file.read_bytes().startswith(before)
    assert again == {"__typename": "MemoryRecorded"}
    assert len(memory_file.read_bytes().splitlines()) == 2


def forbid_reading_the_log(monkeypatch: pytest.MonkeyPatch) -> None:
    def read_back(*args: object, **kwargs: object) -> None:
        raise AssertionError("the log was read back to undo a failed write")

    monkeypatch.setattr(RecordLog, "replay", read_back)
    monkeypatch.setattr(RecordLog, "replay_located", read_back, raising=False)


@pytest.fixture
def graphs(monkeypatch: pytest.MonkeyPatch) -> weakref.WeakSet[MemoryGraph]:
    """Every ``MemoryGraph`` made from now on that is still alive (frozen by ``gc`` or not)."""
    alive: weakref.WeakSet[MemoryGraph] = weakref.WeakSet()
    real_init = MemoryGraph.__init__

    def tracked(self: MemoryGraph) -> None:
        real_init(self)
        alive.add(self)

    monkeypatch.setattr(MemoryGraph, "__init__", tracked)
    return alive


async def test_concurrent_failed_writes_are_all_undone_without_reading_the_log_back(
    gql: GraphQLClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await b.first_message(gql, "s1")
    await gql.execute(EXECUTION, input=execution("e0", 5))
    before = await b.subgraph(gql, "s1")
    forbid_reading_the_log(monkeypatch)
    refuse(monkeypatch, graph_log(tmp_path), "write", errno.ENOSPC)

    answers = await asyncio.gather(
        *(gql.execute(EXECUTION, input=execution(f"e{i}", 10 * i)) for i in range(1, 6))
    )
    after = await b.subgraph(gql, "s1")

    assert [a["observeExecution"]["__typename"] for a in answers] == ["MemoryGraphUnreachable"] * 5
    assert all("ENOSPC" in a["observeExecution"]["message"] for a in answers)
    assert after == before


async def test_a_hundred_failed_writes_leave_no_copy_of_the_graph(
    graphs: weakref.WeakSet[MemoryGraph], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await FileStore.open(tmp_path / "graph")
    memory = await FileMemoryStore.open(tmp_path / "memory")
    runtime = Runtime(Settings(data_dir=tmp_path), SavedState(), memory, {Backend.FILE: store})
    gql = GraphQLClient(build_schema(), runtime)
    await b.first_message(gql, "s1")
    refuse(monkeypatch, graph_log(tmp_path), "write", errno.ENOSPC)

    for i in range(100):
        await gql.execute(EXECUTION, input=execution(f"e{i}", i))
    gc.collect()
    alive = len(graphs)
    await runtime.aclose()

    assert alive == 1


async def test_writes_made_durable_before_a_failure_stay_and_a_restart_agrees(
    gql: GraphQLClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await b.first_message(gql, "s1")
    await gql.execute(EXECUTION, input=execution("kept", 5))
    refuse(monkeypatch, graph_log(tmp_path), "fsync", errno.EIO)
    await gql.execute(EXECUTION, input=execution("lost", 10))
    monkeypatch.undo()

    await gql.execute(EXECUTION, input=execution("later", 20))
    served = b.node_ids(await b.subgraph(gql, "s1"))
    await gql.runtime.aclose()
    reopened = await FileStore.open(tmp_path / "graph")
    stored = set(await reopened.session_node_ids("s1"))
    await reopened.aclose()

    assert {"Code:kept", "Code:later"} <= served
    assert "Code:lost" not in served
    assert stored == served


async def test_a_memory_record_written_after_its_directory_was_deleted_is_refused(
    gql: GraphQLClient, tmp_path: Path
) -> None:
    await gql.execute(MEMORY.replace('"p"', '"first"'))  # the memory file is open from now on
    shutil.rmtree(tmp_path / "memory")

    answer = (await gql.execute(MEMORY))["recordMemory"]

    assert (answer["__typename"], answer["backend"], answer["queued"]) == (
        "MemoryGraphUnreachable",
        "FILE",
        False,
    )


async def test_an_error_answered_to_a_client_names_no_server_path(
    gql: GraphQLClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(self: FileMemoryStore, payload: bytes) -> None:
        raise StoreWriteError(
            f"could not write {tmp_path}/memory/findings.jsonl nor {Path.home()}", backend="file"
        )

    monkeypatch.setattr(FileMemoryStore, "_write", failing)

    answer = (await gql.execute(MEMORY_MESSAGE))["recordMemory"]

    assert answer["message"] == "could not write <dataDir>/memory/findings.jsonl nor ~"
