"""A re-sent event changes nothing; a terminal status never regresses (SPEC §3.1-3.2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests import builders as b

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.conftest import GraphQLClient

GRAPH = """query($s: String!) { subgraph(sessionId: $s, fold: false) { __typename
  ... on Subgraph { total
    nodes { id createdAt properties ... on ToolCall { seq } ... on Task { seq } }
                    edges { type source target properties } } } }"""


async def graph(gql: GraphQLClient, session: str) -> dict[str, Any]:
    result: dict[str, Any] = (await gql.execute(GRAPH, s=session))["subgraph"]
    return result


async def context(gql: GraphQLClient) -> None:
    """A session every event can connect to: goal, files, a scope, an earlier version."""
    await b.first_message(gql, "s1")
    await b.upload(gql, "s1", "data.csv")
    await b.subagent(gql, "s1", "sub-1", started=1)
    await b.execution(gql, "s1", "e0", 5, artifacts=[b.artifact("fig")])


EVENTS: dict[str, Callable[[GraphQLClient], Awaitable[dict[str, Any]]]] = {
    "upload": lambda gql: b.upload(gql, "s1", "more.csv", size=10, contentHash="h"),
    "first message": lambda gql: b.first_message(gql, "s1", "Study TP53"),
    "execution": lambda gql: b.execution(
        gql,
        "s1",
        "e1",
        10,
        inputSourceFiles=[b.file_id("s1", "data.csv"), b.file_id("s1", "later.csv")],
        artifacts=[
            b.artifact("fig", 2, inputArtifactVersions=[{"artifactId": "fig", "version": 1}]),
            b.artifact("table", 1, inputArtifactVersions=[{"artifactId": "x", "version": 3}]),
        ],
    ),
    "child execution": lambda gql: b.execution(
        gql, "s1", "e2", 12, parentSubagentId="sub-1", artifacts=[b.artifact("child-fig")]
    ),
    "tool call": lambda gql: b.tool_call(
        gql,
        "s1",
        "subtask:mcp:q1",
        20,
        papers=[b.paper("doi:10.1/A"), b.paper("https://doi.org/10.1/a"), b.paper("x.org/b")],
    ),
    "child tool call": lambda gql: b.tool_call(
        gql, "s1", "subtask:mcp:q2", 21, papers=[b.paper("x.org/c")], parentSubagentId="sub-1"
    ),
    # Its time is when it arrived: sent again, it keeps the first one's.
    "untimed search": lambda gql: b.tool_call(
        gql, "s1", "subtask:mcp:q3", papers=[b.paper("x.org/e")], retrievedAt=None
    ),
    "untimed mcp search": lambda gql: b.mcp_search(
        gql, "s1", "inv-2", records=[{"url": "x.org/f"}], retrievedAt=None
    ),
    "mcp search": lambda gql: b.mcp_search(
        gql, "s1", "inv-1", 22, records=[{"url": "x.org/d", "title": "D"}]
    ),
    "subagent start": lambda gql: b.subagent(gql, "s1", "sub-2", started=30),
    "subagent end": lambda gql: b.subagent(
        gql, "s1", "sub-3", "timed_out", started=31, finishedAt=b.at(35)
    ),
    "declare artifact": lambda gql: b.declare_artifact(
        gql, "s1", "e0", b.artifact("extra", 1, inputArtifactVersions=[])
    ),
}


@pytest.mark.parametrize("event", list(EVENTS))
async def test_a_resent_event_writes_nothing_and_changes_nothing(
    gql: GraphQLClient, event: str
) -> None:
    await context(gql)
    first = await EVENTS[event](gql)
    before = await graph(gql, "s1")

    again = await EVENTS[event](gql)
    after = await graph(gql, "s1")

    assert first["__typename"] in {"Observed", "ArtifactRegistered"}, first
    assert again["written"] == 0
    assert after == before


async def test_the_first_write_of_an_event_reports_what_it_wrote(gql: GraphQLClient) -> None:
    result = await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig")])

    assert result["written"] == 5  # ToolCall, Code, Artifact and two produces edges
    assert set(result["nodeIds"]) == {"ToolCall:subtask:e1", "Code:e1", "Artifact:fig#v1"}


async def status_of(gql: GraphQLClient, node_id: str) -> Any:
    return (await b.node(gql, node_id))["properties"]["status"]


TASK = """{ node(nodeId: "Task:subtask:subagent:sub-1") {
  ... on Task { status summary finishedAt } } }"""


async def test_a_subagent_start_after_its_end_keeps_the_terminal_status(
    gql: GraphQLClient,
) -> None:
    await b.subagent(gql, "s1", "sub-1", "completed", summary="done", finishedAt=b.at(9))

    await b.subagent(gql, "s1", "sub-1", "running")

    task = (await gql.execute(TASK))["node"]
    assert task == {"status": "completed", "summary": "done", "finishedAt": b.at(9)}


async def test_an_execution_resent_as_running_stays_completed(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, status="succeeded")

    await b.execution(gql, "s1", "e1", 10, status="running")

    assert await status_of(gql, "ToolCall:subtask:e1") == "completed"
    assert await status_of(gql, "Code:e1") == "completed"


async def test_a_child_execution_resent_as_running_stays_failed(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, status="failed", parentSubagentId="sub-1")

    await b.execution(gql, "s1", "e1", 10, status="running", parentSubagentId="sub-1")

    assert await status_of(gql, "ToolCall:subtask:subagent:sub-1:exec:e1") == "failed"


async def test_a_tool_call_resent_as_running_stays_completed(gql: GraphQLClient) -> None:
    await b.tool_call(gql, "s1", "subtask:mcp:q1", status="completed")

    await b.tool_call(gql, "s1", "subtask:mcp:q1", status="running")

    assert await status_of(gql, "ToolCall:subtask:mcp:q1") == "completed"


async def test_a_running_execution_completes_when_its_end_arrives(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, status="running")

    result = await b.execution(gql, "s1", "e1", 10, status="succeeded")

    assert result["written"] > 0
    assert await status_of(gql, "ToolCall:subtask:e1") == "completed"
