"""Input rules beyond types (SPEC §8, §3.5, §3.7): lengths per kind of field, non-empty list
items, a step's finish not before its start, times with a zone, safe link schemes and a
non-empty claim list. Each bad input answers ``InvalidInput`` naming the field (a search's
record is left out, SPEC §3.10) and writes nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from resolvers.validate import MAX_LABEL_LENGTH, MAX_NAME_LENGTH, MAX_YEAR_LENGTH
from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

SEARCH = (
    "__typename ... on Observed { written rejected { index field message } } "
    "... on Error { code message }"
)


async def _search(gql: GraphQLClient, paper: dict[str, Any]) -> dict[str, Any]:
    value = {
        "taskId": "subtask:mcp:q1",
        "sessionId": "s1",
        "turnId": "turn-1",
        "toolName": "mcp__europe-pmc__search",
        "toolType": "search",
        "retrievedAt": b.at(10),
        "products": [{"link": "https://x.org/good"}, paper],
    }
    return await b.mutate(gql, "observeToolCall", "ObserveToolCallInput", value, SEARCH)


async def _evidence(gql: GraphQLClient, link: str) -> dict[str, Any]:
    value = {
        "sessionId": "s1",
        "content": "TP53 is mutated",
        "locator": "p. 3",
        "evidenceType": "quote",
        "confidence": "high",
        "strength": "strong",
        "sourcePaperLink": link,
    }
    selection = "__typename ... on InvalidInput { field }"
    return await b.mutate(gql, "declareEvidence", "DeclareEvidenceInput", value, selection)


async def _papers(gql: GraphQLClient) -> set[str]:
    return b.node_ids(await b.subgraph(gql, "s1"), "PAPER")


@pytest.mark.parametrize(
    ("field", "at_limit", "over"),
    [
        ("year", "1" * MAX_YEAR_LENGTH, "1" * 100_000),
        ("title", "t" * MAX_NAME_LENGTH, "t" * (MAX_NAME_LENGTH + 1)),
        ("identifierType", "d" * MAX_LABEL_LENGTH, "d" * (MAX_LABEL_LENGTH + 1)),
        ("authors", ["a" * MAX_NAME_LENGTH], ["a" * (MAX_NAME_LENGTH + 1)]),
        ("authors", ["Ada Lovelace"], ["Ada Lovelace", " "]),
    ],
    ids=["year", "title", "kind", "author", "empty-author"],
)
async def test_a_paper_field_over_its_limit_leaves_the_record_out(
    gql: GraphQLClient, field: str, at_limit: Any, over: Any
) -> None:
    refused = await _search(gql, {"link": "https://x.org/bad", field: over})
    papers = await _papers(gql)
    kept = await _search(gql, {"link": "https://x.org/bad", field: at_limit})

    (rejected,) = refused["rejected"]
    assert rejected["field"].startswith(f"input.products[1].{field}")
    assert papers == {"Paper:s1|https://x.org/good"}
    assert kept["rejected"] == []
    assert "Paper:s1|https://x.org/bad" in await _papers(gql)


@pytest.mark.parametrize(
    "link",
    ["javascript:alert(1)", " JavaScript:alert(1)", "java\tscript:alert(1)", "data:text/html,x"],
)
async def test_a_link_that_would_run_code_is_refused(gql: GraphQLClient, link: str) -> None:
    refused = await _search(gql, {"link": link})
    evidence = await _evidence(gql, link)

    assert [r["field"] for r in refused["rejected"]] == ["input.products[1].link"]
    assert (evidence["__typename"], evidence["field"]) == ("InvalidInput", "input.sourcePaperLink")
    assert await _papers(gql) == {"Paper:s1|https://x.org/good"}


async def test_an_execution_finishing_before_it_started_is_refused(gql: GraphQLClient) -> None:
    refused = await b.execution(gql, "s1", "e1", 10, startedAt=b.at(11))
    subagent = await b.subagent(gql, "s1", "sa1", createdAt=b.at(11), finishedAt=b.at(10))

    assert (refused["__typename"], refused["field"]) == ("InvalidInput", "input.finishedAt")
    assert (subagent["__typename"], subagent["field"]) == ("InvalidInput", "input.finishedAt")
    assert "createdAt" in subagent["message"]
    assert (await b.subgraph(gql, "s1"))["nodes"] == []


@pytest.mark.parametrize("naive", ["2026-01-01T00:00:10", "2026-01-01"])
async def test_a_time_without_a_zone_is_refused(gql: GraphQLClient, naive: str) -> None:
    refused = await b.execution(gql, "s1", "e1", 10, finishedAt=naive, startedAt=b.at(0))

    assert (refused["__typename"], refused["field"]) == ("InvalidInput", "input.finishedAt")
    assert "zone" in refused["message"]
    assert (await b.subgraph(gql, "s1"))["nodes"] == []


async def test_an_empty_input_file_id_is_refused(gql: GraphQLClient) -> None:
    refused = await b.execution(gql, "s1", "e1", 10, inputSourceFiles=["a", ""])

    assert (refused["__typename"], refused["field"]) == (
        "InvalidInput",
        "input.inputSourceFiles[1]",
    )
    assert (await b.subgraph(gql, "s1"))["nodes"] == []


async def test_an_input_file_that_has_not_arrived_is_linked_when_it_does(
    gql: GraphQLClient,
) -> None:
    source = b.file_id("s1", "later.csv")
    read = await b.execution(gql, "s1", "e1", 10, inputSourceFiles=[source])

    await b.upload(gql, "s1", "later.csv")

    assert read["__typename"] == "Observed"
    graph = await b.subgraph(gql, "s1")
    assert b.edges_of(graph, "INPUT") == {(f"SourceFile:{source}", "Code:e1")}


async def test_linking_no_claims_is_refused_at_once(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("report")])
    value = {"sessionId": "s1", "artifactId": "missing", "artifactVersion": 1, "claimIds": []}

    refused = await b.mutate(
        gql,
        "linkClaimsToReport",
        "LinkClaimsToReportInput",
        value,
        "__typename ... on InvalidInput { field }",
    )

    assert refused == {"__typename": "InvalidInput", "field": "input.claimIds"}
