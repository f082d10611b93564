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
