"""subgraph (folded subagent scopes), scopeExpansion and groupExpansion."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pytest

from gateway.stores.sqlite.reads import Reads
from gateway.stores.sqlite.store import SqliteStore
from resolvers import subgraph
from resolvers.cleanup import cleanup_session
from resolvers.errors import InvalidInputError, NodeNotFoundError
from resolvers.records import EdgeType
from resolvers.subgraph import (
    SUBGRAPH_MAX_FIRST,
    group_expansion,
    scope_expansion,
    session_subgraph,
)
from tests.resolvers.builders import (
    artifact,
    call,
    code,
    execution,
    goal,
    paper,
    scope_id,
    search,
    subagent,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence
    from pathlib import Path

    from resolvers.records import EdgeRecord
    from resolvers.store import GraphStore

LINK = "https://example.org/review"
GROUP = "_group:subtask:subagent:sub:Artifact"


def surrogates(edges: list[EdgeRecord]) -> dict[tuple[str, str], dict[str, object]]:
    return {(e.source, e.target): dict(e.props) for e in edges if e.props.get("surrogate")}


async def folded_session(store: GraphStore, *artifacts: str) -> str:
    """A goal and one scope whose exec child makes ``artifacts`` and whose search child finds
    one paper."""
    await goal(store)
    scope = await subagent(store, "sub", 10, summary="文献综述 done")
    await execution(store, "c1", 11, scope="sub", produces=[(a, 1) for a in artifacts])
    await search(store, "q1", 12, [LINK], scope="sub")
    return scope


async def test_one_product_per_kind_becomes_a_surrogate_edge(store: GraphStore) -> None:
    scope = await folded_session(store, "fig")

    graph = await session_subgraph(store, "s1")

    assert surrogates(graph.edges) == {
        (scope, artifact("fig")): {"surrogate": True, "viaChild": call("c1", "sub")},
        (scope, paper(LINK)): {"surrogate": True, "viaChild": call("q1", "sub")},
    }
    assert graph.groups == []
    assert (EdgeType.CONTAINS, scope, call("c1", "sub")) in {e.identity for e in graph.edges}


async def test_several_products_of_a_kind_become_a_group(store: GraphStore) -> None:
    scope = await folded_session(store, "fig", "table")

    graph = await session_subgraph(store, "s1")

    (group,) = graph.groups
    assert (group.id, group.scope_id, group.kind.value) == (GROUP, scope, "Artifact")
    assert sorted(group.members) == sorted([artifact("fig"), artifact("table")])
    assert group.via_child == call("c1", "sub")
    assert surrogates(graph.edges) == {
        (scope, GROUP): {"surrogate": True, "aggregated": True, "viaChild": call("c1", "sub")},
        (scope, paper(LINK)): {"surrogate": True, "viaChild": call("q1", "sub")},
    }


@runtime_checkable
class _NeverOffered(Protocol):
    def never_offered(self) -> None: ...


async def test_every_scope_folds_alike_whether_the_chains_are_read_at_once_or_one_by_one(
    store: GraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three scopes (one with children that made nothing, one with none at all) and a main
    chain: the subgraph from ``ChainsReader`` (SQLite) is the one read chain by chain."""
    await goal(store)
    for n, name in enumerate(["alpha", "beta", "gamma"]):
        await subagent(store, name, 10 + 10 * n, summary=f"{name} done")
    await execution(store, "a1", 11, scope="alpha", produces=[("fig", 1), ("table", 1)])
    await search(store, "a2", 12, [LINK], scope="alpha")
    await execution(store, "b1", 21, scope="beta", produces=[("map", 1)])
    await execution(store, "b2", 22, scope="beta")
    await execution(store, "m1", 40, produces=[("main", 1)])
    at_once = await session_subgraph(store, "s1")

    monkeypatch.setattr(subgraph, "ChainsReader", _NeverOffered)
    one_by_one = await session_subgraph(store, "s1")

    assert at_once == one_by_one
    assert {group.scope_id for group in at_once.groups} == {scope_id("alpha")}
    assert (scope_id("beta"), artifact("map")) in surrogates(at_once.edges)


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = await SqliteStore.open(tmp_path, fsync=False)
    try:
        yield opened
    finally:
        await opened.aclose()


