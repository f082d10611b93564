"""Neo4j goes away mid-ingest and comes back: nothing acknowledged or queued is lost.

These tests stop and restart the real test server (``tools/neo4j-test-server/run.sh``), keeping
its data and port, so they run against the server ``tools/test.sh`` started.
"""

from __future__ import annotations

import asyncio
import subprocess
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from gateway.runtime.state import Runtime
from gateway.settings import Settings
from gateway.stores.file.store import FileStore
from gateway.stores.neo4j import Neo4jStore
from resolvers.errors import StoreUnavailableError
from resolvers.events import (
    Event,
    ExecutionObserved,
    FirstMessageObserved,
    ProducedArtifact,
    SubagentObserved,
)
from resolvers.observe import APPLY
from resolvers.records import Backend
from resolvers.subgraph import session_subgraph
from tests.timing import once_within

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from resolvers.store import GraphStore

SERVER = Path(__file__).resolve().parents[3] / "tools" / "neo4j-test-server" / "run.sh"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
GUARD_SECONDS = 10.0  # no single request may take longer than the driver timeout plus slack


def _server(*args: str) -> None:
    subprocess.run(["bash", str(SERVER), *args], check=True, capture_output=True, timeout=240)


def _events(session: str) -> list[Event]:
    events: list[Event] = [
        FirstMessageObserved(
            session_id=session, goal_id=f"goal:session:{session}", core_objective="outage study"
        ),
    ]
    for step in range(12):
        finished = T0 + timedelta(seconds=10 * (step + 1))
        events.append(
            ExecutionObserved(
                session_id=session,
                execution_id=f"{session}-exec-{step}",
                turn_id="t",
                tool="run_python",
                code_hash=f"h{step}",
                status="succeeded",
                started_at=finished - timedelta(seconds=1),
                finished_at=finished,
                produced_artifacts=(ProducedArtifact(f"{session}-fig", step + 1),),
            )
        )
        if step == 5:
            events.append(
                SubagentObserved(
                    session_id=session,
                    subagent_id=f"{session}-sub",
                    turn_id="t",
                    objective="review",
                    started_at=finished,
                    status="running",
                )
            )
    return events


async def _shape(
    store: GraphStore, session: str
) -> tuple[set[tuple[str, str]], set[tuple[str, str, str]]]:
    graph = await session_subgraph(store, session, first=5000, fold=False)
    nodes = {(node.label.value, node.key) for node in graph.nodes}
    keys = {node.id: node.key for node in graph.nodes}
    edges = {(edge.type.value, keys[edge.source], keys[edge.target]) for edge in graph.edges}
    return nodes, edges


@pytest.fixture
async def neo4j_runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    from tests.conftest import neo4j_settings

    connection = neo4j_settings()
    assert connection is not None
    cleaner = await Neo4jStore.open(connection["uri"], connection["user"], connection["password"])
    await cleaner.wipe()
    await cleaner.aclose()
    settings = Settings(
        data_dir=tmp_path,
        backend=Backend.NEO4J,
        neo4j_uri=connection["uri"],
        neo4j_user=connection["user"],
        neo4j_password=connection["password"],
        neo4j_timeout=2.0,
        reconnect_seconds=0.2,
        # About the outage, not durability (tests/test_outbox.py): a disk slow to flush the
        # journal is no request waiting on Neo4j.
        fsync=False,
    )
    runtime = await Runtime.start(settings)
    try:
        yield runtime
    finally:
        await runtime.aclose()


async def _record(runtime: Runtime, event: Event) -> bool:
    """Apply through the runtime; True when acknowledged, False when queued."""
    try:
        await once_within(GUARD_SECONDS, runtime.record(APPLY[type(event)], event))
    except StoreUnavailableError as exc:
        queued = exc.queued
    else:
        return True
    assert queued, "an observe must be journalled, not dropped"
    return False


async def test_observes_sent_while_neo4j_is_down_are_replayed_after_it_returns(
    neo4j_runtime: Runtime, tmp_path: Path
) -> None:
    events = _events("outage")
    first, second, third = events[:5], events[5:10], events[10:]
    for event in first:
        assert await _record(neo4j_runtime, event)

    _server("stop", "--keep-data")
    try:
        queued = [await _record(neo4j_runtime, event) for event in second]
        down = await neo4j_runtime.health()
    finally:
        _server("start", "--same-port")
    for event in third:
        await _record(neo4j_runtime, event)
    async with asyncio.timeout(240):
        while neo4j_runtime.outbox is not None and neo4j_runtime.outbox.pending:  # noqa: ASYNC110 -- a counter, no event to await
            await asyncio.sleep(0.1)
    reference = await FileStore.open(tmp_path / "reference")
    for event in events:
        await APPLY[type(event)](reference, event)
    expected = await _shape(reference, "outage")
    await reference.aclose()
    got = await _shape(neo4j_runtime.graph_store, "outage")

    assert queued == [False] * len(second)
    assert down.status == "DEGRADED"
    assert down.pending_writes == len(second)
    assert (await neo4j_runtime.health()).pending_writes == 0
    assert got == expected


async def test_reads_and_declares_answer_unreachable_and_never_fall_back(
    neo4j_runtime: Runtime,
) -> None:
    await _record(neo4j_runtime, _events("fallback")[0])

    _server("stop", "--keep-data")
    try:
        with pytest.raises(StoreUnavailableError) as read_error:
            await once_within(
                GUARD_SECONDS, neo4j_runtime.graph_store.list_nodes(session_id="fallback", limit=5)
            )
        backend = neo4j_runtime.state.backend
    finally:
        _server("start", "--same-port")

    assert read_error.value.queued is False
    assert backend is Backend.NEO4J


async def test_a_selected_neo4j_without_a_password_needs_one(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, backend=Backend.NEO4J)
    runtime = await Runtime.start(replace(settings, neo4j_password=None))

    report = await runtime.health()
    event = _events("nopass")[0]
    with pytest.raises(StoreUnavailableError):
        await runtime.record(APPLY[type(event)], event)
    pending = runtime.outbox.pending if runtime.outbox else -1
    await runtime.aclose()

    assert report.status == "NEEDS_PASSWORD"
    assert pending == 1
