"""searchNodes, nodesByType, edgesByType: ranking, filters, bounded pages with cursors."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from resolvers.cleanup import cleanup_session
from resolvers.errors import InvalidInputError
from resolvers.events import PaperProduct
from resolvers.records import EdgeType, Label
from resolvers.search import (
    MAX_FIRST,
    MatchMode,
    decode_cursor,
    edges_by_type,
    encode_cursor,
    nodes_by_type,
    search_nodes,
)
from resolvers.text import MAX_TOKEN, query_terms, tokens
from tests.resolvers.builders import (
    artifact,
    call,
    code,
    execution,
    goal,
    paper,
    search,
    subagent,
)

if TYPE_CHECKING:
    from resolvers.records import NodeRecord, Page
    from resolvers.store import GraphStore

A = "https://example.org/a"
B = "https://example.org/b"
C = "https://example.org/c"


def found(page: Page[NodeRecord]) -> list[str]:
    return [node.id for node in page.items]


async def two_surveys(store: GraphStore) -> None:
    await search(
        store,
        "q1",
        10,
        [
            PaperProduct(A, title="A Survey on Multi-Agent Systems"),
            PaperProduct(B, title="Another Note on Surveys", abstract="a brief on prior work"),
        ],
    )


async def test_all_terms_keeps_only_nodes_matching_every_term(store: GraphStore) -> None:
    await two_surveys(store)

    every = await search_nodes(store, "A Survey on Multi-Agent Systems", mode=MatchMode.ALL_TERMS)
    anyone = await search_nodes(store, "A Survey on Multi-Agent Systems")

    assert found(every) == [paper(A)]
    assert set(found(anyone)) == {paper(A), paper(B)}


async def test_more_matched_terms_rank_first_then_the_better_field(store: GraphStore) -> None:
    await search(
        store,
        "q1",
        10,
        [
            PaperProduct(A, abstract="tp53 in lung cancer"),
            PaperProduct(B, title="tp53 mutations"),
            PaperProduct(C, title="tp53 and egfr"),
        ],
    )

    page = await search_nodes(store, "tp53 egfr", labels=[Label.PAPER])

    assert found(page) == [paper(C), paper(B), paper(A)]


async def test_equal_matches_rank_the_most_recent_first(store: GraphStore) -> None:
    await search(store, "q1", 10, [PaperProduct(A, title="kinase")])
    await search(store, "q2", 20, [PaperProduct(B, title="kinase")])

    page = await search_nodes(store, "kinase")

    assert found(page) == [paper(B), paper(A)]


async def test_terms_match_word_prefixes_not_substrings(store: GraphStore) -> None:
    await search(store, "q1", 10, [PaperProduct(A, title="We mention nothing")])

    page = await search_nodes(store, "on")

    assert found(page) == []


async def test_a_long_run_of_letters_is_found_by_its_start_and_by_itself(
    store: GraphStore,
) -> None:
    # Indexed by its first MAX_TOKEN characters: the whole run, its start, and nothing that
    # differs within them find it.
    run = "ab" * 1_000
    await search(store, "q1", 10, [PaperProduct(A, title=f"blob {run} end")])

    whole, start, other = [await search_nodes(store, q) for q in (run, run[:40], "ba" + run[2:100])]

    assert found(whole) == found(start) == [f"Paper:s1|{A}"]
    assert found(other) == []


def test_an_index_token_is_at_most_max_token_long() -> None:
    assert tokens("x" * 10_000 + " short") == {"x" * MAX_TOKEN, "short"}
    assert query_terms("y" * 500) == ["y" * MAX_TOKEN]


async def test_a_chinese_term_hits_a_scope_summary(store: GraphStore) -> None:
    scope = await subagent(store, "sub", 10, summary="完成了文献综述并整理结果")

    page = await search_nodes(store, "文献综述", session_id="s1")

    assert found(page) == [scope]


async def test_search_filters_by_session_and_label(store: GraphStore) -> None:
    await search(store, "q1", 10, [PaperProduct(A, title="kinase")], session="s1")
    await search(store, "q2", 10, [PaperProduct(A, title="kinase")], session="s2")
    await goal(store, objective="kinase inhibitors")

    in_s2 = await search_nodes(store, "kinase", session_id="s2")
    goals = await search_nodes(store, "kinase", labels=[Label.RESEARCH_GOAL])

    assert found(in_s2) == [paper(A, session="s2")]
    assert found(goals) == ["ResearchGoal:goal:session:s1"]


async def test_search_pages_with_a_cursor(store: GraphStore) -> None:
    await search(store, "q1", 10, [PaperProduct(A, title="kinase")])
    await search(store, "q2", 20, [PaperProduct(B, title="kinase")])
    await search(store, "q3", 30, [PaperProduct(C, title="kinase")])

    first = await search_nodes(store, "kinase", first=2)
    rest = await search_nodes(store, "kinase", first=2, after=first.end_cursor)

    assert (found(first), first.total, first.truncated) == ([paper(C), paper(B)], 3, True)
    assert (found(rest), rest.truncated, rest.end_cursor) == ([paper(A)], False, None)


async def test_ties_are_paged_by_id_without_gaps_or_repeats(store: GraphStore) -> None:
    links = [f"https://example.org/{name}" for name in "qbxdmae"]
    titles = ["kinase", "kinases", "kinase", "kinases", "kinase", "kinase", "kinases"]
    # One search: every paper has the same time and matches in its title.
    await search(
        store,
        "q1",
        10,
        [PaperProduct(link, title=title) for link, title in zip(links, titles, strict=True)],
    )
    await search(store, "q2", 20, [PaperProduct("https://example.org/new", title="kinase")])

    pages, after = [], None
    while True:
        page = await search_nodes(store, "kinase", first=2, after=after)
        pages.append(found(page))
        if page.end_cursor is None:
            break
        after = page.end_cursor

    ties = sorted(paper(link) for link in links)
    assert pages[0][0] == paper("https://example.org/new")
    assert [node for page in pages for node in page] == [pages[0][0], *ties]


@pytest.mark.parametrize("query", ["", "   ", "?!. --"])
async def test_a_query_without_terms_is_an_empty_page(store: GraphStore, query: str) -> None:
    await two_surveys(store)

    page = await search_nodes(store, query)

    assert (list(page.items), page.total, page.truncated) == ([], 0, False)


async def test_soft_deleted_nodes_are_not_found(store: GraphStore) -> None:
    await execution(store, "e1", 10, produces=[("kinase_plot", 1)], session="gone")
    await execution(store, "e2", 10, produces=[("kinase_table", 1)], session="kept")
    await cleanup_session(store, "gone")

    page = await search_nodes(store, "kinase")

    assert found(page) == [artifact("kinase_table")]


@pytest.mark.parametrize("first", [0, MAX_FIRST + 1])
async def test_first_out_of_range_is_invalid(store: GraphStore, first: int) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await search_nodes(store, "x", first=first)

    assert caught.value.field == "first"


@pytest.mark.parametrize("after", ["%%%", "bm90LWEtY3Vyc29y", encode_cursor(3)[:-2]])
def test_a_foreign_cursor_is_invalid(after: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        decode_cursor(after)

    assert caught.value.field == "after"


def test_a_cursor_round_trips() -> None:
    assert decode_cursor(encode_cursor(42)) == 42
    assert decode_cursor(None) == 0


async def test_nodes_by_type_lists_newest_first_and_pages(store: GraphStore) -> None:
    await execution(store, "e1", 10)
    await execution(store, "e2", 20)
    await goal(store)

    page = await nodes_by_type(store, [Label.CODE, Label.TOOL_CALL], first=3)
    rest = await nodes_by_type(store, [Label.CODE, Label.TOOL_CALL], after=page.end_cursor)

    assert found(page) == [code("e2"), call("e2"), code("e1")]
    assert (page.total, page.truncated) == (4, True)
    assert found(rest) == [call("e1")]
    assert rest.end_cursor is None


async def test_nodes_by_type_needs_a_label(store: GraphStore) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await nodes_by_type(store, [])

    assert caught.value.field == "labels"


async def test_edges_by_type_returns_edges_and_their_distinct_endpoints(
    store: GraphStore,
) -> None:
    await execution(store, "e1", 10, produces=[("fig", 1), ("table", 1)])
    await execution(store, "e2", 20, session="other")

    page, nodes = await edges_by_type(store, [EdgeType.PRODUCES], session_id="s1")

    assert {(edge.source, edge.target) for edge in page.items} == {
        (call("e1"), code("e1")),
        (code("e1"), artifact("fig")),
        (code("e1"), artifact("table")),
    }
    assert sorted(node.id for node in nodes) == sorted(
        [call("e1"), code("e1"), artifact("fig"), artifact("table")]
    )
    assert (page.total, page.truncated, page.end_cursor) == (3, False, None)


async def test_edges_of_several_types_are_newest_first_in_whatever_order_they_are_asked(
    store: GraphStore,
) -> None:
    # Each execution adds a ``next`` edge (the chain) and ``produces`` edges; the second's are
    # newer than every edge of the first, whichever their type.
    await execution(store, "e1", 10, produces=[("fig", 1)])
    await execution(store, "e2", 20, produces=[("table", 1)])
    first = {call("e1"), code("e1"), artifact("fig")}
    both = [EdgeType.NEXT, EdgeType.PRODUCES]

    for session_id in ("s1", None):
        asked, _ = await edges_by_type(store, both, session_id=session_id)
        reversed_, _ = await edges_by_type(store, both[::-1], session_id=session_id)
        paged = [
            edge
            for offset in range(asked.total)
            for edge in (
                await edges_by_type(
                    store, both, session_id=session_id, first=1, after=encode_cursor(offset)
                )
            )[0].items
        ]

        types = {edge.type for edge in asked.items}
        older = [edge.source in first and edge.target in first for edge in asked.items]
        assert types == set(both)
        assert reversed_.items == asked.items
        assert paged == asked.items
        assert older == sorted(older)  # every edge of e2's before every edge of e1's


async def test_edges_by_type_needs_a_type(store: GraphStore) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await edges_by_type(store, [])

    assert caught.value.field == "types"
