"""An end-to-end session through GraphQL: observe, declare, trace."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

TRACE = """query($id: ID!) { traceProvenance(nodeId: $id) { __typename
  ... on ProvenanceTrace { broken truncated reason chain { hop viaEdge isTerminal node { id } } }
  ... on Error { code message } } }"""


async def test_a_cited_figure_traces_back_to_the_goal(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "exec-1", 10, artifacts=[b.artifact("fig")])
    await b.tool_call(gql, "s1", "subtask:mcp:inv-1", 20, papers=[b.paper("doi:10.1/X")])

    evidence = await b.evidence(gql, "s1", link="https://doi.org/10.1/x")
    claim = await b.claim(
        gql, "s1", evidence_ids=[evidence["evidenceId"]], artifacts=[("fig", None)]
    )
    trace = (await gql.execute(TRACE, id="fig"))["traceProvenance"]

    assert claim["__typename"] == "ClaimDeclared"
    assert [chip["kind"] for chip in claim["chipMap"]] == ["EVIDENCE", "ARTIFACT"]
    assert trace["broken"] is False
    assert trace["chain"][-1]["node"]["id"] == "ResearchGoal:goal:session:s1"
