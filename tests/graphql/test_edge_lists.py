"""Edge lists over several edge types return every edge they count (SPEC §4)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

LISTS = """{
  session(sessionId: "s1") { ... on Session { edges { total edges { type source target } } } }
  edgesByType(types: [NEXT, PRODUCES]) { ... on EdgeList { total edges { type source target } } }
}"""
EXPECTED = {
    ("NEXT", "ResearchGoal:goal:session:s1", "ToolCall:subtask:e1"),
    ("PRODUCES", "ToolCall:subtask:e1", "Code:e1"),
    ("PRODUCES", "Code:e1", "Artifact:fig#v1"),
}


async def test_a_list_of_several_edge_types_holds_every_edge_of_each(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig")])

    found = await gql.execute(LISTS)

    for listed in (found["session"]["edges"], found["edgesByType"]):
        assert listed["total"] == len(EXPECTED)
        assert {(e["type"], e["source"], e["target"]) for e in listed["edges"]} == EXPECTED


NEXT_EDGES = """{
  session(sessionId: "s1") { ... on Session { edges(types: [NEXT]) { edges { source target } } } }
  edgesByType(types: [NEXT], sessionId: "s1") { ... on EdgeList { edges { source target } } }
}"""


async def test_a_step_observed_again_between_the_same_steps_keeps_its_edges_and_their_order(
    gql: GraphQLClient,
) -> None:
    # Newest first on every backend: unlinked and linked again, its edges would be new ones.
    await b.first_message(gql, "s1")
    for execution, finished in (("x", 33), ("y", 1), ("z", 3600)):
        await b.execution(gql, "s1", execution, finished)
    before = await gql.execute(NEXT_EDGES)

    await b.execution(gql, "s1", "x", 43)  # later, but still between y and z

    assert await gql.execute(NEXT_EDGES) == before
    assert [e["target"] for e in before["session"]["edges"]["edges"]] == [
        "ToolCall:subtask:z",
        "ToolCall:subtask:x",
        "ToolCall:subtask:y",
    ]
    assert await b.session_chain(gql, "s1") == [
        "ToolCall:subtask:y",
        "ToolCall:subtask:x",
        "ToolCall:subtask:z",
    ]
