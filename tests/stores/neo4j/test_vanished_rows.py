"""A node or relationship deleted by a commit that lands while a statement reads it comes back
without its id or type (reads are read committed): a read leaves it out instead of failing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gateway.stores.neo4j.records import to_edges, to_nodes
from resolvers.records import EdgeRecord, EdgeType

STORED = {
    "id": "Claim:c1",
    "_sm_label": "Claim",
    "key": "c1",
    "session_id": "s1",
    "created_at": datetime(2026, 1, 1, tzinfo=UTC),
    "content": "TP53",
}


def test_a_vanished_relationship_is_left_out() -> None:
    rows: list[dict[str, Any]] = [
        {"type": None, "source": None, "target": None, "props": None},
        {"type": "next", "source": "ToolCall:a", "target": None, "props": {}},
        {"type": "next", "source": "ToolCall:a", "target": "ToolCall:b", "props": {}},
    ]

    edges = to_edges(rows)

    assert edges == [EdgeRecord(EdgeType.NEXT, "ToolCall:a", "ToolCall:b", {})]


def test_a_vanished_node_is_left_out() -> None:
    gone = {"_sm_label": None, "_sm_tokens": None, "_sm_ranks": None, "_sm_text": None}

    nodes = to_nodes([gone, STORED])

    assert [node.id for node in nodes] == ["Claim:c1"]
