"""Events arrive in any order and still converge to the in-order graph (SPEC §3.2).

Each test replays the same events in order into one session and in other orders into other
sessions, then compares the normalised subgraphs (``tests.graphql.replay``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests import builders as b
from tests.graphql.replay import Send, assert_order_independent

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient


async def goal(gql: GraphQLClient, s: str) -> None:
    await b.first_message(gql, s)


async def upload_data(gql: GraphQLClient, s: str) -> None:
    await b.upload(gql, s, "data.csv")


def run(name: str, finished: float) -> Send:
    async def send(gql: GraphQLClient, s: str) -> None:
        await b.execution(gql, s, f"{name}-{s}", finished)

    return send


def produce(name: str, finished: float, artifact: str, version: int) -> Send:
    async def send(gql: GraphQLClient, s: str) -> None:
        produced = b.artifact(f"{artifact}-{s}", version)
        await b.execution(gql, s, f"{name}-{s}", finished, artifacts=[produced])

    return send


async def scope_start(gql: GraphQLClient, s: str) -> None:
    await b.subagent(gql, s, f"sub-{s}", "running", started=5)


async def scope_end(gql: GraphQLClient, s: str) -> None:
    await b.subagent(
        gql, s, f"sub-{s}", "completed", started=5, finishedAt=b.at(40), summary="done"
    )


async def child_execution(gql: GraphQLClient, s: str) -> None:
    figure = b.artifact(f"fig-{s}")
    await b.execution(gql, s, f"c1-{s}", 10, parentSubagentId=f"sub-{s}", artifacts=[figure])


async def child_search(gql: GraphQLClient, s: str) -> None:
    papers = [b.paper("doi:10.1/child")]
    await b.tool_call(gql, s, f"subtask:mcp:c2-{s}", 20, papers=papers, parentSubagentId=f"sub-{s}")


async def test_scope_start_children_and_terminal_in_any_order(gql: GraphQLClient) -> None:
    events = [scope_start, child_execution, child_search, scope_end]

    expected = await assert_order_independent(gql, events)

    nodes, edges = expected
    assert nodes["Task:subtask:subagent:sub-<S>"][0] == "TASK"
    assert '"status": "completed"' in nodes["Task:subtask:subagent:sub-<S>"][1]
    contains = [(src, dst) for kind, src, dst, _ in edges if kind == "CONTAINS"]
    assert contains == [
        ("Task:subtask:subagent:sub-<S>", "ToolCall:subtask:subagent:sub-<S>:exec:c1-<S>")
    ]


async def test_first_message_and_upload_after_the_executions(gql: GraphQLClient) -> None:
    events = [goal, upload_data, run("e1", 10), run("e2", 20)]

    _, edges = await assert_order_independent(gql, events)

    assert ("NEXT", "ResearchGoal:goal:session:<S>", "ToolCall:subtask:e1-<S>") in {
        edge[:3] for edge in edges
    }
    assert (
        "FEEDS",
        "SourceFile:source_file:session:<S>:data.csv",
        "ResearchGoal:goal:session:<S>",
    ) in {edge[:3] for edge in edges}


async def test_main_chain_steps_in_any_order(gql: GraphQLClient) -> None:
    events = [goal, run("e1", 10), run("e2", 20), run("e3", 30)]

    _, edges = await assert_order_independent(gql, events)

    assert [edge[1:3] for edge in edges if edge[0] == "NEXT"] == [
        ("ResearchGoal:goal:session:<S>", "ToolCall:subtask:e1-<S>"),
        ("ToolCall:subtask:e1-<S>", "ToolCall:subtask:e2-<S>"),
        ("ToolCall:subtask:e2-<S>", "ToolCall:subtask:e3-<S>"),
    ]


async def test_artifact_v1_after_v2(gql: GraphQLClient) -> None:
    events = [produce("e1", 10, "fig", 1), produce("e2", 20, "fig", 2)]

    _, edges = await assert_order_independent(gql, events)

    assert [edge[1:3] for edge in edges if edge[0] == "SUPERSEDES"] == [
        ("Artifact:fig-<S>#v2", "Artifact:fig-<S>#v1")
    ]


async def test_versions_v1_v3_then_v2_rethread_supersedes(gql: GraphQLClient) -> None:
    events = [
        produce("e1", 10, "fig", 1),
        produce("e2", 20, "fig", 2),
        produce("e3", 30, "fig", 3),
    ]

    _, edges = await assert_order_independent(gql, events)

    assert sorted(edge[1:3] for edge in edges if edge[0] == "SUPERSEDES") == [
        ("Artifact:fig-<S>#v2", "Artifact:fig-<S>#v1"),
        ("Artifact:fig-<S>#v3", "Artifact:fig-<S>#v2"),
    ]


async def read_data(gql: GraphQLClient, s: str) -> None:
    plot = b.artifact(
        f"plot-{s}", inputArtifactVersions=[{"artifactId": f"data-{s}", "version": 1}]
    )
    await b.execution(gql, s, f"e2-{s}", 20, artifacts=[plot])


async def test_input_version_after_the_code_that_read_it(gql: GraphQLClient) -> None:
    events = [produce("e1", 10, "data", 1), read_data]

    _, edges = await assert_order_independent(gql, events)

    assert ("INPUT", "Artifact:data-<S>#v1", "Code:e2-<S>") in {edge[:3] for edge in edges}


async def read_upload(gql: GraphQLClient, s: str) -> None:
    files = [b.file_id(s, "data.csv")]
    await b.execution(gql, s, f"e1-{s}", 10, inputSourceFiles=files)


async def test_source_file_uploaded_after_the_execution_that_read_it(
    gql: GraphQLClient,
) -> None:
    events = [goal, upload_data, read_upload]

    _, edges = await assert_order_independent(gql, events)

    assert ("INPUT", "SourceFile:source_file:session:<S>:data.csv", "Code:e1-<S>") in {
        edge[:3] for edge in edges
    }


async def claim_in_report(gql: GraphQLClient, s: str) -> None:
    result = await b.claim(
        gql, s, artifacts=[(f"fig-{s}", 1)], artifactId=f"report-{s}", artifactVersion=1
    )
    assert result["__typename"] == "ClaimDeclared", result


async def test_report_version_after_the_claim_stated_in_it(gql: GraphQLClient) -> None:
    events = [produce("e1", 10, "fig", 1), produce("e2", 20, "report", 1), claim_in_report]

    _, edges = await assert_order_independent(gql, events, orders=[(0, 2, 1)])

    assert ("STATED_IN", "CLAIM:TP53 drives the effect", "Artifact:report-<S>#v1") in {
        edge[:3] for edge in edges
    }


def search(name: str, retrieved: float) -> Send:
    async def send(gql: GraphQLClient, s: str) -> None:
        papers = [b.paper("https://example.org/a")]
        await b.tool_call(gql, s, f"subtask:mcp:{name}-{s}", retrieved, papers=papers)

    return send


async def test_a_paper_found_by_two_searches_in_any_order(gql: GraphQLClient) -> None:
    events = [search("q1", 10), search("q2", 20)]

    nodes, _ = await assert_order_independent(gql, events)

    _, props = nodes["Paper:<S>|https://example.org/a"]
    assert '"retrieval_count": 2' in props
