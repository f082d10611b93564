"""Neo4jStore reads: chain positions, search semantics, listings and soft-deleted nodes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from resolvers.records import Direction, EdgeRecord, EdgeType, Label, NodeRecord, SearchHit
from resolvers.writes import CHAIN_START
from tests.stores.neo4j.conftest import make_node

if TYPE_CHECKING:
    from gateway.stores.neo4j import Neo4jStore


def step(key: str, at: str, seq: int, session: str = "s1", scope: str | None = None) -> NodeRecord:
    props = {"chain_at": at, **({"parent_subtask_id": scope} if scope else {})}
    return make_node(Label.TOOL_CALL, key, session, seq=seq, **props)


async def put(store: Neo4jStore, *nodes: NodeRecord, edges: tuple[EdgeRecord, ...] = ()) -> None:
    async with store.transaction() as tx:
        for node in nodes:
            await tx.put_node(node)
        for edge in edges:
            await tx.put_edge(edge)


async def test_chain_neighbours_order_by_time_then_seq(neo4j_store: Neo4jStore) -> None:
    early = step("subtask:a", "2026-01-01T00:00:01Z", 3)
    tie_first = step("subtask:b", "2026-01-01T00:00:05Z", 1)
    tie_second = step("subtask:c", "2026-01-01T00:00:05Z", 2)
    late = step("subtask:d", "2026-01-01T00:00:09Z", 4)
    scope = make_node(Label.TASK, "subtask:subagent:x", seq=5, chain_at="2026-01-01T00:00:07Z")
    child = step("subtask:subagent:x:exec:1", "2026-01-01T00:00:02Z", 6, scope=scope.key)
    other_session = step("subtask:z", "2026-01-01T00:00:06Z", 1, session="s2")
    await put(neo4j_store, late, tie_second, early, tie_first, scope, child, other_session)

    members = await neo4j_store.chain_members("s1", None)
    around_tie = await neo4j_store.chain_neighbours("s1", None, ("2026-01-01T00:00:05Z", 1))
    head = await neo4j_store.chain_neighbours("s1", None, CHAIN_START)
    tail = await neo4j_store.chain_neighbours("s1", None, ("2026-01-01T00:00:09Z", 4))
    in_scope = await neo4j_store.chain_neighbours("s1", scope.key, CHAIN_START)

    assert [node.key for node in members] == [
        "subtask:a",
        "subtask:b",
        "subtask:c",
        "subtask:subagent:x",
        "subtask:d",
    ]
    assert around_tie == (early, tie_second)
    assert head == (None, early)
    assert tail == (scope, None)
    assert in_scope == (None, child)


async def test_search_matches_prefixes_of_whole_words(neo4j_store: Neo4jStore) -> None:
    mention = make_node(Label.CLAIM, "c1", content="We mention TP53 mutations")
    other = make_node(Label.CLAIM, "c2", session="s2", content="Mutational burden of tumours")
    await put(neo4j_store, mention, other)

    by_prefix = await neo4j_store.search(["mutation"])
    inside_word = await neo4j_store.search(["ention"])
    in_session = await neo4j_store.search(["mutation"], session_id="s2")
    all_terms = await neo4j_store.search(["tp53", "mut"], require_all=True)
    any_term = await neo4j_store.search(["tp53", "tumour"])

    assert {hit.node.id for hit in by_prefix} == {mention.id, other.id}
    assert inside_word == []
    assert in_session == [SearchHit(other, 1, 4)]  # one term, in `content` (rank 4)
    assert all_terms == [SearchHit(mention, 2, 4)]
    assert {hit.node.id for hit in any_term} == {mention.id, other.id}


async def test_a_chinese_term_matches_inside_a_run_of_chinese(neo4j_store: Neo4jStore) -> None:
    paper = make_node(Label.PAPER, "https://x.org/p", title="肿瘤抑制基因研究", link="x")
    await put(neo4j_store, paper)

    across = await neo4j_store.search(["抑制基因"])
    in_session = await neo4j_store.search(["基因"], session_id="s1")

    assert across == [SearchHit(paper, 1, 0)]  # in the title
    assert in_session == [SearchHit(paper, 1, 0)]


async def test_search_filters_labels_and_refuses_impossible_terms(
    neo4j_store: Neo4jStore,
) -> None:
    claim = make_node(Label.CLAIM, "c1", content="TP53 drives growth")
    evidence = make_node(Label.EVIDENCE, "e1", content="TP53 is mutated")
    await put(neo4j_store, claim, evidence)

    only_claims = await neo4j_store.search(["tp53"], labels=[Label.CLAIM])
    punctuated = await neo4j_store.search(["tp53", "a-b"], require_all=True)
    empty_term = await neo4j_store.search([""], labels=[Label.EVIDENCE])
    nothing = await neo4j_store.search([])

    assert [hit.node for hit in only_claims] == [claim]
    assert punctuated == []
    assert [hit.node for hit in empty_term] == [evidence]
    assert nothing == []


async def test_a_transaction_searches_its_own_writes(neo4j_store: Neo4jStore) -> None:
    claim = make_node(Label.CLAIM, "c1", content="Uncommitted finding")

    async with neo4j_store.transaction("s1") as tx:
        await tx.put_node(claim)
        found = await tx.search(["uncommit"])

    assert [hit.node for hit in found] == [claim]


async def test_soft_deleted_nodes_are_skipped_by_listings_and_search(
    neo4j_store: Neo4jStore,
) -> None:
    code = make_node(Label.CODE, "e1")
    live = make_node(Label.ARTIFACT, "fig#v1", artifact_id="fig", version=1, title="growth")
    gone = make_node(
        Label.ARTIFACT, "fig#v2", artifact_id="fig", version=2, title="growth", deleted_session=True
    )
    produces = (
        EdgeRecord(EdgeType.PRODUCES, code.id, live.id),
        EdgeRecord(EdgeType.PRODUCES, code.id, gone.id),
    )
    await put(neo4j_store, code, live, gone, edges=produces)

    nodes = await neo4j_store.list_nodes(labels=[Label.ARTIFACT], limit=10)
    in_session = await neo4j_store.list_nodes(session_id="s1", limit=10)
    edges = await neo4j_store.list_edges([EdgeType.PRODUCES], session_id="s1", limit=10)
    found = await neo4j_store.search(["growth"])

    assert nodes.items == [live]
    assert (nodes.total, nodes.truncated) == (1, False)
    assert in_session.items == [live, code]
    assert edges.items == [produces[0]]
    assert (edges.total, edges.truncated) == (1, False)
    assert [hit.node for hit in found] == [live]
    assert await neo4j_store.get_nodes([gone.id]) == [gone]
    assert await neo4j_store.artifact_versions("fig") == [live, gone]


async def test_listings_page_newest_first(neo4j_store: Neo4jStore) -> None:
    codes = [make_node(Label.CODE, f"e{i}") for i in range(5)]
    for code in codes:
        await put(neo4j_store, code)

    first = await neo4j_store.list_nodes(labels=[Label.CODE], session_id="s1", limit=2)
    last = await neo4j_store.list_nodes(labels=[Label.CODE], limit=2, offset=4)

    assert first.items == [codes[4], codes[3]]
    assert (first.total, first.truncated) == (5, True)
    assert last.items == [codes[0]]
    assert (last.total, last.truncated) == (5, False)


async def test_a_frontier_expands_in_one_call_in_frontier_order(neo4j_store: Neo4jStore) -> None:
    calls = [make_node(Label.TOOL_CALL, f"subtask:e{i}") for i in range(3)]
    codes = [make_node(Label.CODE, f"e{i}") for i in range(3)]
    edges = tuple(
        EdgeRecord(EdgeType.PRODUCES, call.id, code.id)
        for call, code in zip(calls, codes, strict=True)
    )
    await put(neo4j_store, *calls, *codes, edges=edges)

    out = await neo4j_store.expand(
        [calls[2].id, calls[0].id, "Task:missing"], EdgeType.PRODUCES, Direction.OUT
    )
    among = await neo4j_store.edges_among([calls[0].id, codes[0].id, codes[1].id])

    assert out == [edges[2], edges[0]]
    assert among == [edges[0]]
