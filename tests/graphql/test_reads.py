"""Reading a session: identity, lookups, bounded lists and timestamps (SPEC §2.1, §3.5, §4)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

PAGE = """query($first: Int, $after: String) {
  nodesByType(labels: [TOOL_CALL], sessionId: "s1", first: $first, after: $after) {
    __typename ... on NodeList { total truncated endCursor nodes { id } }
    ... on InvalidInput { field } } }"""

SUBGRAPH_PAGE = """query($first: Int) { subgraph(sessionId: "s1", first: $first) { __typename
  ... on Subgraph { total truncated nodes { id } } ... on InvalidInput { field } } }"""


async def steps(gql: GraphQLClient, count: int) -> None:
    for index in range(count):
        await b.execution(gql, "s1", f"e{index}", 10 + index)


@pytest.mark.parametrize(("count", "truncated"), [(2, False), (3, True)])
async def test_subgraph_is_truncated_only_when_more_nodes_exist(
    gql: GraphQLClient, count: int, truncated: bool
) -> None:
    await b.first_message(gql, "s1")
    await b.upload(gql, "s1", "a.csv")
    if count == 3:
        await b.upload(gql, "s1", "b.csv")

    found = (await gql.execute(SUBGRAPH_PAGE, first=2))["subgraph"]

    assert (len(found["nodes"]), found["total"], found["truncated"]) == (2, count, truncated)


async def test_pages_continue_where_the_cursor_points(gql: GraphQLClient) -> None:
    await steps(gql, 3)

    first = (await gql.execute(PAGE, first=2))["nodesByType"]
    rest = (await gql.execute(PAGE, first=2, after=first["endCursor"]))["nodesByType"]

    seen = [n["id"] for n in first["nodes"]] + [n["id"] for n in rest["nodes"]]
    assert (first["truncated"], rest["truncated"], rest["endCursor"]) == (True, False, None)
    assert sorted(seen) == ["ToolCall:subtask:e0", "ToolCall:subtask:e1", "ToolCall:subtask:e2"]


@pytest.mark.parametrize("first", [0, -1, 100_000])
async def test_a_page_size_out_of_range_is_invalid_input(gql: GraphQLClient, first: int) -> None:
    listed = (await gql.execute(PAGE, first=first))["nodesByType"]
    graph = (await gql.execute(SUBGRAPH_PAGE, first=first))["subgraph"]

    assert listed == {"__typename": "InvalidInput", "field": "first"}
    assert graph == {"__typename": "InvalidInput", "field": "first"}


async def test_a_foreign_cursor_is_invalid_input(gql: GraphQLClient) -> None:
    found = (await gql.execute(PAGE, first=2, after="not-a-cursor"))["nodesByType"]

    assert found == {"__typename": "InvalidInput", "field": "after"}


async def test_a_node_resolves_by_global_id_and_by_domain_key(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig")])

    by_id = await b.node(gql, "Code:e1")
    by_key = await b.node(gql, "e1")
    step = await b.node(gql, "subtask:e1")

    assert (by_id["id"], by_id["key"], by_id["label"]) == ("Code:e1", "e1", "CODE")
    assert by_key["id"] == "Code:e1"
    assert step["id"] == "ToolCall:subtask:e1"


async def test_a_paper_id_carries_its_session(gql: GraphQLClient) -> None:
    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[b.paper("x.org/a")])
    await b.tool_call(gql, "s2", "subtask:mcp:q2", papers=[b.paper("x.org/a")])

    in_s2 = await b.node(gql, "https://x.org/a", session="s2")
    newest = await b.node(gql, "https://x.org/a")
    wrong = await b.node(gql, "Paper:s1|https://x.org/a", session="s2")

    assert (in_s2["id"], in_s2["key"]) == ("Paper:s2|https://x.org/a", "https://x.org/a")
    assert newest["id"] == "Paper:s2|https://x.org/a"
    assert wrong["__typename"] == "NodeNotFound"


async def test_a_chain_in_one_session_does_not_reach_a_paper_of_another(
    gql: GraphQLClient,
) -> None:
    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[b.paper("x.org/a")])

    found = await b.chain(gql, "https://x.org/a", "VIEW_SEARCHING_TASK", session="s2")

    assert found["__typename"] == "NodeNotFound"


async def test_a_goal_with_its_own_id_gets_the_files_and_the_chain(gql: GraphQLClient) -> None:
    await b.upload(gql, "s1", "data.csv")
    await b.execution(gql, "s1", "e1", 10)

    await b.first_message(gql, "s1", goalId="goal:custom-1")

    graph = await b.subgraph(gql, "s1")
    goal = "ResearchGoal:goal:custom-1"
    assert b.edges_of(graph, "FEEDS") == {("SourceFile:source_file:session:s1:data.csv", goal)}
    assert b.edges_of(graph, "NEXT") == {(goal, "ToolCall:subtask:e1")}


TIMES = """query($s: String!) { subgraph(sessionId: $s) { ... on Subgraph { nodes {
  id createdAt
  ... on ResearchGoal { sentAt } ... on SourceFile { uploadedAt }
  ... on Task { startedAt finishedAt } ... on ToolCall { startedAt finishedAt retrievedAt }
  ... on Code { startedAt finishedAt } } } } }"""


async def every_label(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1", createdAt=b.at(1))
    await b.upload(gql, "s1", "paper.pdf", "application/pdf")
    await b.subagent(gql, "s1", "sub-1", "completed", started=2, finishedAt=b.at(3))
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig")])
    await b.tool_call(gql, "s1", "subtask:mcp:q1", 20, papers=[b.paper("x.org/a")])
    evidence = await b.evidence(gql, "s1", link="x.org/a")
    await b.claim(gql, "s1", evidence_ids=[evidence["evidenceId"]])


async def test_created_at_is_server_time_and_caller_times_are_kept(gql: GraphQLClient) -> None:
    started = datetime.now(UTC)

    await every_label(gql)

    nodes = {
        n["id"].split(":")[0]: n for n in (await gql.execute(TIMES, s="s1"))["subgraph"]["nodes"]
    }
    assert len(nodes) == 9
    assert all(datetime.fromisoformat(n["createdAt"]) >= started for n in nodes.values())
    caller: dict[str, Any] = {
        "ResearchGoal": {"sentAt": b.at(1)},
        "SourceFile": {"uploadedAt": b.at(0)},
        "Task": {"startedAt": b.at(2), "finishedAt": b.at(3)},
        "Code": {"startedAt": b.at(9), "finishedAt": b.at(10)},
    }
    for label, times in caller.items():
        assert {k: nodes[label][k] for k in times} == times
    assert nodes["ToolCall"]["finishedAt"] in {b.at(10), b.at(20)}


NESTED = """{ session(sessionId: "s1") { ... on Session { nodes(first: -1) { total } } } }"""


async def test_a_bad_argument_below_a_root_field_is_named_not_masked(
    gql: GraphQLClient,
) -> None:
    await b.execution(gql, "s1", "e1")

    result = await gql.raw(NESTED)

    (error,) = result.errors
    assert error.message != "Unexpected error."
    assert error.extensions == {"code": "INVALID_INPUT", "field": "first"}
