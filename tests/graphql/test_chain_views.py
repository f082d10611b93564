"""getChain / chainExists: the per-button walks (reference §7.1 42-52, SPEC §4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

A, B, UNCITED = "https://x.org/a", "https://x.org/b", "https://x.org/c"
PAPER_A, PAPER_B = f"Paper:s1|{A}", f"Paper:s1|{B}"
REPORT = "Artifact:report#v1"


def ids(found: dict[str, Any]) -> set[str]:
    return {node["id"] for node in found["nodes"]}


def labels(found: dict[str, Any]) -> set[str]:
    return {node["label"] for node in found["nodes"]}


def edges(found: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(e["type"], e["source"], e["target"]) for e in found["edges"]}


@dataclass(frozen=True)
class Report:
    evidence_a: str
    evidence_b: str
    claim_a: str
    claim_b: str


async def report_session(gql: GraphQLClient) -> Report:
    """Goal; e1 makes fig and an uncited sibling; q1 finds papers A, B and an uncited one; A and
    B each back one claim through one evidence; both claims are stated in report v1 (by e2)."""
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig"), b.artifact("sibling")])
    found_papers = [b.paper(A), b.paper(B), b.paper(UNCITED)]
    await b.tool_call(gql, "s1", "subtask:mcp:q1", 20, papers=found_papers)
    await b.execution(gql, "s1", "e2", 30, artifacts=[b.artifact("report")])
    found: list[str] = []
    for link in (A, B):
        evidence = (await b.evidence(gql, "s1", link=link, content=f"from {link}"))["evidenceId"]
        claim = await b.claim(
            gql,
            "s1",
            content=f"claim {link}",
            evidence_ids=[evidence],
            artifactId="report",
            artifactVersion=1,
        )
        found += [f"Evidence:{evidence}", f"Claim:{claim['claimId']}"]
    return Report(found[0], found[2], found[1], found[3])


async def test_citing_artifact_from_a_paper_stays_on_its_branch(gql: GraphQLClient) -> None:
    r = await report_session(gql)

    found = await b.chain(gql, PAPER_A, "VIEW_CITING_ARTIFACT")

    assert ids(found) == {PAPER_A, r.evidence_a, r.claim_a, REPORT}
    assert edges(found) == {
        ("EXTRACTS", PAPER_A, r.evidence_a),
        ("SUPPORTS", r.evidence_a, r.claim_a),
        ("STATED_IN", r.claim_a, REPORT),
    }


async def test_extracted_evidence_is_the_papers_own(gql: GraphQLClient) -> None:
    r = await report_session(gql)

    found = await b.chain(gql, PAPER_A, "VIEW_EXTRACTED_EVIDENCE")

    assert ids(found) == {PAPER_A, r.evidence_a}


async def test_an_uncited_paper_shows_its_searching_task_and_nothing_else(
    gql: GraphQLClient,
) -> None:
    await report_session(gql)

    found = await b.chain(gql, f"Paper:s1|{UNCITED}", "VIEW_SEARCHING_TASK")

    assert ids(found) == {f"Paper:s1|{UNCITED}", "ToolCall:subtask:mcp:q1"}


async def test_a_report_reaches_its_code_and_its_cited_papers(gql: GraphQLClient) -> None:
    r = await report_session(gql)

    code = await b.chain(gql, "report", "VIEW_PRODUCING_CODE")
    cited = await b.chain(gql, "report", "VIEW_CITED_PAPER")

    assert ids(code) == {REPORT, "Code:e2"}
    assert ids(cited) == {
        REPORT,
        r.claim_a,
        r.claim_b,
        r.evidence_a,
        r.evidence_b,
        PAPER_A,
        PAPER_B,
    }


async def test_producing_code_of_a_figure_excludes_its_sibling(gql: GraphQLClient) -> None:
    await report_session(gql)

    found = await b.chain(gql, "fig", "VIEW_PRODUCING_CODE")

    assert ids(found) == {"Artifact:fig#v1", "Code:e1"}


async def test_a_cited_figure_shows_its_claim(gql: GraphQLClient) -> None:
    await report_session(gql)
    claim = await b.claim(gql, "s1", content="fig shows it", artifacts=[("fig", 1)])

    found = await b.chain(gql, "fig", "VIEW_CITING_CLAIM_FOR_ARTIFACT")

    node = f"Claim:{claim['claimId']}"
    assert ids(found) == {"Artifact:fig#v1", node}
    assert edges(found) == {("SUPPORTS", "Artifact:fig#v1", node)}


async def test_related_task_of_a_figure_reaches_the_goal(gql: GraphQLClient) -> None:
    await report_session(gql)

    found = await b.chain(gql, "fig", "VIEW_RELATED_TASK")

    goal = "ResearchGoal:goal:session:s1"
    assert {"Code:e1", "ToolCall:subtask:e1", goal} <= ids(found)
    assert ("NEXT", goal, "ToolCall:subtask:e1") in edges(found)


CLAIM_KINDS = [
    "VIEW_CITING_EVIDENCE_FOR_CLAIM",
    "VIEW_CITING_SOURCE_FILE_FOR_CLAIM",
    "VIEW_CONTAINING_ARTIFACT",
]


async def test_an_artifact_backed_claim_has_no_evidence_button(gql: GraphQLClient) -> None:
    await report_session(gql)
    claim = await b.claim(gql, "s1", artifacts=[("fig", 1)], artifactId="report", artifactVersion=1)

    exists = await b.chain_exists(gql, claim["claimId"], CLAIM_KINDS)
    evidence = await b.chain(gql, claim["claimId"], "VIEW_CITING_EVIDENCE_FOR_CLAIM")
    report = await b.chain(gql, claim["claimId"], "VIEW_CONTAINING_ARTIFACT")

    assert exists == dict(zip(CLAIM_KINDS, [False, False, True], strict=True))
    assert evidence["nodes"] == []
    assert REPORT in ids(report)


async def test_a_claim_backed_only_by_a_csv_shows_its_file(gql: GraphQLClient) -> None:
    await b.upload(gql, "s1", "data.csv")
    claim = await b.claim(gql, "s1", files=[b.file_id("s1", "data.csv")])

    exists = await b.chain_exists(gql, claim["claimId"], CLAIM_KINDS)
    found = await b.chain(gql, claim["claimId"], "VIEW_CITING_SOURCE_FILE_FOR_CLAIM")

    assert exists == dict(zip(CLAIM_KINDS, [False, True, False], strict=True))
    assert labels(found) == {"CLAIM", "SOURCE_FILE"}
    assert "SourceFile:source_file:session:s1:data.csv" in ids(found)


async def test_a_claim_shows_all_its_evidence_and_only_evidence(gql: GraphQLClient) -> None:
    r = await report_session(gql)
    evidence = [r.evidence_a.removeprefix("Evidence:"), r.evidence_b.removeprefix("Evidence:")]
    claim = await b.claim(gql, "s1", evidence_ids=evidence, artifacts=[("fig", 1)])

    found = await b.chain(gql, claim["claimId"], "VIEW_CITING_EVIDENCE_FOR_CLAIM")

    assert ids(found) == {f"Claim:{claim['claimId']}", r.evidence_a, r.evidence_b}


async def test_searching_task_picks_the_newest_search(gql: GraphQLClient) -> None:
    await b.tool_call(gql, "s1", "subtask:mcp:q1", 20, papers=[b.paper(A)])
    await b.tool_call(gql, "s1", "subtask:mcp:q2", 10, papers=[b.paper(A)])

    found = [await b.chain(gql, PAPER_A, "VIEW_SEARCHING_TASK") for _ in range(3)]

    # The newest by its own retrieval time (SPEC §4), not the one that arrived last.
    assert all(ids(chain) == {PAPER_A, "ToolCall:subtask:mcp:q1"} for chain in found)


async def test_input_picks_the_newest_input(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("older")])
    await b.execution(gql, "s1", "e2", 20, artifacts=[b.artifact("newer")])
    reads = [{"artifactId": "newer", "version": 1}, {"artifactId": "older", "version": 1}]

    await b.execution(
        gql, "s1", "e3", 30, artifacts=[b.artifact("out", inputArtifactVersions=reads)]
    )

    found = await b.chain(gql, "e3", "VIEW_INPUT")
    assert ids(found) == {"Code:e3", "Artifact:newer#v1"}


async def test_containing_artifact_picks_the_newest_report_version(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig"), b.artifact("report")])
    await b.execution(gql, "s1", "e2", 20, artifacts=[b.artifact("report", 2)])
    claim = (await b.claim(gql, "s1", artifacts=[("fig", 1)]))["claimId"]
    await b.link_claims(gql, "s1", "report", 2, [claim])
    await b.link_claims(gql, "s1", "report", 1, [claim])

    found = await b.chain(gql, claim, "VIEW_CONTAINING_ARTIFACT")

    assert ids(found) == {f"Claim:{claim}", "Artifact:report#v2"}


async def test_goal_button_is_empty_without_a_goal(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10)
    await b.execution(gql, "s1", "e2", 20)

    found = await b.chain(gql, "subtask:e2", "VIEW_GOAL")

    assert found["nodes"] == []


async def test_goal_button_walks_the_steps_back_to_the_goal(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1", 10)
    await b.execution(gql, "s1", "e2", 20)

    found = await b.chain(gql, "subtask:e2", "VIEW_GOAL")
    previous = await b.chain(gql, "subtask:e2", "VIEW_PREV_TASK")

    goal = "ResearchGoal:goal:session:s1"
    assert ids(found) == {"ToolCall:subtask:e2", "ToolCall:subtask:e1", goal}
    assert ids(previous) == {"ToolCall:subtask:e2", "ToolCall:subtask:e1"}


async def test_source_paper_of_pdf_evidence_is_empty(gql: GraphQLClient) -> None:
    await b.upload(gql, "s1", "paper.pdf", "application/pdf")
    evidence = await b.evidence(gql, "s1", file=b.file_id("s1", "paper.pdf"))

    found = await b.chain(gql, evidence["evidenceId"], "VIEW_SOURCE_PAPER")

    assert found["nodes"] == []


async def test_paper_and_evidence_buttons_return_only_their_labels(
    gql: GraphQLClient,
) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig"), b.artifact("report")])
    claim = await b.claim(gql, "s1", artifacts=[("fig", 1)], artifactId="report", artifactVersion=1)

    papers = await b.chain(gql, "report", "VIEW_CITED_PAPER")
    evidence = await b.chain(gql, "report", "VIEW_CITING_EVIDENCE_FOR_ARTIFACT")
    claims = await b.chain(gql, "report", "VIEW_CONTAINED_CLAIMS")

    assert papers["nodes"] == evidence["nodes"] == []
    assert ids(claims) == {REPORT, f"Claim:{claim['claimId']}"}


async def test_an_unknown_node_is_node_not_found(gql: GraphQLClient) -> None:
    found = await b.chain(gql, "nothing-here", "VIEW_OUTPUT")

    assert (found["__typename"], found["nodeId"]) == ("NodeNotFound", "nothing-here")


async def test_a_blank_node_id_is_invalid_input_naming_it(gql: GraphQLClient) -> None:
    found = await b.chain(gql, "  ", "VIEW_OUTPUT")

    assert (found["__typename"], found["field"]) == ("InvalidInput", "nodeId")


@pytest.mark.parametrize("kind", ["viewOutput", "VIEW_CITED_PAPER_FOR_DB_RECORD"])
async def test_an_unknown_kind_is_a_graphql_validation_error(gql: GraphQLClient, kind: str) -> None:
    result = await gql.raw(b.CHAIN, id="e1", kind=kind)

    assert result.data is None
    assert "ChainKind" in result.errors[0].message
