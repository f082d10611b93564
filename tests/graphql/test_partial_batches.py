"""Batches accept what is valid (SPEC §3.10): a search with invalid records records the valid
ones and answers which records were left out, and why."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

SELECTION = (
    "__typename ... on Observed { written nodeIds rejected { index field message } } "
    "... on Error { code message }"
)


async def _search(gql: GraphQLClient, records: list[dict[str, str]]) -> dict[str, object]:
    value = {
        "invocationId": "q1",
        "sessionId": "s1",
        "turnId": "turn-1",
        "source": "europe-pmc",
        "retrievedAt": b.at(10),
        "records": records,
    }
    return await b.mutate(gql, "observeMcpSearch", "ObserveMcpSearchInput", value, SELECTION)


async def test_a_search_with_bad_records_keeps_the_good_ones(gql: GraphQLClient) -> None:
    records = [
        {"url": "https://x.org/1", "title": "Good"},
        {"url": "  ", "title": "Blank link"},
        {"url": "https://x.org/2", "title": "Bad\x00title"},
        {"url": "10.1000/abc", "title": "Also good"},
    ]

    result = await _search(gql, records)

    assert result["__typename"] == "Observed"
    assert result["rejected"] == [
        {"index": 1, "field": "input.records[1].url", "message": "must not be empty"},
        {"index": 2, "field": "input.records[2].title", "message": "contains control characters"},
    ]
    graph = await b.subgraph(gql, "s1")
    assert b.node_ids(graph, "PAPER") == {
        "Paper:s1|https://x.org/1",
        "Paper:s1|https://doi.org/10.1000/abc",
    }
    assert b.node_ids(graph, "TOOL_CALL") == {"ToolCall:subtask:mcp:q1"}


async def test_a_link_that_identifies_nothing_is_rejected(gql: GraphQLClient) -> None:
    junk = ["doi:", "https://", "10.", "?a=1", "https:///x"]
    result = await _search(gql, [*({"url": url} for url in junk), {"url": "https://x.org/1"}])

    assert result["rejected"] == [
        {"index": i, "field": f"input.records[{i}].url", "message": "identifies nothing"}
        for i in range(len(junk))
    ]
    assert b.node_ids(await b.subgraph(gql, "s1"), "PAPER") == {"Paper:s1|https://x.org/1"}


async def test_a_link_too_long_to_index_is_rejected_and_the_others_recorded(
    gql: GraphQLClient,
) -> None:
    # 4,000 characters, 12,000 bytes: a Paper id holding it is more than Neo4j indexes.
    long = "https://x.org/" + "\u6f22" * 4_000

    result = await _search(gql, [{"url": long}, {"url": "https://x.org/1"}])

    assert result["rejected"] == [
        {"index": 0, "field": "input.records[0].url", "message": "at most 4096 bytes in UTF-8"}
    ]
    graph = await b.subgraph(gql, "s1")
    assert b.node_ids(graph, "PAPER") == {"Paper:s1|https://x.org/1"}


async def test_a_link_that_normalises_past_the_limit_is_rejected_and_the_others_recorded(
    gql: GraphQLClient,
) -> None:
    # Under the limit as sent; escaped (a space becomes three bytes, an "é" six) it is not.
    spaced = "https://x.org/a" + " " * 2_000 + "b"
    accented = "https://x.org/" + "\u00e9" * 1_500
    records = [{"url": spaced}, {"url": accented}, {"url": "https://x.org/1"}]

    result = await _search(gql, records)

    message = "at most 4096 bytes in UTF-8 once normalised"
    assert result["rejected"] == [
        {"index": i, "field": f"input.records[{i}].url", "message": message} for i in (0, 1)
    ]
    graph = await b.subgraph(gql, "s1")
    assert b.node_ids(graph, "PAPER") == {"Paper:s1|https://x.org/1"}


async def test_a_tool_call_names_its_products(gql: GraphQLClient) -> None:
    papers = [b.paper(""), b.paper("https://x.org/1")]

    result = await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=papers)
    answer = await gql.execute(
        "mutation($input: ObserveToolCallInput!) { observeToolCall(input: $input) { "
        "... on Observed { rejected { index field } } } }",
        input={
            "taskId": "subtask:mcp:q1",
            "sessionId": "s1",
            "turnId": "turn-1",
            "toolName": "search",
            "toolType": "search",
            "products": papers,
        },
    )

    assert result["__typename"] == "Observed"
    assert answer["observeToolCall"]["rejected"] == [
        {"index": 0, "field": "input.products[0].link"}
    ]


async def test_a_clean_search_rejects_nothing(gql: GraphQLClient) -> None:
    result = await _search(gql, [{"url": "https://x.org/1"}])

    assert result["rejected"] == []
