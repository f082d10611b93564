"""SqliteStore's ``session_page``: a session's page and the edges among its nodes, one job.

The page must be ``list_nodes``'s and the edges exactly those stored between two nodes of the
page: checked against a plain model of the edges written (put, updated, deleted, and removed
with a deleted node), on graphs with soft-deleted nodes, edges across sessions and edges to
nodes a truncated page leaves out.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from gateway.live.bus import EventBus
from gateway.live.publishing import PublishingStore
from resolvers.records import EdgeRecord, EdgeType, Label, NodeRecord, node_id
from resolvers.store import SessionPageReader

if TYPE_CHECKING:
    from gateway.stores.sqlite.store import SqliteStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
Identity = tuple[EdgeType, str, str]


def node(number: int, session: str, **props: Any) -> NodeRecord:
    key = f"k{number}"
    created = T0 + timedelta(seconds=number)
    return NodeRecord(node_id(Label.CLAIM, key, session), Label.CLAIM, key, session, created, props)


async def random_graph(store: SqliteStore, seed: int) -> dict[Identity, dict[str, Any]]:
    """Nodes of two sessions (some soft-deleted, one deleted), edges among any of them; the
    edges the store should hold, by identity, with their properties."""
    rng = random.Random(seed)
    nodes = [
        node(n, rng.choice(["s1", "s1", "s2"]), **({"deleted_session": "s1"} if n % 7 == 3 else {}))
        for n in range(30)
    ]
    edges: dict[Identity, dict[str, Any]] = {}
    async with store.transaction() as tx:
        for each in nodes:
            await tx.put_node(each)
        for _ in range(120):
            source, target = rng.choice(nodes), rng.choice(nodes)
            edge_type = rng.choice([EdgeType.SUPPORTS, EdgeType.NEXT, EdgeType.PRODUCES])
            props = {"weight": rng.randint(0, 3)} if rng.random() < 0.3 else {}
            await tx.put_edge(EdgeRecord(edge_type, source.id, target.id, props))
            edges[(edge_type, source.id, target.id)] = props
        for identity in rng.sample(sorted(edges), 10):
            await tx.delete_edge(*identity)
            del edges[identity]
        gone = nodes[rng.randrange(len(nodes))]
        await tx.delete_node(gone.id)
    return {
        identity: props
        for identity, props in edges.items()
        if gone.id not in (identity[1], identity[2])
    }


@pytest.mark.parametrize("seed", range(6))
async def test_a_page_and_exactly_the_edges_among_its_nodes(
    sqlite_store: SqliteStore, seed: int
) -> None:
    stored = await random_graph(sqlite_store, seed)
    live = (await sqlite_store.list_nodes(session_id="s1", limit=1000)).total
    assert isinstance(sqlite_store, SessionPageReader)

    for limit in sorted({1, live // 3 or 1, live // 2 or 1, live - 1 or 1, live, live + 5}):
        page, edges = await sqlite_store.session_page("s1", limit=limit)

        assert page == await sqlite_store.list_nodes(session_id="s1", limit=limit)
        kept = {each.id for each in page.items}
        expected = {
            identity: props
            for identity, props in stored.items()
            if identity[1] in kept and identity[2] in kept
        }
        assert {edge.identity: dict(edge.props) for edge in edges} == expected
        assert len(edges) == len(expected)


async def test_the_gateway_wrapper_keeps_session_page(sqlite_store: SqliteStore) -> None:
    assert isinstance(PublishingStore(sqlite_store, EventBus()), SessionPageReader)
