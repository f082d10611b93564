"""A lone UTF-16 surrogate (legal in a JSON string: ``"\\ud800"``) in a read argument is
invalid input (SPEC §8), answered as such before any store sees it — a store that encodes
text as UTF-8 (Neo4j, SQLite) cannot take it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

LONE = "\ud800x"
READS = [
    ("node", "query($v: ID!) { node(nodeId: $v) { __typename } }", LONE),
    (
        "getChain",
        "query($v: ID!) { getChain(nodeId: $v, kind: VIEW_GOAL) { __typename } }",
        f"Code:{LONE}",
    ),
    ("traceProvenance", "query($v: ID!) { traceProvenance(nodeId: $v) { __typename } }", LONE),
    ("subgraph", "query($v: String!) { subgraph(sessionId: $v) { __typename } }", LONE),
    (
        "searchNodes",
        'query($v: String!) { searchNodes(query: "a", sessionId: $v) { __typename } }',
        LONE,
    ),
    ("searchNodes", "query($v: String!) { searchNodes(query: $v) { __typename } }", LONE),
    ("session", "query($v: String!) { session(sessionId: $v) { __typename } }", LONE),
]


@pytest.mark.parametrize(("field", "document", "value"), READS, ids=[r[0] for r in READS])
async def test_a_lone_surrogate_in_a_read_argument_answers_invalid_input(
    gql: GraphQLClient, field: str, document: str, value: str
) -> None:
    result = await gql.raw(document, v=value)

    assert result.errors is None, result.errors
    assert result.data is not None
    assert result.data[field.split()[0]]["__typename"] == "InvalidInput"
