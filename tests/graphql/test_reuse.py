"""What the schema makes of a stored record is made once: asked again, a subgraph reuses its
node and edge objects and their completed fields (``gateway.schema.identity``), and a record
that changed, or another selection, is made afresh.

The file engines hand out the same record object while its row is unchanged (the SQLite
engine's decoded rows, the log engine's graph in memory); Neo4j builds new records at every
read, so there everything is made each time and only the answers are compared.
"""

from __future__ import annotations

import gc
import json
from typing import TYPE_CHECKING, Any

from gateway.schema import build_schema, execution, nodes
from gateway.schema.identity import IdentityCache
from gateway.stores.neo4j import Neo4jStore
from tests import builders as b
from tests.conftest import GraphQLClient

if TYPE_CHECKING:
    import pytest

    from resolvers.store import GraphStore

SUBAGENT = "Task:subtask:subagent:sub-1"
DOCUMENT = """query($s: String!) { subgraph(sessionId: $s, fold: false) { ... on Subgraph {
  nodes { id label excerpt ... on Task { status } } edges { type source target } } } }"""
NARROW = """query($s: String!) { subgraph(sessionId: $s, fold: false) { ... on Subgraph {
  nodes { id } edges { target } } } }"""


async def _session(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")
    await b.subagent(gql, "s1", "sub-1")
    await b.tool_call(
        gql, "s1", "subtask:mcp:inv-1", 20, papers=[b.paper("doi:10.1/x")], parentSubagentId="sub-1"
    )


class _Counted:
    """How many objects were converted and how many were completed, from here on."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.converted = 0
        self.completed = 0
        put = nodes.CONVERTED.put

        def converting(source: object, key: object, value: Any) -> Any:
            self.converted += 1
            return put(source, key, value)

        leaves = execution._leaves

        def completing(plans: Any, source: Any) -> Any:
            self.completed += 1
            return leaves(plans, source)

        monkeypatch.setattr(nodes.CONVERTED, "put", converting)
        monkeypatch.setattr(execution, "_leaves", completing)


async def test_a_subgraph_asked_again_reuses_what_it_made(
    gql: GraphQLClient, store: GraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _session(gql)
    first = await gql.execute(DOCUMENT, s="s1")
    counted = _Counted(monkeypatch)

    again = await gql.execute(DOCUMENT, s="s1")

    assert again == first
    listed = len(first["subgraph"]["nodes"]) + len(first["subgraph"]["edges"])
    assert listed > 5
    if isinstance(store, Neo4jStore):  # new records at every read: everything made again
        assert counted.converted == counted.completed == listed
    else:
        assert counted.converted == counted.completed == 0


async def test_a_node_changed_between_two_reads_answers_its_new_value(gql: GraphQLClient) -> None:
    await _session(gql)
    before = await gql.execute(DOCUMENT, s="s1")

    await b.subagent(gql, "s1", "sub-1", status="completed")
    after = await gql.execute(DOCUMENT, s="s1")

    assert _node(before, SUBAGENT)["status"] == "running"
    assert _node(after, SUBAGENT)["status"] == "completed"


async def test_each_selection_answers_as_if_asked_first(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _session(gql)
    answers = [json.dumps(await gql.execute(document, s="s1")) for document in (NARROW, DOCUMENT)]
    answers += [json.dumps(await gql.execute(document, s="s1")) for document in (NARROW, DOCUMENT)]

    # Nothing kept: every object made for its own request.
    monkeypatch.setattr(nodes, "CONVERTED", IdentityCache(0))
    monkeypatch.setattr(execution, "IdentityCache", lambda _capacity: IdentityCache(0))
    unkept = GraphQLClient(build_schema(), gql.runtime)
    fresh = [json.dumps(await unkept.execute(document, s="s1")) for document in (NARROW, DOCUMENT)]

    assert answers == fresh * 2
    assert '"status": "running"' in answers[1]


class _Source:
    """An object a cache may hold weakly, equal to any other."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Source)

    __hash__ = object.__hash__


def test_a_value_is_given_only_for_its_very_object_and_key() -> None:
    kept: IdentityCache[str] = IdentityCache(2)
    source, twin = _Source(), _Source()  # equal, not the same object
    key = frozenset({"id"})

    kept.put(source, key, "made")

    assert kept.get(source, key) == "made"
    assert kept.get(source, frozenset({"id"})) == "made"  # an equal key
    assert kept.get(twin, key) is None
    assert kept.get(source, frozenset({"id", "excerpt"})) is None
    assert kept.get(source, None) is None


def test_the_oldest_entry_goes_past_the_capacity() -> None:
    kept: IdentityCache[int] = IdentityCache(2)
    first, second, third = _Source(), _Source(), _Source()
    for value, source in enumerate((first, second, third)):
        kept.put(source, None, value)

    assert len(kept) == 2
    assert kept.get(first, None) is None
    assert (kept.get(second, None), kept.get(third, None)) == (1, 2)
    kept.put(second, "other", 5)  # another key of a source held: held with it
    assert (kept.get(second, None), kept.get(second, "other")) == (1, 5)
    kept.put(first, None, 6)  # the oldest source goes, with all its keys
    assert kept.get(second, "other") is None
    assert (kept.get(third, None), kept.get(first, None)) == (2, 6)


def test_an_entry_goes_with_its_source() -> None:
    kept: IdentityCache[str] = IdentityCache(10)
    lasting, passing = _Source(), _Source()
    kept.put(lasting, None, "kept")
    kept.put(passing, None, "gone")

    del passing
    gc.collect()

    assert len(kept) == 1
    assert kept.get(lasting, None) == "kept"


def test_a_source_holds_a_value_per_key_and_the_latest_for_each() -> None:
    kept: IdentityCache[int] = IdentityCache(10)
    source = _Source()
    for value, key in enumerate((None, "a", "b", None, "b")):
        kept.put(source, key, value)

    assert [kept.get(source, key) for key in (None, "a", "b", "c")] == [3, 1, 4, None]


def test_an_entry_is_one_object_for_the_collector() -> None:
    # The collector walks every entry of a full cache in its old-generation collections
    # (24,000 entries a cache): each object an entry is made of is walked again each time.
    sources = [_Source() for _ in range(1_000)]
    kept: IdentityCache[int] = IdentityCache(2_000)
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        for value, source in enumerate(sources):
            kept.put(source, None, value)
        made = len(gc.get_objects()) - before
    finally:
        gc.enable()

    assert len(kept) == 1_000
    assert made <= 1_000 + 10


def _node(data: dict[str, Any], node_id: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [n for n in data["subgraph"]["nodes"] if n["id"] == node_id]
    (node,) = found
    return node
