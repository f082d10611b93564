"""Replaying events in different orders and comparing the graphs they leave.

An event is a coroutine function ``send(gql, session)``; every id it writes must contain the
session id (artifact, execution and subagent ids are global), so that two replays into two
sessions stay apart and the normaliser can replace the session part.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

Send = Callable[["GraphQLClient", str], Awaitable[object]]
Graph = tuple[dict[str, tuple[str, str]], list[tuple[str, str, str, str]]]

SUBGRAPH = """query($s: String!) { subgraph(sessionId: $s, fold: false) { __typename
  ... on Subgraph { nodes { id label properties } edges { type source target properties } } } }"""

# Ids derived from the session (UUIDv5) are named by their content instead.
_DERIVED_IDS = {"EVIDENCE": "evidence_id", "CLAIM": "claim_id"}


def _scrub(value: Any, session: str) -> Any:
    if isinstance(value, str):
        return value.replace(session, "<S>")
    if isinstance(value, list):
        return [_scrub(item, session) for item in value]
    if isinstance(value, dict):
        return {key: _scrub(item, session) for key, item in value.items()}
    return value


def _canonical_ids(nodes: list[dict[str, Any]], session: str) -> dict[str, str]:
    names: dict[str, str] = {}
    for node in nodes:
        label = node["label"]
        if label in _DERIVED_IDS:
            names[node["id"]] = f"{label}:{node['properties']['content']}"
        else:
            names[node["id"]] = _scrub(node["id"], session)
    return names


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


async def normalised(gql: GraphQLClient, session: str) -> Graph:
    """The session's graph: nodes by canonical id → (label, properties), sorted edges."""
    data = (await gql.execute(SUBGRAPH, s=session))["subgraph"]
    names = _canonical_ids(data["nodes"], session)
    nodes: dict[str, tuple[str, str]] = {}
    for node in data["nodes"]:
        derived = _DERIVED_IDS.get(node["label"])
        props = {k: v for k, v in node["properties"].items() if k != derived}
        nodes[names[node["id"]]] = (node["label"], _dump(_scrub(props, session)))
    edges = sorted(
        (
            edge["type"],
            names[edge["source"]],
            names[edge["target"]],
            _dump(_scrub(edge["properties"], session)),
        )
        for edge in data["edges"]
    )
    return nodes, edges


async def replay(gql: GraphQLClient, session: str, events: Sequence[Send]) -> Graph:
    for send in events:
        await send(gql, session)
    return await normalised(gql, session)


async def assert_order_independent(
    gql: GraphQLClient,
    events: Sequence[Send],
    orders: Sequence[Sequence[int]] | None = None,
) -> Graph:
    """Replay ``events`` in order, then in each of ``orders`` (default: every permutation),
    each into a fresh session; every replay must leave the in-order graph. Returns it."""
    expected = await replay(gql, "order-in", events)
    assert expected[0], "the in-order replay wrote nothing"
    for index, order in enumerate(orders or list(itertools.permutations(range(len(events))))):
        got = await replay(gql, f"order-{index:02d}", [events[i] for i in order])
        assert got == expected, f"order {list(order)} differs: {_difference(got, expected)}"
    return expected


def _difference(got: Graph, expected: Graph) -> str:
    nodes = {
        name: (got[0].get(name), expected[0].get(name))
        for name in got[0].keys() | expected[0].keys()
        if got[0].get(name) != expected[0].get(name)
    }
    extra = sorted(set(got[1]) - set(expected[1]))
    missing = sorted(set(expected[1]) - set(got[1]))
    return f"nodes (got, expected) {nodes}; extra edges {extra}; missing edges {missing}"
