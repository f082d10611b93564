"""Long chains are paged with a cursor, and every page keeps the chain's anchor."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from resolvers.chains import CHAIN_CAP, ChainKind, get_chain
from resolvers.errors import InvalidInputError
from tests.resolvers.builders import call, execution, goal, goal_id

if TYPE_CHECKING:
    from resolvers.records import GraphSlice
    from resolvers.store import GraphStore


async def _steps(store: GraphStore, count: int) -> list[str]:
    await goal(store)
    for index in range(count):
        await execution(store, f"e{index}", 10 + index)
    return [call(f"e{index}") for index in range(count)]


async def _pages(store: GraphStore, start: str, first: int) -> list[GraphSlice]:
    pages = [await get_chain(store, start, ChainKind.VIEW_GOAL, first=first)]
    while pages[-1].end_cursor is not None:
        after = pages[-1].end_cursor
        pages.append(await get_chain(store, start, ChainKind.VIEW_GOAL, first=first, after=after))
    return pages


async def test_every_page_holds_the_goal_and_the_pages_cover_the_chain(
    store: GraphStore,
) -> None:
    steps = await _steps(store, 12)

    pages = await _pages(store, steps[-1], first=5)

    assert [len(page.nodes) for page in pages] == [5, 5, 5, 4]  # source + goal + up to 3
    assert all(page.nodes[0].id == steps[-1] for page in pages)
    assert all(page.nodes[-1].id == goal_id() for page in pages)  # the goal ends every page
    rest = [node.id for page in pages for node in page.nodes[1:-1]]
    assert sorted(rest) == sorted(steps[:-1])  # each further step exactly once
    assert [page.truncated for page in pages] == [True, True, True, False]
    assert {page.total for page in pages} == {13}


async def test_page_edges_stay_among_the_page(store: GraphStore) -> None:
    steps = await _steps(store, 8)

    pages = await _pages(store, steps[-1], first=3)

    for page in pages:
        ids = {node.id for node in page.nodes}
        assert all(edge.source in ids and edge.target in ids for edge in page.edges)
    assert (goal_id(), steps[0]) in {(e.source, e.target) for e in pages[-1].edges}


async def test_a_chain_longer_than_the_cap_keeps_its_goal(store: GraphStore) -> None:
    steps = await _steps(store, CHAIN_CAP + 2)

    chain = await get_chain(store, steps[-1], ChainKind.VIEW_GOAL)

    assert goal_id() in {node.id for node in chain.nodes}
    assert (chain.total, chain.truncated, len(chain.nodes)) == (CHAIN_CAP + 3, True, CHAIN_CAP)
    assert chain.end_cursor is not None


@pytest.mark.parametrize(("first", "after"), [(0, None), (CHAIN_CAP + 1, None), (5, "bogus")])
async def test_bad_paging_arguments_are_invalid_input(
    store: GraphStore, first: int, after: str | None
) -> None:
    steps = await _steps(store, 2)

    with pytest.raises(InvalidInputError):
        await get_chain(store, steps[-1], ChainKind.VIEW_GOAL, first=first, after=after)