async def test_a_sqlite_subgraph_reads_every_scope_chain_in_one_request(
    sqlite_store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await goal(sqlite_store)
    for n, name in enumerate(["alpha", "beta"]):
        await subagent(sqlite_store, name, 10 + 10 * n)
        await execution(sqlite_store, f"{name}-run", 11 + 10 * n, scope=name, produces=[(name, 1)])
    asked: list[int] = []
    real = Reads.chains_members

    async def counted(self: Reads, session_id: str, keys: Sequence[str | None]) -> Any:
        asked.append(len(keys))
        return await real(self, session_id, keys)

    async def refused(self: Reads, session_id: str, key: str | None) -> Any:
        raise AssertionError("a chain read by itself")

    monkeypatch.setattr(Reads, "chains_members", counted)
    monkeypatch.setattr(Reads, "chain_members", refused)
    graph = await session_subgraph(sqlite_store, "s1")

    assert asked == [2]
    assert len(surrogates(graph.edges)) == 2


async def test_unfolded_subgraph_has_no_surrogates(store: GraphStore) -> None:
    await folded_session(store, "fig", "table")

    graph = await session_subgraph(store, "s1", fold=False)

    assert (surrogates(graph.edges), graph.groups) == ({}, [])


async def test_exactly_first_nodes_is_not_truncated(store: GraphStore) -> None:
    await execution(store, "e1", 10, produces=[("fig", 1)])

    exact = await session_subgraph(store, "s1", first=3)
    short = await session_subgraph(store, "s1", first=2)

    assert (len(exact.nodes), exact.total, exact.truncated) == (3, 3, False)
    assert (len(short.nodes), short.total, short.truncated) == (2, 3, True)


async def test_edges_never_leave_the_returned_nodes(store: GraphStore) -> None:
    await folded_session(store, "fig")

    graph = await session_subgraph(store, "s1", first=3)

    returned = {node.id for node in graph.nodes}
    assert graph.edges
    assert all(e.source in returned and e.target in returned for e in graph.edges)


async def test_a_cleaned_session_is_empty(store: GraphStore) -> None:
    await folded_session(store, "fig")
    await cleanup_session(store, "s1")

    graph = await session_subgraph(store, "s1")

    assert (graph.nodes, graph.edges, graph.total, graph.truncated) == ([], [], 0, False)


@pytest.mark.parametrize("first", [0, SUBGRAPH_MAX_FIRST + 1])
async def test_subgraph_first_out_of_range_is_invalid(store: GraphStore, first: int) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await session_subgraph(store, "s1", first=first)

    assert caught.value.field == "first"


async def test_scope_expansion_lists_scope_children_and_products(store: GraphStore) -> None:
    scope = await folded_session(store, "fig")

    expanded = await scope_expansion(store, "subtask:subagent:sub", "s1")

    assert {node.id for node in expanded.nodes} == {
        scope,
        call("c1", "sub"),
        call("q1", "sub"),
        code("c1"),
        artifact("fig"),
        paper(LINK),
    }
    assert {edge.type for edge in expanded.edges} == {
        EdgeType.CONTAINS,
        EdgeType.PRODUCES,
        EdgeType.NEXT,
    }
    assert not surrogates(list(expanded.edges))
    assert (expanded.total, expanded.truncated) == (6, False)


async def test_scope_expansion_accepts_a_global_id(store: GraphStore) -> None:
    scope = await folded_session(store, "fig")

    expanded = await scope_expansion(store, scope, "s1")

    assert expanded.nodes[0].id == scope


@pytest.mark.parametrize("ref", ["subtask:c1", "subtask:subagent:other", "ToolCall:subtask:c1"])
async def test_scope_expansion_of_a_non_scope_is_not_found(store: GraphStore, ref: str) -> None:
    await folded_session(store, "fig")

    with pytest.raises(NodeNotFoundError):
        await scope_expansion(store, ref, "s1")


async def test_scope_expansion_after_cleanup_is_not_found(store: GraphStore) -> None:
    await folded_session(store, "fig")
    await cleanup_session(store, "s1")

    with pytest.raises(NodeNotFoundError):
        await scope_expansion(store, "subtask:subagent:sub", "s1")


async def test_scope_expansion_needs_ids(store: GraphStore) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await scope_expansion(store, " ", "s1")

    assert caught.value.field == "scopeTaskId"


async def test_group_expansion_lists_members_with_surrogate_edges(store: GraphStore) -> None:
    scope = await folded_session(store, "fig", "table")

    expanded = await group_expansion(store, GROUP, "s1")

    assert {node.id for node in expanded.nodes} == {scope, artifact("fig"), artifact("table")}
    assert surrogates(list(expanded.edges)) == {
        (scope, artifact("fig")): {"surrogate": True, "viaChild": call("c1", "sub")},
        (scope, artifact("table")): {"surrogate": True, "viaChild": call("c1", "sub")},
    }


@pytest.mark.parametrize(
    "group",
    [
        "subtask:subagent:sub:Artifact",
        "_group:subtask:subagent:sub:Code",
        "_group:subtask:subagent:nobody:Artifact",
        "_group:Artifact",
    ],
)
async def test_a_malformed_or_unknown_group_is_not_found(store: GraphStore, group: str) -> None:
    await folded_session(store, "fig", "table")

    with pytest.raises(NodeNotFoundError) as caught:
        await group_expansion(store, group, "s1")

    assert caught.value.node_id == group


async def test_group_expansion_needs_a_group_id(store: GraphStore) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await group_expansion(store, "  ", "s1")

    assert caught.value.field == "groupId"
