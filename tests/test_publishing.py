"""Every committed change of every write path reaches the runtime's event bus, on both backends."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from gateway.live.publishing import PublishingStore
from gateway.runtime.outbox import Outbox
from gateway.runtime.state import Runtime, SavedState
from gateway.stores.file.memory import FileMemoryStore
from resolvers.events import FirstMessageObserved
from resolvers.records import Backend, EdgeRecord, EdgeType, Label, NodeRecord
from tests import builders as b

if TYPE_CHECKING:
    from gateway.live.bus import EventBus, GraphChange, Subscription
    from gateway.settings import Settings
    from resolvers.store import GraphStore
    from tests.conftest import GraphQLClient

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def received(subscription: Subscription) -> list[GraphChange]:
    return [await anext(subscription) for _ in range(subscription.pending)]


def summary(changes: list[GraphChange]) -> list[tuple[str, str, bool]]:
    """``(kind, what, removed)``: a node's id, an edge's ``type source target``."""
    rows: list[tuple[str, str, bool]] = []
    for change in changes:
        if change.node is not None:
            rows.append(("node", change.node.id, change.removed))
        else:
            assert change.edge is not None
            edge = change.edge
            rows.append(("edge", f"{edge.type.value} {edge.source} {edge.target}", change.removed))
    return rows


def node(key: str, session: str = "s1") -> NodeRecord:
    return NodeRecord(f"Code:{key}", Label.CODE, key, session, T0)


async def abandoned_write(store: GraphStore) -> None:
    async with store.transaction("s1") as tx:
        await tx.put_node(node("a"))
        raise RuntimeError("abandon")


@pytest.fixture
def bus(runtime: Runtime) -> EventBus:
    return runtime.events


async def test_a_commit_publishes_its_nodes_then_its_edges(
    store: GraphStore, bus: EventBus
) -> None:
    published = PublishingStore(store, bus)
    with bus.subscribe("s1") as subscription:
        async with published.transaction("s1") as tx:
            await tx.put_node(node("a"))
            await tx.put_node(node("b"))
            await tx.put_edge(EdgeRecord(EdgeType.INPUT, "Code:a", "Code:b"))
            await tx.put_node(node("a").with_props(status="done"))

        changes = await received(subscription)

    assert summary(changes) == [
        ("node", "Code:a", False),
        ("node", "Code:b", False),
        ("edge", "input Code:a Code:b", False),
    ]
    assert changes[0].node is not None
    assert changes[0].node.get("status") == "done"  # the node's state at commit
    assert [change.seq for change in changes] == [1, 2, 3]


async def test_a_rolled_back_transaction_publishes_nothing(
    store: GraphStore, bus: EventBus
) -> None:
    published = PublishingStore(store, bus)
    with bus.subscribe("s1") as subscription:
        with pytest.raises(RuntimeError, match="abandon"):
            await abandoned_write(published)

        pending = subscription.pending

    assert pending == 0


async def test_observes_publish_what_they_wrote_and_a_resend_publishes_nothing(
    gql: GraphQLClient, bus: EventBus
) -> None:
    with bus.subscribe("s1") as subscription:
        await b.first_message(gql, "s1")
        await b.execution(gql, "s1", "exec-1", artifacts=[b.artifact("fig")])
        first = summary(await received(subscription))

        await b.execution(gql, "s1", "exec-1", artifacts=[b.artifact("fig")])
        resent = subscription.pending

    assert first == [
        ("node", "ResearchGoal:goal:session:s1", False),
        ("node", "ToolCall:subtask:exec-1", False),
        ("node", "Code:exec-1", False),
        ("node", "Artifact:fig#v1", False),
        ("edge", "next ResearchGoal:goal:session:s1 ToolCall:subtask:exec-1", False),
        ("edge", "produces ToolCall:subtask:exec-1 Code:exec-1", False),
        ("edge", "produces Code:exec-1 Artifact:fig#v1", False),
    ]
    assert resent == 0


async def test_declares_publish_their_nodes_and_edges(gql: GraphQLClient, bus: EventBus) -> None:
    await b.tool_call(gql, "s1", "subtask:mcp:inv-1", papers=[b.paper("doi:10.1/x")])
    with bus.subscribe("s1") as subscription:
        evidence = await b.evidence(gql, "s1", link="https://doi.org/10.1/x")

        changes = summary(await received(subscription))

    evidence_id = f"Evidence:{evidence['evidenceId']}"
    assert changes == [
        ("node", evidence_id, False),
        ("edge", f"extracts Paper:s1|https://doi.org/10.1/x {evidence_id}", False),
    ]


async def test_a_late_middle_version_publishes_the_relinked_lineage(
    gql: GraphQLClient, bus: EventBus
) -> None:
    await b.execution(gql, "s1", "exec-1", artifacts=[b.artifact("fig", 1)])
    await b.execution(gql, "s1", "exec-3", 30, artifacts=[b.artifact("fig", 3)])
    with bus.subscribe("s1") as subscription:
        await b.execution(gql, "s1", "exec-2", 20, artifacts=[b.artifact("fig", 2)])

        edges = [row for row in summary(await received(subscription)) if "supersedes" in row[1]]

    assert edges == [
        ("edge", "supersedes Artifact:fig#v3 Artifact:fig#v1", True),
        ("edge", "supersedes Artifact:fig#v2 Artifact:fig#v1", False),
        ("edge", "supersedes Artifact:fig#v3 Artifact:fig#v2", False),
    ]


async def test_a_session_cleanup_publishes_marked_and_removed_nodes(
    gql: GraphQLClient, bus: EventBus
) -> None:
    await b.execution(gql, "s1", "exec-1", artifacts=[b.artifact("fig")])
    with bus.subscribe("s1") as subscription:
        await gql.execute('mutation { cleanupSession(sessionId: "s1") { __typename } }')

        changes = await received(subscription)

    assert sorted(summary(changes)) == [
        ("node", "Artifact:fig#v1", False),
        ("node", "Code:exec-1", True),
        ("node", "ToolCall:subtask:exec-1", True),
    ]
    marked = next(change.node for change in changes if not change.removed)
    assert marked is not None
    assert marked.deleted is True


async def test_replayed_outbox_events_are_published(store: GraphStore, settings: Settings) -> None:
    outbox = await Outbox.open(settings.data_dir / "outbox")
    memory = await FileMemoryStore.open(settings.data_dir / "memory")
    # The store stands in for the Neo4j the outbox was waiting for (the port is the same).
    runtime = Runtime(
        settings, SavedState(backend=Backend.NEO4J), memory, {Backend.NEO4J: store}, outbox
    )
    await outbox.append(FirstMessageObserved("s1", goal_id="goal:session:s1", core_objective="x"))
    with runtime.events.subscribe("s1") as subscription:
        replayed = await runtime.replay_outbox()

        changes = summary(await received(subscription))
    await outbox.aclose()
    await memory.aclose()

    assert replayed == 1
    assert changes == [("node", "ResearchGoal:goal:session:s1", False)]
