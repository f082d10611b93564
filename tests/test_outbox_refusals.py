"""A journalled event that the graph refuses on replay (another session owns its key) or fails
on is dropped with an error naming why; it never blocks the outbox. A declare of a session
with journalled events waits for them: they are what it is checked against."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from gateway.runtime.outbox import REFUSED_FILE, Outbox
from gateway.runtime.state import Runtime, SavedState
from gateway.stores.file.memory import FileMemoryStore
from resolvers.declare import declare_evidence
from resolvers.errors import KeyOwnedByOtherSessionError, StoreUnavailableError
from resolvers.events import (
    ArtifactDeclared,
    ExecutionObserved,
    FirstMessageObserved,
    PaperProduct,
    ProducedArtifact,
    ToolCallObserved,
    event_from_dict,
)
from resolvers.observe import APPLY, declare_artifact, observe_execution
from resolvers.records import Backend
from tests.conftest import GraphQLClient
from tests.test_write_entrance import EVIDENCE as WRITE_ENTRANCE_EVIDENCE

if TYPE_CHECKING:
    from collections.abc import Coroutine

    import strawberry

    from gateway.settings import Settings
    from resolvers.store import GraphStore

T = TypeVar("T")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _execution(session: str) -> ExecutionObserved:
    return ExecutionObserved(
        session,
        execution_id="exec-1",
        turn_id="t",
        tool=f"tool-{session}",
        code_hash="h",
        status="completed",
        started_at=T0,
        finished_at=T0,
    )


async def _runtime(
    store: GraphStore, settings: Settings
) -> tuple[Runtime, Outbox, FileMemoryStore]:
    """A runtime on Neo4j with an empty outbox; ``store`` stands in for the Neo4j the outbox
    waits for (the port is the same)."""
    outbox = await Outbox.open(settings.data_dir / "outbox")
    memory = await FileMemoryStore.open(settings.data_dir / "memory")
    runtime = Runtime(
        settings, SavedState(backend=Backend.NEO4J), memory, {Backend.NEO4J: store}, outbox
    )
    return runtime, outbox, memory


async def test_a_refused_event_is_dropped_and_the_replay_goes_on(
    store: GraphStore, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    await observe_execution(store, _execution("A"))
    runtime, outbox, memory = await _runtime(store, settings)
    refused_event = _execution("B")
    await outbox.append(refused_event)
    await outbox.append(FirstMessageObserved("B", goal_id="goal:session:B", core_objective="x"))

    with caplog.at_level(logging.ERROR):
        await runtime.replay_outbox()
    pending = outbox.pending
    health = await runtime.health()
    await outbox.aclose()
    reopened = await Outbox.open(settings.data_dir / "outbox")
    kept = reopened.refused
    await reopened.aclose()
    await memory.aclose()

    assert pending == 0
    code, goal = await store.get_nodes(["Code:exec-1", "ResearchGoal:goal:session:B"])
    assert code is not None
    assert (code.session_id, code.get("tool")) == ("A", "tool-A")
    assert goal is not None
    refusals = [r.getMessage() for r in caplog.records if "rejected on replay" in r.getMessage()]
    assert len(refusals) == 1
    assert "subtask:exec-1 belongs to session A" in refusals[0]
    # Acknowledged as queued, never applied: kept whole, to be read and sent again.
    (line,) = (settings.data_dir / "outbox" / REFUSED_FILE).read_text().splitlines()
    refused = json.loads(line)
    assert event_from_dict(refused["event"]) == refused_event
    assert "subtask:exec-1 belongs to session A" in refused["reason"]
    assert datetime.fromisoformat(refused["refusedAt"]).tzinfo is not None
    assert (health.refused_writes, kept) == (1, 1)


async def test_an_event_that_fails_on_replay_is_dropped_whole_and_the_replay_goes_on(
    store: GraphStore,
    settings: Settings,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A store that fails on one event (a server refusing it as too large, a bug) would fail on
    # it at every replay: it must not hold every event journalled after it.
    real = APPLY[ExecutionObserved]

    async def failing(target: GraphStore, event: ExecutionObserved) -> object:
        if event.session_id == "B":
            raise RuntimeError("the server cannot take this one")
        return await real(target, event)

    monkeypatch.setitem(APPLY, ExecutionObserved, failing)
    runtime, outbox, memory = await _runtime(store, settings)
    await outbox.append(FirstMessageObserved("B", goal_id="goal:session:B", core_objective="x"))
    await outbox.append(_execution("B"))
    await outbox.append(_execution("A"))
    await outbox.append(FirstMessageObserved("B", goal_id="goal:session:B", core_objective="y"))

    with caplog.at_level(logging.ERROR):
        drained = await runtime.replay_outbox()
    pending = outbox.pending
    await outbox.aclose()
    await memory.aclose()

    assert (drained, pending) == (4, 0)
    code, goal = await store.get_nodes(["Code:exec-1", "ResearchGoal:goal:session:B"])
    assert code is not None
    assert code.session_id == "A"
    assert goal is not None
    assert goal.get("core_objective") == "y"
    (dropped,) = [r.getMessage() for r in caplog.records if "rejected on replay" in r.getMessage()]
    assert "the server cannot take this one" in dropped
    assert '"tool": "tool-B"' in dropped  # logged whole, to be sent again


# The write entrance's evidence, declared by session B.
EVIDENCE = replace(WRITE_ENTRANCE_EVIDENCE, session_id="B")


async def _searched_in_outbox(
    store: GraphStore, settings: Settings
) -> tuple[Runtime, Outbox, FileMemoryStore]:
    """A runtime whose outbox holds session B's search of the paper ``EVIDENCE`` cites, the
    store answering again (the replay about to start)."""
    runtime, outbox, memory = await _runtime(store, settings)
    await outbox.append(FirstMessageObserved("B", goal_id="goal:session:B", core_objective="x"))
    await outbox.append(
        ToolCallObserved(
            "B",
            task_id="subtask:mcp:q1",
            turn_id="t",
            tool_name="search",
            tool_type="search",
            retrieved_at=T0,
            products=(PaperProduct(EVIDENCE.source_paper_link or ""),),
        )
    )
    outbox.resume()
    return runtime, outbox, memory


async def _behind_the_replay(
    runtime: Runtime, work: Coroutine[Any, Any, T]
) -> tuple[bool, asyncio.Task[T]]:
    """Start ``work``; whether it still waited a moment later, when the outbox was then
    replayed; and its task, to await."""
    task = asyncio.create_task(work)
    await asyncio.sleep(0.05)
    waiting = not task.done()
    await runtime.replay_outbox()
    return waiting, task


async def test_a_declare_waits_for_its_sessions_queued_observes(
    store: GraphStore, settings: Settings
) -> None:
    # Applied before the search it cites, it would be refused as citing a paper never found.
    runtime, outbox, memory = await _searched_in_outbox(store, settings)

    waiting, declared = await _behind_the_replay(
        runtime, runtime.record(declare_evidence, EVIDENCE)
    )
    result = await declared
    await outbox.aclose()
    await memory.aclose()

    assert waiting
    assert result.evidence.session_id == "B"


async def test_a_declare_whose_sessions_observes_stay_queued_answers_unreachable(
    store: GraphStore, settings: Settings
) -> None:
    runtime, outbox, memory = await _searched_in_outbox(store, replace(settings, neo4j_timeout=0.1))

    with pytest.raises(StoreUnavailableError) as caught:
        await runtime.record(declare_evidence, EVIDENCE)
    pending = outbox.pending
    await outbox.aclose()
    await memory.aclose()

    assert caught.value.queued is False
    assert pending == 2


async def test_a_declared_artifact_of_another_sessions_queued_execution_waits_and_is_refused(
    store: GraphStore, settings: Settings
) -> None:
    # Applied before A's queued execution, B's declare would take a product of A's code.
    runtime, outbox, memory = await _runtime(store, settings)
    await outbox.append(_execution("A"))
    outbox.resume()
    declare = ArtifactDeclared("B", execution_id="exec-1", artifact=ProducedArtifact("fig", 1))

    waiting, declared = await _behind_the_replay(runtime, runtime.record(declare_artifact, declare))
    with pytest.raises(KeyOwnedByOtherSessionError) as refused:
        await declared
    await outbox.aclose()
    await memory.aclose()

    assert waiting
    assert refused.value.owner_session_id == "A"
    (artifact,) = await store.get_nodes(["Artifact:fig#v1"])
    assert artifact is None


@pytest.mark.parametrize("scope", ["session", "project"])
async def test_a_cleanup_waits_for_the_sessions_queued_observes(
    store: GraphStore, settings: Settings, schema: strawberry.Schema, scope: str
) -> None:
    # Applied before them, the cleanup would miss them, and their replay would undo it.
    runtime, outbox, memory = await _runtime(store, settings)
    await outbox.append(_execution("C"))
    outbox.resume()
    gql = GraphQLClient(schema, runtime)
    document = (
        'mutation { cleanupSession(sessionId: "C") { __typename } }'
        if scope == "session"
        else 'mutation { cleanupProject(projectId: "p", sessionIds: ["C"]) { __typename } }'
    )

    waiting, cleaned = await _behind_the_replay(runtime, gql.execute(document))
    answer = await cleaned
    await outbox.aclose()
    await memory.aclose()

    assert waiting
    assert next(iter(answer.values()))["__typename"] == "Cleanup"
    live = [node for node in await store.get_nodes(await store.session_node_ids("C")) if node]
    assert [node.id for node in live if not node.deleted] == []


async def test_a_cleanup_whose_sessions_observes_stay_queued_answers_unreachable(
    store: GraphStore, settings: Settings, schema: strawberry.Schema
) -> None:
    settings = replace(settings, neo4j_timeout=0.1)
    runtime, outbox, memory = await _runtime(store, settings)
    await outbox.append(_execution("C"))
    outbox.resume()

    answer = await GraphQLClient(schema, runtime).execute(
        'mutation { cleanupSession(sessionId: "C") '
        "{ __typename ... on MemoryGraphUnreachable { queued } } }"
    )
    pending = outbox.pending
    await outbox.aclose()
    await memory.aclose()

    assert answer["cleanupSession"] == {"__typename": "MemoryGraphUnreachable", "queued": False}
    assert pending == 1
