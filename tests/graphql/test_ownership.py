"""Ownership (SPEC §3.8): a node belongs to the session that created it; a write from another
session that would change it is refused whole, naming the key and the owner."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

OWNED = (
    "__typename ... on Observed { written nodeIds } ... on Error { code message } "
    "... on KeyOwnedByOtherSession { key nodeId ownerSessionId }"
)


async def _execution(gql: GraphQLClient, session: str, execution_id: str, **extra: Any) -> Any:
    value = {
        "executionId": execution_id,
        "sessionId": session,
        "turnId": "turn-1",
        "tool": f"tool-{session}",
        "codeHash": f"hash-{session}",
        "status": extra.pop("status", "succeeded"),
        "startedAt": b.at(1),
        "finishedAt": b.at(extra.pop("finished", 2)),
        **extra,
    }
    return await b.mutate(gql, "observeExecution", "ObserveExecutionInput", value, OWNED)


NODE = "query($id: ID!) { node(nodeId: $id) { ... on GraphNode { sessionId properties } } }"


async def _subagent(gql: GraphQLClient, session: str, subagent_id: str) -> Any:
    value = {
        "subagentId": subagent_id,
        "sessionId": session,
        "turnId": "turn-1",
        "objective": "o",
        "createdAt": b.at(0),
        "status": "running",
    }
    return await b.mutate(gql, "observeSubagent", "ObserveSubagentInput", value, OWNED)


async def _props(gql: GraphQLClient, node_id: str) -> dict[str, Any]:
    node = (await gql.execute(NODE, id=node_id))["node"]
    props: dict[str, Any] = node["properties"]
    return {"sessionId": node["sessionId"], **props}


async def test_another_session_reusing_an_execution_id_is_refused(gql: GraphQLClient) -> None:
    await _execution(gql, "A", "exec-1", producedArtifacts=[b.artifact("fig-a")])
    before = await _props(gql, "Code:exec-1"), await _props(gql, "ToolCall:subtask:exec-1")

    refused = await _execution(
        gql, "B", "exec-1", status="failed", finished=9, producedArtifacts=[b.artifact("fig-b")]
    )

    assert refused["__typename"] == "KeyOwnedByOtherSession"
    assert refused["code"] == "KEY_OWNED_BY_OTHER_SESSION"
    assert (refused["ownerSessionId"], refused["key"]) == ("A", "subtask:exec-1")
    after = await _props(gql, "Code:exec-1"), await _props(gql, "ToolCall:subtask:exec-1")
    assert after == before
    graph_b = await b.subgraph(gql, "B")
    assert graph_b["nodes"] == []  # nothing of the refused event was written


async def test_the_owner_resending_its_event_stays_idempotent(gql: GraphQLClient) -> None:
    first = await _execution(gql, "A", "exec-1")

    again = await _execution(gql, "A", "exec-1")

    assert again["__typename"] == "Observed"
    assert (again["written"], again["nodeIds"]) == (0, first["nodeIds"])


async def test_an_artifact_version_remirrored_by_another_session_is_refused(
    gql: GraphQLClient,
) -> None:
    await _execution(gql, "A", "exec-a", producedArtifacts=[b.artifact("fig", path="a.png")])

    refused = await _execution(
        gql, "B", "exec-b", producedArtifacts=[b.artifact("fig", path="b.png")]
    )

    assert refused["__typename"] == "KeyOwnedByOtherSession"
    assert (refused["key"], refused["nodeId"]) == ("fig#v1", "Artifact:fig#v1")
    artifact = await _props(gql, "Artifact:fig#v1")
    assert (artifact["sessionId"], artifact["path"]) == ("A", "a.png")
    assert (await b.subgraph(gql, "B"))["nodes"] == []


async def test_declaring_an_artifact_of_another_sessions_code_is_refused(
    gql: GraphQLClient,
) -> None:
    await _execution(gql, "A", "exec-a")

    refused = await b.mutate(
        gql,
        "declareArtifact",
        "DeclareArtifactInput",
        {"sessionId": "B", "executionId": "exec-a", "artifact": b.artifact("fig-b")},
        "__typename ... on Error { code } ... on KeyOwnedByOtherSession { ownerSessionId }",
    )

    assert refused == {
        "__typename": "KeyOwnedByOtherSession",
        "code": "KEY_OWNED_BY_OTHER_SESSION",
        "ownerSessionId": "A",
    }
    missing = await b.node(gql, "Artifact:fig-b#v1")
    assert missing["__typename"] == "NodeNotFound"


async def test_a_later_session_may_still_read_another_sessions_version(
    gql: GraphQLClient,
) -> None:
    await _execution(gql, "A", "exec-a", producedArtifacts=[b.artifact("data")])

    read = await _execution(
        gql,
        "B",
        "exec-b",
        producedArtifacts=[
            b.artifact("plot", inputArtifactVersions=[{"artifactId": "data", "version": 1}])
        ],
    )

    assert read["__typename"] == "Observed"
    graph = await b.subgraph(gql, "B")
    assert {n["id"] for n in graph["nodes"]} >= {"Code:exec-b", "Artifact:plot#v1"}
    edges = await gql.execute(
        "{ edgesByType(types: [INPUT]) { ... on EdgeList { edges { source target } } } }"
    )
    assert {"source": "Artifact:data#v1", "target": "Code:exec-b"} in edges["edgesByType"]["edges"]


async def test_concurrent_creators_of_one_key_leave_one_owner(gql: GraphQLClient) -> None:
    results = await asyncio.gather(
        *(_execution(gql, session, "exec-1") for session in ("A", "B", "C", "D"))
    )

    kinds = sorted(result["__typename"] for result in results)
    assert kinds == ["KeyOwnedByOtherSession"] * 3 + ["Observed"]
    (winner,) = [s for s, r in zip("ABCD", results, strict=True) if r["__typename"] == "Observed"]
    code = await _props(gql, "Code:exec-1")
    assert (code["sessionId"], code["tool"]) == (winner, f"tool-{winner}")
    owners = {r["ownerSessionId"] for r in results if r["__typename"] != "Observed"}
    assert owners == {winner}


SUPERSEDES = "{ edgesByType(types: [SUPERSEDES]) { ... on EdgeList { edges { source target } } } }"


async def _lineage(gql: GraphQLClient) -> set[tuple[str, str]]:
    edges = (await gql.execute(SUPERSEDES))["edgesByType"]["edges"]
    return {(edge["source"], edge["target"]) for edge in edges}


async def test_versions_of_another_session_never_join_its_lineage(gql: GraphQLClient) -> None:
    await _execution(gql, "B", "exec-b2", producedArtifacts=[b.artifact("fig", 2)])
    await _execution(gql, "A", "exec-a1", producedArtifacts=[b.artifact("fig", 1)])

    await _execution(gql, "A", "exec-a3", producedArtifacts=[b.artifact("fig", 3)])

    assert await _lineage(gql) == {("Artifact:fig#v3", "Artifact:fig#v1")}
    assert (await _props(gql, "Artifact:fig#v2"))["sessionId"] == "B"


async def test_a_goal_key_naming_another_session_is_refused_and_that_session_keeps_it(
    gql: GraphQLClient,
) -> None:
    squat = await b.first_message(gql, "B", goalId="goal:session:A")

    own = await b.first_message(gql, "A")

    assert (squat["__typename"], squat["field"]) == ("InvalidInput", "input.goalId")
    assert (await b.subgraph(gql, "B"))["nodes"] == []
    assert own["__typename"] == "Observed"
    assert (await _props(gql, "ResearchGoal:goal:session:A"))["sessionId"] == "A"


async def test_an_upload_key_naming_another_session_is_refused_and_that_session_keeps_it(
    gql: GraphQLClient,
) -> None:
    squat = await b.upload(gql, "B", "data.csv", fileId=b.file_id("A", "data.csv"))
    # A session id holding ":" would make the file id ambiguous ("A:b" + "c" is "A" + "b:c").
    prefix = await b.upload(gql, "A:b", "data.csv", fileId=b.file_id("A", "data.csv"))

    own = await b.upload(gql, "A", "data.csv")

    assert (squat["__typename"], squat["field"]) == ("InvalidInput", "input.fileId")
    assert (prefix["__typename"], prefix["field"]) == ("InvalidInput", "sessionId")
    assert prefix["message"] == "sessionId: must not contain ':' (file ids use it)"
    assert (await b.subgraph(gql, "B"))["nodes"] == []
    assert own["__typename"] == "Observed"
    assert (await _props(gql, "SourceFile:" + b.file_id("A", "data.csv")))["sessionId"] == "A"


async def test_keys_of_another_form_are_not_read_for_a_session(gql: GraphQLClient) -> None:
    goal = await b.first_message(gql, "B", goalId="goal:B:custom")
    upload = await b.upload(gql, "B", "d.csv", fileId="upload-7")

    assert goal["__typename"] == upload["__typename"] == "Observed"


@pytest.mark.parametrize("kind", ["execution", "tool_call"])
async def test_a_step_in_another_sessions_subagent_scope_is_refused(
    gql: GraphQLClient, kind: str
) -> None:
    await b.subagent(gql, "A", "sub-1")
    await b.execution(gql, "A", "exec-a", parentSubagentId="sub-1")
    before = await b.subgraph(gql, "A")

    if kind == "execution":
        refused = await _execution(gql, "B", "exec-b", parentSubagentId="sub-1")
    else:
        refused = await b.mutate(
            gql,
            "observeToolCall",
            "ObserveToolCallInput",
            {
                "taskId": "subtask:mcp:q1",
                "sessionId": "B",
                "turnId": "turn-1",
                "toolName": "mcp__europe-pmc__search",
                "toolType": "search",
                "retrievedAt": b.at(10),
                "parentSubagentId": "sub-1",
            },
            OWNED,
        )

    assert refused["__typename"] == "KeyOwnedByOtherSession"
    assert (refused["ownerSessionId"], refused["key"]) == ("A", "subtask:subagent:sub-1")
    assert (await b.subgraph(gql, "B"))["nodes"] == []
    assert await b.subgraph(gql, "A") == before


async def test_a_step_naming_a_subagent_not_observed_yet_is_kept_in_its_own_session(
    gql: GraphQLClient,
) -> None:
    # Out of order, the scope is not known yet: the step is accepted, as SPEC §3.2 wants.
    early = await _execution(gql, "B", "exec-b", parentSubagentId="sub-1")

    assert early["__typename"] == "Observed"
    assert b.node_ids(await b.subgraph(gql, "B")) >= {"ToolCall:subtask:subagent:sub-1:exec:exec-b"}


async def test_a_subagent_scope_is_the_session_s_whose_steps_named_it_first(
    gql: GraphQLClient,
) -> None:
    early = await _execution(gql, "A", "exec-a", parentSubagentId="sub-1")

    joined = await _execution(gql, "B", "exec-b", parentSubagentId="sub-1")
    taken = await _subagent(gql, "B", "sub-1")
    own = await _subagent(gql, "A", "sub-1")

    assert early["__typename"] == "Observed"
    for refused in (joined, taken):
        assert refused["__typename"] == "KeyOwnedByOtherSession"
        assert (refused["ownerSessionId"], refused["key"]) == ("A", "subtask:subagent:sub-1")
    assert (await b.subgraph(gql, "B"))["nodes"] == []
    assert own["__typename"] == "Observed"
    scope = await gql.execute(
        'query { node(nodeId: "subtask:subagent:sub-1") { ... on Task { sessionId '
        "firstChild { id } } } }"
    )
    assert scope["node"] == {
        "sessionId": "A",
        "firstChild": {"id": "ToolCall:subtask:subagent:sub-1:exec:exec-a"},
    }


async def test_an_artifact_declared_for_an_execution_another_session_observes_later_stays_apart(
    gql: GraphQLClient,
) -> None:
    # In the other order the declare is refused: the graph may not depend on which came first.
    declared = await b.declare_artifact(gql, "B", "exec-1", b.artifact("fig-b"))

    observed = await _execution(gql, "A", "exec-1")

    assert declared["__typename"] == "ArtifactRegistered"
    assert observed["__typename"] == "Observed"
    outputs = await gql.execute(
        'query { node(nodeId: "Code:exec-1") { ... on Code { outputs { id } } } }'
    )
    produced_by = await gql.execute(
        'query { node(nodeId: "Artifact:fig-b#v1") { ... on Artifact { producedBy { id } } } }'
    )
    assert outputs["node"]["outputs"] == []
    assert produced_by["node"]["producedBy"] is None


async def test_claims_of_one_session_are_never_stated_in_another_sessions_report(
    gql: GraphQLClient,
) -> None:
    await _execution(gql, "A", "exec-a", producedArtifacts=[b.artifact("report", 1)])
    await _execution(gql, "B", "exec-b", producedArtifacts=[b.artifact("fig-b", 1)])
    own = await b.claim(gql, "B", artifacts=[("fig-b", 1)])

    declared = await b.claim(
        gql,
        "B",
        content="stated there",
        artifacts=[("fig-b", 1)],
        artifactId="report",
        artifactVersion=1,
    )
    linked = await b.link_claims(gql, "B", "report", 1, [own["claimId"]])

    assert (declared["__typename"], declared["code"]) == (
        "KeyOwnedByOtherSession",
        "KEY_OWNED_BY_OTHER_SESSION",
    )
    assert (linked["__typename"], linked["code"]) == (
        "KeyOwnedByOtherSession",
        "KEY_OWNED_BY_OTHER_SESSION",
    )
    contained = await b.chain(gql, "Artifact:report#v1", "VIEW_CONTAINED_CLAIMS")
    assert contained.get("nodes", []) == []  # no claim of B in A's report
