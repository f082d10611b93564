"""Executions: goal, ToolCall, Code and artifact versions (reference §7.1 23-33, 39-40)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient


async def test_the_first_message_twice_keeps_one_goal_with_the_first_content(
    gql: GraphQLClient,
) -> None:
    first = await b.first_message(gql, "s1", "Study TP53")

    again = await b.first_message(gql, "s1", "Something else")

    graph = await b.subgraph(gql, "s1")
    assert (first["written"], again["written"]) == (1, 0)
    assert b.node_ids(graph) == {"ResearchGoal:goal:session:s1"}
    props = b.props_of(graph, "ResearchGoal:goal:session:s1")
    assert props["core_objective"] == "Study TP53"


async def test_two_executions_are_joined_by_one_temporal_next_edge(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10)

    await b.execution(gql, "s1", "e2", 20)

    edges = [e for e in (await b.subgraph(gql, "s1"))["edges"] if e["type"] == "NEXT"]
    assert [(e["source"], e["target"]) for e in edges] == [
        ("ToolCall:subtask:e1", "ToolCall:subtask:e2")
    ]
    assert edges[0]["properties"]["method"] == "temporal_chain"


async def test_a_main_execution_records_its_step_code_and_artifact(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig")], toolName="python")

    graph = await b.subgraph(gql, "s1")
    call = b.props_of(graph, "ToolCall:subtask:e1")
    assert (call["tool_type"], call["tool_name"], call["status"]) == (
        "execution",
        "python",
        "completed",
    )
    assert "task_type" not in call
    assert "parent_subtask_id" not in call
    assert b.edges_of(graph, "CONTAINS") == set()
    assert b.edges_of(graph, "PRODUCES") == {
        ("ToolCall:subtask:e1", "Code:e1"),
        ("Code:e1", "Artifact:fig#v1"),
    }


async def test_two_versions_are_two_nodes_linked_by_supersedes(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig", 1)])

    await b.execution(gql, "s1", "e2", 20, artifacts=[b.artifact("fig", 2)])

    graph = await b.subgraph(gql, "s1")
    assert b.node_ids(graph, "ARTIFACT") == {"Artifact:fig#v1", "Artifact:fig#v2"}
    assert b.props_of(graph, "Artifact:fig#v1")["logical_name"] == "fig"
    assert b.props_of(graph, "Artifact:fig#v2")["logical_name"] == "fig"
    assert b.edges_of(graph, "SUPERSEDES") == {("Artifact:fig#v2", "Artifact:fig#v1")}


async def test_supersedes_bridges_a_missing_version(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig", 1)])

    await b.execution(gql, "s1", "e3", 30, artifacts=[b.artifact("fig", 3)])

    graph = await b.subgraph(gql, "s1")
    assert b.edges_of(graph, "SUPERSEDES") == {("Artifact:fig#v3", "Artifact:fig#v1")}


async def test_a_replay_without_metadata_never_erases_it(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig", contentHash="h1")])

    bare = {"artifactId": "fig", "version": 1}
    await b.execution(gql, "s1", "e1", artifacts=[bare])

    props = b.props_of(await b.subgraph(gql, "s1"), "Artifact:fig#v1")
    assert (props["path"], props["content_hash"]) == ("outputs/fig.png", "h1")


async def producing_code(gql: GraphQLClient, node_id: str, version: int | None = None) -> set[str]:
    found = await b.chain(gql, node_id, "VIEW_PRODUCING_CODE", version=version)
    return {node["id"] for node in found["nodes"]}


async def test_a_chain_resolves_the_version_asked_for(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig", 1)])

    await b.execution(gql, "s1", "e2", 20, artifacts=[b.artifact("fig", 2)])

    assert await producing_code(gql, "fig", version=1) == {"Artifact:fig#v1", "Code:e1"}
    assert await producing_code(gql, "fig") == {"Artifact:fig#v2", "Code:e2"}
    assert await producing_code(gql, "fig#v1") == {"Artifact:fig#v1", "Code:e1"}
    assert await producing_code(gql, "fig#v1", version=2) == {"Artifact:fig#v2", "Code:e2"}


PROVENANCE = """query($a: String!, $v: Int!) { artifactProvenance(artifactId: $a, version: $v) {
  __typename
  ... on ArtifactProvenance { artifact { contentHash turnId }
      code { codeHash stdoutHash stderrHash envHash exitCode status turnId }
      toolCall { turnId } dependencies { id } }
  ... on NodeNotFound { nodeId } ... on InvalidInput { field } } }"""


async def provenance(gql: GraphQLClient, artifact: str, version: int = 1) -> dict[str, Any]:
    result: dict[str, Any] = (await gql.execute(PROVENANCE, a=artifact, v=version))[
        "artifactProvenance"
    ]
    return result


async def test_provenance_lists_the_inputs_the_code_read(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("squares")])
    inputs = [{"artifactId": "squares", "version": 1}]

    await b.execution(
        gql, "s1", "e2", 20, artifacts=[b.artifact("plot", inputArtifactVersions=inputs)]
    )

    assert (await provenance(gql, "plot"))["dependencies"] == [{"id": "Artifact:squares#v1"}]
    assert (await provenance(gql, "squares"))["dependencies"] == []
    assert b.edges_of(await b.subgraph(gql, "s1"), "INPUT") == {("Artifact:squares#v1", "Code:e2")}


async def test_provenance_returns_the_hashes_and_turns(gql: GraphQLClient) -> None:
    await b.execution(
        gql,
        "s1",
        "e1",
        artifacts=[b.artifact("fig", contentHash="c1", turnId="turn-a")],
        stdoutHash="o1",
        stderrHash="e1",
        envHash="v1",
        exitCode=0,
    )

    found = await provenance(gql, "fig")

    assert found["artifact"] == {"contentHash": "c1", "turnId": "turn-a"}
    assert found["code"] == {
        "codeHash": "hash-e1",
        "stdoutHash": "o1",
        "stderrHash": "e1",
        "envHash": "v1",
        "exitCode": 0,
        "status": "completed",
        "turnId": "turn-1",
    }
    assert found["toolCall"] == {"turnId": "turn-1"}


async def test_provenance_of_an_unknown_version_is_node_not_found(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig")])

    found = await provenance(gql, "fig", 2)

    assert found == {"__typename": "NodeNotFound", "nodeId": "fig#v2"}


async def test_provenance_validates_its_arguments(gql: GraphQLClient) -> None:
    blank = await provenance(gql, " ")

    zero = await provenance(gql, "fig", 0)

    assert blank == {"__typename": "InvalidInput", "field": "artifactId"}
    assert zero == {"__typename": "InvalidInput", "field": "version"}


async def test_only_hashes_and_routing_keys_are_stored(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig", contentHash="c1")])

    graph = await b.subgraph(gql, "s1")

    keys = {key for node in graph["nodes"] for key in node["properties"]}
    assert not keys & {"code", "stdout", "stderr", "packages", "abstract", "content"}
    assert {"code_hash", "turn_id", "content_hash"} <= keys


TIMES = """query { node(nodeId: "Code:e1") { ... on Code { createdAt startedAt finishedAt } } }"""


async def test_code_has_server_and_caller_times(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10)

    code = (await gql.execute(TIMES))["node"]

    assert code["createdAt"].startswith("20")
    assert code["startedAt"] == "2026-01-01T00:00:09+00:00"
    assert code["finishedAt"] == "2026-01-01T00:00:10+00:00"


SEQS = """query { step: node(nodeId: "ToolCall:subtask:e1") { ... on ToolCall { seq } }
  scope: node(nodeId: "Task:subtask:subagent:sub-1") { ... on Task { seq } } }"""


async def test_a_running_scope_after_a_finished_execution_comes_later(
    gql: GraphQLClient,
) -> None:
    await b.execution(gql, "s1", "e1", 10)

    await b.subagent(gql, "s1", "sub-1", "running", started=20)

    seqs = await gql.execute(SEQS)
    assert seqs["step"]["seq"] < seqs["scope"]["seq"]
    assert await b.session_chain(gql, "s1") == [
        "ToolCall:subtask:e1",
        "Task:subtask:subagent:sub-1",
    ]


async def test_declare_artifact_registers_a_version_of_the_code(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("data")])
    inputs = [{"artifactId": "data", "version": 1}]

    result = await b.declare_artifact(
        gql, "s1", "e1", b.artifact("data", 2, inputArtifactVersions=inputs)
    )

    graph = await b.subgraph(gql, "s1")
    assert result["artifact"] == {"id": "Artifact:data#v2"}
    assert ("Code:e1", "Artifact:data#v2") in b.edges_of(graph, "PRODUCES")
    assert b.edges_of(graph, "SUPERSEDES") == {("Artifact:data#v2", "Artifact:data#v1")}
    assert b.edges_of(graph, "INPUT") == {("Artifact:data#v1", "Code:e1")}


async def test_declare_artifact_before_its_execution_is_linked_when_it_arrives(
    gql: GraphQLClient,
) -> None:
    await b.declare_artifact(gql, "s1", "e1", b.artifact("fig"))

    await b.execution(gql, "s1", "e1", 10)

    assert ("Code:e1", "Artifact:fig#v1") in b.edges_of(await b.subgraph(gql, "s1"), "PRODUCES")


async def test_a_version_below_one_is_invalid_input_naming_the_field(gql: GraphQLClient) -> None:
    result = await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig", 0)])

    assert result["__typename"] == "InvalidInput"
    assert result["field"] == "input.producedArtifacts[0].version"
    assert (await b.subgraph(gql, "s1"))["total"] == 0
