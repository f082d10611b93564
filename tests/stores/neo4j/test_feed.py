"""The Neo4j change feed: appended with the write, numbered per session, read after a cursor,
trimmed by age; and its JSON codec."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gateway.live.bus import GraphChange
from gateway.live.feed import decode_changes, encode_changes
from resolvers.records import EdgeRecord, EdgeType, Label
from tests.stores.neo4j.conftest import make_node

if TYPE_CHECKING:
    from gateway.stores.neo4j import Neo4jStore


async def test_entries_are_numbered_per_session_and_read_after_a_cursor(
    neo4j_store: Neo4jStore,
) -> None:
    async with neo4j_store.transaction("s1") as tx:
        first = await tx.append_feed({"s1": "[1]", "s2": "[2]"})
    async with neo4j_store.transaction("s1") as tx:
        second = await tx.append_feed({"s1": "[3]"})

    heads = await neo4j_store.feed_heads(["s1", "s2", "s3"])
    after = await neo4j_store.feed_after({"s1": 1, "s2": 0}, 10)

    assert (first, second) == ({"s1": 1, "s2": 1}, {"s1": 2})
    assert heads == {"s1": 2, "s2": 1, "s3": 0}
    assert sorted(after) == [("s1", 2, "[3]"), ("s2", 1, "[2]")]


async def abandoned_append(store: Neo4jStore) -> None:
    async with store.transaction("s1") as tx:
        await tx.append_feed({"s1": "[1]"})
        raise RuntimeError("abandon")


async def test_a_rolled_back_write_appends_nothing(neo4j_store: Neo4jStore) -> None:
    with pytest.raises(RuntimeError, match="abandon"):
        await abandoned_append(neo4j_store)

    assert await neo4j_store.feed_heads(["s1"]) == {"s1": 0}
    assert await neo4j_store.feed_after({"s1": 0}, 10) == []


async def test_old_entries_are_trimmed(neo4j_store: Neo4jStore) -> None:
    async with neo4j_store.transaction("s1") as tx:
        await tx.append_feed({"s1": "[1]"})

    kept = await neo4j_store.trim_feed(3600)
    trimmed = await neo4j_store.trim_feed(0)

    assert (kept, trimmed) == (0, 1)
    assert await neo4j_store.feed_after({"s1": 0}, 10) == []
    assert await neo4j_store.feed_heads(["s1"]) == {"s1": 1}  # numbering goes on


def test_changes_round_trip_through_the_feed_encoding() -> None:
    node = make_node(Label.CODE, "e1", content="x", meta={"a": [1, "b"]}, seq=3)
    edge = EdgeRecord(EdgeType.PRODUCES, "ToolCall:subtask:e1", node.id, {"k": 1})
    gone = make_node(Label.CODE, "e2", session="s2")
    changes = [
        GraphChange("s1", node=node),
        GraphChange("s1", edge=edge, removed=True),
        GraphChange("s2", node=gone, removed=True),
    ]

    entries = encode_changes(changes)
    decoded = [
        change for session in entries for change in decode_changes(session, entries[session])
    ]

    assert sorted(entries) == ["s1", "s2"]
    assert decoded == changes
