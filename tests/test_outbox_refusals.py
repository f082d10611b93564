"""A journalled event that the graph refuses on replay (another session owns its key) is
dropped with an error naming the key and the owner; it never blocks the outbox."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from gateway.runtime.outbox import Outbox
from gateway.runtime.state import Runtime, SavedState
from gateway.stores.file.memory import FileMemoryStore
from resolvers.events import ExecutionObserved, FirstMessageObserved
from resolvers.observe import APPLY, observe_execution
from resolvers.records import Backend

if TYPE_CHECKING:
    import pytest

    from gateway.settings import Settings
    from resolvers.store import GraphStore

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


async def test_a_refused_event_is_dropped_and_the_replay_goes_on(
    store: GraphStore, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    await observe_execution(store, _execution("A"))
    outbox = await Outbox.open(settings.data_dir / "outbox")
    memory = await FileMemoryStore.open(settings.data_dir / "memory")
    # The store stands in for the Neo4j the outbox was waiting for (the port is the same).
    runtime = Runtime(
        settings, SavedState(backend=Backend.NEO4J), memory, {Backend.NEO4J: store}, outbox
    )
    await outbox.append(_execution("B"))
    await outbox.append(FirstMessageObserved("B", goal_id="goal:session:B", core_objective="x"))

    with caplog.at_level(logging.ERROR):
        await runtime.replay_outbox()
    pending = outbox.pending
    await outbox.aclose()
    await memory.aclose()

    assert pending == 0
    code, goal = await store.get_nodes(["Code:exec-1", "ResearchGoal:goal:session:B"])
    assert code is not None
    assert (code.session_id, code.get("tool")) == ("A", "tool-A")
    assert goal is not None
    refusals = [r.getMessage() for r in caplog.records if "rejected on replay" in r.getMessage()]
    assert len(refusals) == 1
    assert "subtask:exec-1 belongs to session A" in refusals[0]


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
    outbox = await Outbox.open(settings.data_dir / "outbox")
    memory = await FileMemoryStore.open(settings.data_dir / "memory")
    runtime = Runtime(
        settings, SavedState(backend=Backend.NEO4J), memory, {Backend.NEO4J: store}, outbox
    )
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
