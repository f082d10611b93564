"""Source resolution shared by node(), getChain, chainExists and traceProvenance."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from resolvers.cleanup import cleanup_session
from resolvers.errors import InvalidInputError, NodeNotFoundError
from resolvers.resolve import resolve_node
from tests.resolvers.builders import artifact, execution, goal, paper, search, upload

if TYPE_CHECKING:
    from resolvers.store import GraphStore


async def test_a_global_id_resolves_to_its_node(store: GraphStore) -> None:
    await execution(store, "e1", 10)

    node = await resolve_node(store, "Code:e1")

    assert node.id == "Code:e1"


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("subtask:e1", "ToolCall:subtask:e1"),
        ("e1", "Code:e1"),
        ("goal:session:s1", "ResearchGoal:goal:session:s1"),
        ("source_file:session:s1:data.csv", "SourceFile:source_file:session:s1:data.csv"),
    ],
)
async def test_a_domain_key_resolves(store: GraphStore, ref: str, expected: str) -> None:
    await goal(store)
    await upload(store, "data.csv")
    await execution(store, "e1", 10)

    node = await resolve_node(store, ref, session_id="s1")

    assert node.id == expected


async def test_a_paper_link_is_normalised_before_lookup(store: GraphStore) -> None:
    await search(store, "q1", 10, ["https://example.org/paper"])

    node = await resolve_node(store, "http://EXAMPLE.org/paper/#abstract", session_id="s1")

    assert node.id == paper("https://example.org/paper")


async def test_a_paper_global_id_resolves_in_its_session_only(store: GraphStore) -> None:
    await search(store, "q1", 10, ["https://example.org/paper"], session="s2")
    ref = paper("https://example.org/paper", session="s2")

    found = await resolve_node(store, ref)

    assert found.id == ref
    with pytest.raises(NodeNotFoundError):
        await resolve_node(store, ref, session_id="s1")


async def test_a_paper_global_id_never_names_a_paper_whose_link_is_that_id(
    store: GraphStore,
) -> None:
    ghost = paper("https://example.org/ghost", session="s2")  # s2 found no such Paper
    await search(store, "q1", 10, [ghost], session="s1")  # s1 found one whose link is that id

    with pytest.raises(NodeNotFoundError):
        await resolve_node(store, ghost)


async def test_artifact_versions_resolve_by_suffix_latest_and_explicit_version(
    store: GraphStore,
) -> None:
    await execution(store, "e1", 10, produces=[("fig", 1)])
    await execution(store, "e2", 20, produces=[("fig", 2)])

    by_suffix = await resolve_node(store, "fig#v1")
    latest = await resolve_node(store, "fig")
    explicit = await resolve_node(store, "fig#v2", version=1)

    assert (by_suffix.id, latest.id, explicit.id) == (
        artifact("fig", 1),
        artifact("fig", 2),
        artifact("fig", 1),
    )


async def test_an_ambiguous_key_without_session_is_the_most_recent(store: GraphStore) -> None:
    await search(store, "q1", 10, ["https://example.org/paper"], session="s1")
    await search(store, "q2", 10, ["https://example.org/paper"], session="s2")

    newest = await resolve_node(store, "https://example.org/paper")
    scoped = await resolve_node(store, "https://example.org/paper", session_id="s1")

    assert (newest.session_id, scoped.session_id) == ("s2", "s1")


async def test_a_soft_deleted_node_is_not_found(store: GraphStore) -> None:
    await execution(store, "e1", 10, produces=[("fig", 1)])
    await cleanup_session(store, "s1")

    with pytest.raises(NodeNotFoundError):
        await resolve_node(store, "fig#v1")


async def test_a_missing_node_is_not_found(store: GraphStore) -> None:
    with pytest.raises(NodeNotFoundError) as caught:
        await resolve_node(store, "nothing-here")

    assert caught.value.node_id == "nothing-here"


async def test_a_blank_reference_is_invalid_input(store: GraphStore) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await resolve_node(store, "   ")

    assert caught.value.field == "nodeId"
