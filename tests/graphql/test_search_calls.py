"""Search and tool calls: ToolCalls producing per-session Papers (reference §7.2, §3.5)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

A = "https://europepmc.org/article/MED/123"
PAPER_A = f"Paper:s1|{A}"

PAPER = """query($id: ID!) { node(nodeId: $id) { __typename
  ... on Paper { link title abstract year retrievalCount firstRetrievedAt retrievedAt
                 foundBy { id } } } }"""


async def paper(gql: GraphQLClient, node_id: str = PAPER_A) -> dict[str, Any]:
    result: dict[str, Any] = (await gql.execute(PAPER, id=node_id))["node"]
    return result


async def test_a_paper_product_is_produced_by_its_tool_call(gql: GraphQLClient) -> None:
    result = await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[b.paper(f"http://{A[8:]}/")])

    graph = await b.subgraph(gql, "s1")
    assert result["written"] == 3  # ToolCall, Paper, produces
    assert b.edges_of(graph, "PRODUCES") == {("ToolCall:subtask:mcp:q1", PAPER_A)}
    found = await paper(gql)
    assert (found["retrievalCount"], found["retrievedAt"]) == (1, "2026-01-01T00:00:10+00:00")


async def test_a_call_without_products_still_writes_its_tool_call(gql: GraphQLClient) -> None:
    result = await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[])

    found = await b.node(gql, "ToolCall:subtask:mcp:q1")
    assert result["written"] == 1
    assert found["__typename"] == "ToolCall"
    assert found["properties"]["result_count"] == 0


async def test_legacy_tool_types_are_stored_verbatim(gql: GraphQLClient) -> None:
    await b.tool_call(
        gql, "s1", "subtask:mcp:q1", toolType="literature_search", papers=[b.paper(A)]
    )

    found = await b.node(gql, "ToolCall:subtask:mcp:q1")
    assert found["properties"]["tool_type"] == "literature_search"
    assert (await paper(gql))["retrievalCount"] == 1


async def test_the_same_tool_call_twice_counts_one_retrieval(gql: GraphQLClient) -> None:
    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[b.paper(A)])

    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[b.paper(A)])

    assert (await paper(gql))["retrievalCount"] == 1


async def test_two_tool_calls_finding_a_paper_count_two(gql: GraphQLClient) -> None:
    await b.tool_call(gql, "s1", "subtask:mcp:q1", 10, papers=[b.paper(A)])

    await b.tool_call(gql, "s1", "subtask:mcp:q2", 20, papers=[b.paper(A)])

    found = await paper(gql)
    assert found["retrievalCount"] == 2
    assert found["firstRetrievedAt"] == "2026-01-01T00:00:10+00:00"
    assert found["retrievedAt"] == "2026-01-01T00:00:20+00:00"
    assert {step["id"] for step in found["foundBy"]} == {
        "ToolCall:subtask:mcp:q1",
        "ToolCall:subtask:mcp:q2",
    }


async def test_duplicates_within_one_batch_count_once(gql: GraphQLClient) -> None:
    variants = [
        b.paper(A),
        b.paper("http://europepmc.org/article/MED/123/"),
        b.paper("HTTPS://EuropePMC.org/article/MED/123#abstract"),
        b.paper(A + "?utm_source=feed"),
    ]

    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=variants)

    graph = await b.subgraph(gql, "s1")
    assert b.node_ids(graph, "PAPER") == {PAPER_A}
    assert (await paper(gql))["retrievalCount"] == 1


async def test_later_metadata_fills_missing_fields_but_never_overwrites(
    gql: GraphQLClient,
) -> None:
    await b.tool_call(gql, "s1", "subtask:mcp:q1", 10, papers=[b.paper(A, "First title")])

    richer = b.paper(A, "Second title", abstract="An abstract", year="2020")
    await b.tool_call(gql, "s1", "subtask:mcp:q2", 20, papers=[richer])

    found = await paper(gql)
    assert (found["title"], found["abstract"], found["year"]) == (
        "First title",
        "An abstract",
        "2020",
    )


async def test_papers_are_per_session(gql: GraphQLClient) -> None:
    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[b.paper(A)])

    await b.tool_call(gql, "s2", "subtask:mcp:q2", papers=[b.paper(A)])

    assert (await paper(gql, PAPER_A))["retrievalCount"] == 1
    assert (await paper(gql, f"Paper:s2|{A}"))["retrievalCount"] == 1


async def test_a_search_inside_a_subagent_is_a_child_of_its_scope(gql: GraphQLClient) -> None:
    await b.subagent(gql, "s1", "sub-1")

    await b.tool_call(
        gql, "s1", "subtask:mcp:tc-child-1", papers=[b.paper(A)], parentSubagentId="sub-1"
    )

    graph = await b.subgraph(gql, "s1")
    child = "ToolCall:subtask:subagent:sub-1:exec:tc-child-1"
    props = b.props_of(graph, child)
    assert (props["tool_type"], props["tool_name"]) == ("search", "mcp__europe-pmc__search")
    assert props["parent_subtask_id"] == "subtask:subagent:sub-1"
    assert b.edges_of(graph, "CONTAINS") == {("Task:subtask:subagent:sub-1", child)}
    assert b.edges_of(graph, "PRODUCES") == {(child, PAPER_A)}


async def test_an_mcp_search_records_a_tool_call_and_its_papers(gql: GraphQLClient) -> None:
    records = [{"url": "doi:10.1038/X", "title": "X"}]

    result = await b.mcp_search(gql, "s1", "inv-1", records=records)

    graph = await b.subgraph(gql, "s1")
    assert result["__typename"] == "Observed"
    props = b.props_of(graph, "ToolCall:subtask:mcp:inv-1")
    assert (props["tool_type"], props["source"]) == ("search", "europe-pmc")
    assert b.node_ids(graph, "PAPER") == {"Paper:s1|https://doi.org/10.1038/x"}


async def test_a_blank_record_url_is_left_out_and_named(gql: GraphQLClient) -> None:
    records = [{"url": "doi:10.1038/X"}, {"url": " "}]

    result = await b.mcp_search(gql, "s1", "inv-1", records=records)

    assert result["__typename"] == "Observed"
    graph = await b.subgraph(gql, "s1")
    assert b.node_ids(graph, "PAPER") == {"Paper:s1|https://doi.org/10.1038/x"}
