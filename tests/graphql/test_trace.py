"""traceProvenance: witness path, exploration and verdict (SPEC §4, reference §7.1 41)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

GOAL = "ResearchGoal:goal:session:s1"
SCOPE = "Task:subtask:subagent:sub-1"


def steps(trace: dict[str, Any]) -> list[tuple[int, str, str, bool]]:
    return [(s["hop"], s["node"]["id"], s["viaEdge"], s["isTerminal"]) for s in trace["chain"]]


def path(trace: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(s["node"]["id"], s["viaEdge"], s["reachedFrom"]) for s in trace["path"]]


async def test_an_artifact_made_inside_a_subagent_traces_through_its_scope(
    gql: GraphQLClient,
) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1", 10)
    await b.subagent(gql, "s1", "sub-1", started=15)
    await b.execution(gql, "s1", "c1", 20, parentSubagentId="sub-1")
    await b.execution(gql, "s1", "c2", 30, parentSubagentId="sub-1", artifacts=[b.artifact("fig")])

    trace = await b.trace(gql, "fig")

    assert (trace["broken"], trace["truncated"]) == (False, False)
    assert steps(trace)[-1][1:] == (GOAL, "NEXT", True)
    assert (SCOPE, "CONTAINS") in {(s[1], s[2]) for s in steps(trace)}


async def test_a_cited_claim_traces_through_evidence_paper_and_search(
    gql: GraphQLClient,
) -> None:
    await b.first_message(gql, "s1")
    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[b.paper("x.org/a")])
    evidence = await b.evidence(gql, "s1", link="x.org/a")
    claim = await b.claim(gql, "s1", evidence_ids=[evidence["evidenceId"]])

    trace = await b.trace(gql, claim["claimId"])

    assert steps(trace) == [
        (1, f"Evidence:{evidence['evidenceId']}", "SUPPORTS", False),
        (2, "Paper:s1|https://x.org/a", "EXTRACTS", False),
        (3, "ToolCall:subtask:mcp:q1", "PRODUCES", False),
        (4, GOAL, "NEXT", True),
    ]
    assert trace["startNode"] == {"id": f"Claim:{claim['claimId']}"}


async def test_a_session_without_a_goal_is_broken_at_its_tail(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig")])

    trace = await b.trace(gql, "fig")

    assert (trace["broken"], trace["truncated"]) == (True, False)
    assert "subtask:e1" in trace["reason"]
    assert [s[1] for s in steps(trace)] == ["Code:e1", "ToolCall:subtask:e1"]


async def test_max_hops_truncates_without_breaking(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig")])

    trace = await b.trace(gql, "fig", hops=1)

    assert (trace["broken"], trace["truncated"]) == (False, True)
    assert steps(trace) == [(1, "Code:e1", "PRODUCES", False)]


async def test_a_start_that_is_the_target_has_an_empty_chain(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")

    trace = await b.trace(gql, "goal:session:s1")

    assert (trace["chain"], trace["broken"], trace["truncated"]) == ([], False, False)


async def test_a_trace_can_stop_at_another_label(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")
    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[b.paper("x.org/a")])
    evidence = await b.evidence(gql, "s1", link="x.org/a")

    trace = await b.trace(gql, evidence["evidenceId"], target="PAPER")

    assert steps(trace) == [(1, "Paper:s1|https://x.org/a", "EXTRACTS", True)]


async def test_an_uploaded_file_is_a_dead_end(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")
    await b.upload(gql, "s1", "data.csv")

    trace = await b.trace(gql, b.file_id("s1", "data.csv"))

    assert (trace["broken"], trace["path"], trace["chain"]) == (True, [], [])


async def test_a_late_step_lists_one_hop_back_and_every_edge_in_the_path(
    gql: GraphQLClient,
) -> None:
    await b.first_message(gql, "s1")
    for finished in range(10, 90, 10):
        await b.execution(gql, "s1", f"e{finished}", finished)
    await b.execution(gql, "s1", "last", 100, artifacts=[b.artifact("fig")])

    trace = await b.trace(gql, "fig")

    assert trace["broken"] is False
    assert [s[1] for s in steps(trace)] == ["Code:last", "ToolCall:subtask:last", GOAL]
    assert [node for node, _, _ in path(trace)] == [
        "Code:last",
        "ToolCall:subtask:last",
        *(f"ToolCall:subtask:e{finished}" for finished in range(80, 0, -10)),
        GOAL,
    ]


# The repros: a never-mirrored subagent that read an upload is not traceable; a scope
# in the main chain is found as a TASK; no step names an edge that is not stored.


async def test_a_never_mirrored_subagent_that_read_an_upload_is_broken(
    gql: GraphQLClient,
) -> None:
    await b.first_message(gql, "s1")
    await b.upload(gql, "s1", "d.csv")
    await b.execution(
        gql,
        "s1",
        "x0",
        10,
        parentSubagentId="never-mirrored",
        inputSourceFiles=[b.file_id("s1", "d.csv")],
        artifacts=[b.artifact("fig")],
    )

    trace = await b.trace(gql, "fig")

    assert (trace["broken"], trace["truncated"], trace["path"]) == (True, False, [])
    assert trace["reason"] == (
        "no upstream of ToolCall subtask:subagent:never-mirrored:exec:x0, "
        "SourceFile source_file:session:s1:d.csv"
    )


async def test_a_scope_in_the_main_chain_is_found_as_a_task(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1", 10)
    await b.subagent(gql, "s1", "sub-1", started=15)
    await b.execution(gql, "s1", "e2", 20)
    await b.execution(gql, "s1", "e3", 30, artifacts=[b.artifact("fig")])

    trace = await b.trace(gql, "fig", target="TASK")

    assert (trace["broken"], trace["truncated"]) == (False, False)
    assert path(trace) == [
        ("Code:e3", "PRODUCES", "Artifact:fig#v1"),
        ("ToolCall:subtask:e3", "PRODUCES", "Code:e3"),
        ("ToolCall:subtask:e2", "NEXT", "ToolCall:subtask:e3"),
        (SCOPE, "NEXT", "ToolCall:subtask:e2"),
    ]
    assert steps(trace)[-1] == (3, SCOPE, "NEXT", True)


async def test_no_step_names_an_edge_that_is_not_stored(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1", 10)
    await b.subagent(gql, "s1", "sub-1", started=15)
    await b.execution(gql, "s1", "c1", 20, parentSubagentId="sub-1")
    await b.execution(gql, "s1", "c2", 30, parentSubagentId="sub-1", artifacts=[b.artifact("f")])
    await b.execution(gql, "s1", "e2", 40)
    await b.execution(gql, "s1", "e3", 50, artifacts=[b.artifact("g")])
    graph = await b.subgraph(gql, "s1")
    stored = {(e["type"], e["source"], e["target"]) for e in graph["edges"]}

    for start in ("f", "g"):
        for target in ("RESEARCH_GOAL", "TASK", "TOOL_CALL", "CODE"):
            trace = await b.trace(gql, start, target=target)
            for step in trace["path"] + trace["chain"]:
                edge = (step["viaEdge"], step["node"]["id"], step["reachedFrom"])
                assert edge in stored, (start, target, step)
            assert trace["broken"] is False


async def test_a_trace_starts_at_the_version_named(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig", 1)])
    await b.execution(gql, "s1", "e2", 20, artifacts=[b.artifact("fig", 2)])

    v1 = await b.trace(gql, "fig#v1")
    latest = await b.trace(gql, "fig")

    assert v1["startNode"] == {"id": "Artifact:fig#v1"}
    assert steps(v1)[0][1] == "Code:e1"
    assert latest["startNode"] == {"id": "Artifact:fig#v2"}


async def test_a_missing_start_is_node_not_found(gql: GraphQLClient) -> None:
    trace = await b.trace(gql, "nothing")

    assert (trace["__typename"], trace["nodeId"]) == ("NodeNotFound", "nothing")


@pytest.mark.parametrize(
    ("node_id", "hops", "field"),
    [(" ", None, "nodeId"), ("fig", 99, "maxHops"), ("fig", 0, "maxHops")],
)
async def test_bad_arguments_are_invalid_input_naming_the_field(
    gql: GraphQLClient, node_id: str, hops: int | None, field: str
) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig")])

    trace = await b.trace(gql, node_id, hops=hops)

    assert (trace["__typename"], trace["field"]) == ("InvalidInput", field)


async def test_an_unknown_target_label_is_a_graphql_validation_error(
    gql: GraphQLClient,
) -> None:
    result = await gql.raw(b.TRACE, id="fig", target="WebPage")

    assert result.data is None
    assert "NodeLabel" in result.errors[0].message
