"""Declares: evidence and claims validate against the session (SPEC §3.4, reference §7.1)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

A = "https://doi.org/10.1/a"
PAPER_A = f"Paper:s1|{A}"


async def paper_session(gql: GraphQLClient, session: str = "s1") -> None:
    await b.tool_call(gql, session, f"subtask:mcp:q-{session}", papers=[b.paper("doi:10.1/A")])


async def test_evidence_extracted_from_a_paper_of_the_session(gql: GraphQLClient) -> None:
    await paper_session(gql)

    result = await b.evidence(gql, "s1", link="https://dx.doi.org/10.1/A")

    graph = await b.subgraph(gql, "s1")
    evidence = f"Evidence:{result['evidenceId']}"
    assert b.edges_of(graph, "EXTRACTS") == {(PAPER_A, evidence)}
    assert b.props_of(graph, evidence)["source_paper_link"] == A


async def test_evidence_for_a_paper_of_another_session_is_rejected(gql: GraphQLClient) -> None:
    await paper_session(gql, "s1")
    await b.tool_call(gql, "s2", "subtask:mcp:other", papers=[])

    result = await b.evidence(gql, "s2", link=A)

    assert (result["__typename"], result["code"]) == ("DeclareRejected", "SOURCE_PAPER_NOT_FOUND")
    assert "search" in result["instruction"]
    assert b.node_ids(await b.subgraph(gql, "s2")) == {"ToolCall:subtask:mcp:other"}


async def test_the_same_evidence_declared_twice_is_one_node(gql: GraphQLClient) -> None:
    await paper_session(gql)
    first = await b.evidence(gql, "s1", link=A)
    before = await b.subgraph(gql, "s1")

    again = await b.evidence(gql, "s1", link=A)

    assert again["evidenceId"] == first["evidenceId"]
    assert await b.subgraph(gql, "s1") == before


async def test_a_claim_with_no_cites_is_rejected_with_an_instruction(gql: GraphQLClient) -> None:
    result = await b.claim(gql, "s1")

    assert (result["__typename"], result["code"]) == ("DeclareRejected", "NO_CITES_TARGET")
    assert "citesSourceFiles" in result["instruction"]
    assert "citesEvidence" in result["instruction"]


async def test_a_claim_citing_unknown_evidence_names_declare_evidence(gql: GraphQLClient) -> None:
    result = await b.claim(gql, "s1", evidence_ids=["never-declared"])

    assert (result["code"], result["alias"]) == ("EVIDENCE_NOT_FOUND", "e0")
    assert "declare_evidence" in result["instruction"]


async def test_a_claim_citing_an_unmirrored_artifact_names_list_artifacts(
    gql: GraphQLClient,
) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig")])

    result = await b.claim(gql, "s1", artifacts=[("fig", 2)])

    assert (result["__typename"], result["code"]) == (
        "DeclareRejected",
        "ARTIFACT_VERSION_NOT_FOUND",
    )
    assert "list_artifacts" in result["instruction"]


@pytest.mark.parametrize("version", [1, None], ids=["a version", "the latest"])
async def test_a_claim_citing_another_sessions_artifact_is_rejected_and_writes_nothing(
    gql: GraphQLClient, version: int | None
) -> None:
    # A ``supports`` edge into another session: that session's artifact would list the claim,
    # while the chains and traces of both sessions, walked inside one session, never see it.
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig")])
    await b.execution(gql, "s2", "e2", artifacts=[b.artifact("own")])
    before = (await b.subgraph(gql, "s1"), await b.subgraph(gql, "s2"))

    result = await b.claim(gql, "s2", artifacts=[("fig", version)])

    assert (result["__typename"], result["code"]) == (
        "DeclareRejected",
        "ARTIFACT_VERSION_NOT_FOUND",
    )
    assert "in this session" in result["message"]
    assert (await b.subgraph(gql, "s1"), await b.subgraph(gql, "s2")) == before


async def test_a_claim_citing_only_an_artifact_is_declared(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig"), b.artifact("fig", 2)])

    result = await b.claim(gql, "s1", artifacts=[("fig", None)])

    assert result["__typename"] == "ClaimDeclared"
    assert result["chipMap"] == [
        {
            "alias": "a0",
            "kind": "ARTIFACT",
            "id": "fig",
            "nodeId": "Artifact:fig#v2",
            "label": "a0",
            "version": 2,
        }
    ]


async def test_two_cites_under_one_alias_are_refused_naming_the_second(
    gql: GraphQLClient,
) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig"), b.artifact("fig", 2)])
    cites = [{"alias": "x", "artifactId": "fig", "version": v} for v in (1, 2)]

    result = await b.claim(gql, "s1", citesArtifacts=cites)
    claims = await gql.execute("{ nodesByType(labels: [CLAIM]) { ... on NodeList { total } } }")

    assert (result["__typename"], result["field"]) == (
        "InvalidInput",
        "input.citesArtifacts[1].alias",
    )
    assert claims["nodesByType"]["total"] == 0


async def test_the_same_claim_declared_twice_is_one_node(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig")])
    first = await b.claim(gql, "s1", artifacts=[("fig", 1)])
    before = await b.subgraph(gql, "s1")

    again = await b.claim(gql, "s1", artifacts=[("fig", 1)])

    assert again["claimId"] == first["claimId"]
    assert await b.subgraph(gql, "s1") == before


async def test_a_claim_supports_from_the_cited_version_and_states_in_the_report(
    gql: GraphQLClient,
) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig"), b.artifact("fig", 2)])
    await b.execution(gql, "s1", "e2", 20, artifacts=[b.artifact("report")])
    declared = await b.claim(gql, "s1", artifacts=[("fig", 1)])
    claim = f"Claim:{declared['claimId']}"

    await b.execution(gql, "s1", "e3", 30, artifacts=[b.artifact("report", 2)])
    linked = await b.link_claims(gql, "s1", "report", 2, [declared["claimId"]])

    graph = await b.subgraph(gql, "s1")
    assert linked == {"__typename": "ClaimsLinked", "linked": 1}
    assert b.edges_of(graph, "SUPPORTS") == {("Artifact:fig#v1", claim)}
    assert b.edges_of(graph, "STATED_IN") == {(claim, "Artifact:report#v2")}


async def test_a_claim_never_links_to_a_paper_directly(gql: GraphQLClient) -> None:
    await paper_session(gql)
    evidence = await b.evidence(gql, "s1", link=A)

    declared = await b.claim(gql, "s1", evidence_ids=[evidence["evidenceId"]])

    graph = await b.subgraph(gql, "s1")
    claim = f"Claim:{declared['claimId']}"
    assert b.edges_of(graph, "SUPPORTS") == {(f"Evidence:{evidence['evidenceId']}", claim)}
    assert declared["chipMap"][0]["kind"] == "EVIDENCE"


async def test_linking_to_a_missing_report_answers_after_the_wait(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig")])
    declared = await b.claim(gql, "s1", artifacts=[("fig", 1)])
    loop = asyncio.get_running_loop()
    started = loop.time()

    result = await b.link_claims(gql, "s1", "report", 1, [declared["claimId"]])

    assert (result["__typename"], result["code"]) == ("DeclareRejected", "ARTIFACT_NOT_FOUND")
    assert loop.time() - started >= 0.3
    assert b.edges_of(await b.subgraph(gql, "s1"), "STATED_IN") == set()


async def test_linking_waits_for_a_report_that_arrives_meanwhile(gql: GraphQLClient) -> None:
    # Room for a slow machine: the wait ends as soon as the report is there.
    gql.runtime.settings = replace(gql.runtime.settings, link_wait_seconds=30.0)
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig")])
    declared = await b.claim(gql, "s1", artifacts=[("fig", 1)])

    async def report_soon() -> None:
        await asyncio.sleep(0.1)
        await b.execution(gql, "s1", "e2", 20, artifacts=[b.artifact("report")])

    result, _ = await asyncio.gather(
        b.link_claims(gql, "s1", "report", 1, [declared["claimId"]]), report_soon()
    )

    assert result == {"__typename": "ClaimsLinked", "linked": 1}
    assert b.edges_of(await b.subgraph(gql, "s1"), "STATED_IN") == {
        (f"Claim:{declared['claimId']}", "Artifact:report#v1")
    }


async def test_linking_an_unknown_claim_is_rejected(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("report")])

    result = await b.link_claims(gql, "s1", "report", 1, ["no-such-claim"])

    assert (result["__typename"], result["code"]) == ("DeclareRejected", "CLAIM_NOT_FOUND")
    assert result["instruction"]


async def test_linking_twice_keeps_one_stated_in_edge(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig"), b.artifact("report")])
    declared = await b.claim(gql, "s1", artifacts=[("fig", 1)])
    await b.link_claims(gql, "s1", "report", 1, [declared["claimId"]])

    again = await b.link_claims(gql, "s1", "report", 1, [declared["claimId"]])

    assert again["linked"] == 1
    assert len(b.edges_of(await b.subgraph(gql, "s1"), "STATED_IN")) == 1


async def test_linking_without_an_artifact_version_is_a_validation_error(
    gql: GraphQLClient,
) -> None:
    document = """mutation { linkClaimsToReport(input: {sessionId: "s1", artifactId: "report",
      claimIds: ["c"]}) { __typename } }"""

    result = await gql.raw(document)

    assert result.data is None
    assert "artifactVersion" in result.errors[0].message
