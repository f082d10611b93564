"""Outbox replay in batches: the same graph as one event per transaction, and a rejected event
dropped alone, on both backends."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from gateway.runtime import replay
from gateway.runtime.replay import apply_batch, apply_one
from resolvers.events import ExecutionObserved, FirstMessageObserved, ProducedArtifact
from resolvers.subgraph import session_subgraph

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import pytest

    from resolvers.events import Event
    from resolvers.store import GraphStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def events(session: str) -> list[Event]:
    """A session's observes out of order: executions before the goal, v3 before v1."""

    def execution(number: int, execution_id: str | None = None) -> ExecutionObserved:
        at = T0 + timedelta(seconds=number)
        return ExecutionObserved(
            session,
            execution_id=execution_id if execution_id is not None else f"{session}-e{number}",
            turn_id="t1",
            tool="run_python",
            code_hash=f"h{number}",
            status="succeeded",
            started_at=at,
            finished_at=at,
            produced_artifacts=(ProducedArtifact(f"{session}-fig", number + 1),),
        )

    goal = FirstMessageObserved(session, goal_id=f"goal:session:{session}", core_objective="x")
    return [execution(2), goal, execution(0), execution(1)]


async def graph_of(store: GraphStore, session: str) -> tuple[list[str], list[str]]:
    graph = await session_subgraph(store, session, fold=False)
    edges = sorted(f"{e.type.value} {e.source} {e.target}" for e in graph.edges)
    return sorted(node.id for node in graph.nodes), edges


async def test_a_batch_writes_the_graph_of_one_event_per_transaction(store: GraphStore) -> None:
    for event in events("one"):
        await apply_one(store, event)

    await apply_batch(store, events("all"))

    one, batched = await graph_of(store, "one"), await graph_of(store, "all")
    assert [len(part) for part in batched] == [len(part) for part in one]
    assert batched == tuple(sorted(item.replace("one", "all") for item in part) for part in one)


async def test_events_sent_again_and_replayed_in_batches_change_nothing(store: GraphStore) -> None:
    # The control plane retries: a journal can hold an event already written, followed by
    # others, all replayed in one transaction.
    sent = events("s1")
    for event in sent:
        await apply_one(store, event)
    written = await graph_of(store, "s1")

    for first, then in itertools.permutations(sent, 2):
        await apply_batch(store, [first, then])

    assert await graph_of(store, "s1") == written


async def test_a_rejected_event_is_dropped_alone(store: GraphStore) -> None:
    good = events("s1")
    bad = ExecutionObserved(
        "s1",
        "",
        "t1",
        "run_python",
        "h",
        "succeeded",
        T0,
        T0,  # no execution id
    )

    await apply_batch(store, [good[1], bad, good[0]])

    nodes, _ = await graph_of(store, "s1")
    assert "ResearchGoal:goal:session:s1" in nodes
    assert "ToolCall:subtask:s1-e2" in nodes


def count_writes(store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sessions of the store's write transactions, as they are opened."""
    calls: list[str] = []
    write = store.write

    async def counted(session_id: str, work: Callable[[Any], Awaitable[Any]]) -> Any:
        calls.append(session_id)
        return await write(session_id, work)

    monkeypatch.setattr(store, "write", counted)
    return calls


async def test_a_batch_is_one_transaction_while_it_is_within_its_time(
    store: GraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay, "BATCH_SECONDS", 3600.0)
    writes = count_writes(store, monkeypatch)

    await apply_batch(store, events("s1"))

    assert writes == ["s1"]


async def test_a_slow_batch_commits_in_turns_and_writes_the_same_graph(
    store: GraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every event takes longer than a transaction may hold the session: one each.
    for event in events("one"):
        await apply_one(store, event)
    monkeypatch.setattr(replay, "BATCH_SECONDS", 0.0)
    writes = count_writes(store, monkeypatch)

    await apply_batch(store, events("all"))

    one, batched = await graph_of(store, "one"), await graph_of(store, "all")
    assert writes == ["all"] * len(events("all"))
    assert batched == tuple(sorted(item.replace("one", "all") for item in part) for part in one)
