"""traceProvenance: upstream BFS with a verdict, crossing subagent scopes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from resolvers.errors import InvalidInputError, NodeNotFoundError
from resolvers.provenance import trace_provenance
from resolvers.records import EdgeType, Label
from tests.resolvers.builders import (
    artifact,
    call,
    claim,
    code,
    evidence,
    execution,
    goal,
    paper,
    search,
    subagent,
    upload,
)

if TYPE_CHECKING:
    from resolvers.provenance import ProvenanceTrace
    from resolvers.store import GraphStore

LINK = "https://example.org/a"


def steps(trace: ProvenanceTrace) -> list[tuple[int, str, EdgeType, bool]]:
    return [(s.hop, s.node.id, s.via_edge, s.is_terminal) for s in trace.chain]


async def test_an_artifact_traces_to_the_goal(store: GraphStore) -> None:
    goal_node = await goal(store)
    await execution(store, "e1", 10, produces=[("fig", 1)])

    trace = await trace_provenance(store, "fig#v1")

    assert steps(trace) == [
        (1, code("e1"), EdgeType.PRODUCES, False),
        (2, call("e1"), EdgeType.PRODUCES, False),
        (3, goal_node, EdgeType.NEXT, True),
    ]
    assert (trace.broken, trace.truncated, trace.reason) == (False, False, "reached ResearchGoal")
    assert trace.start.id == artifact("fig")


async def test_a_late_step_jumps_to_the_start_of_its_chain(store: GraphStore) -> None:
    goal_node = await goal(store)
    await execution(store, "e1", 10)
    await execution(store, "e2", 20)
    await execution(store, "e3", 30, produces=[("fig", 1)])

    trace = await trace_provenance(store, "fig#v1")

    assert steps(trace)[2:] == [
        (3, call("e1"), EdgeType.NEXT, False),
        (4, goal_node, EdgeType.NEXT, True),
    ]
    assert not trace.broken


async def test_a_subagent_artifact_crosses_contains_to_the_goal(store: GraphStore) -> None:
    goal_node = await goal(store)
    await execution(store, "main", 5)
    scope = await subagent(store, "sub", 10)
    await execution(store, "c1", 11, scope="sub")
    await execution(store, "c2", 12, scope="sub", produces=[("fig", 1)])

    trace = await trace_provenance(store, "fig#v1")

    assert [(hop, node, via) for hop, node, via, _ in steps(trace)] == [
        (1, code("c2"), EdgeType.PRODUCES),
        (2, call("c2", "sub"), EdgeType.PRODUCES),
        (3, call("c1", "sub"), EdgeType.NEXT),
        (4, scope, EdgeType.CONTAINS),
        (5, call("main"), EdgeType.NEXT),
        (6, goal_node, EdgeType.NEXT),
    ]
    assert (trace.broken, trace.truncated) == (False, False)


async def test_a_missing_goal_is_broken_naming_the_tail(store: GraphStore) -> None:
    await execution(store, "e1", 10, produces=[("fig", 1)])

    trace = await trace_provenance(store, "fig#v1")

    assert (trace.broken, trace.truncated) == (True, False)
    assert trace.reason == "no upstream of ToolCall subtask:e1"
    assert [step.node.id for step in trace.chain] == [code("e1"), call("e1")]


async def test_max_hops_truncates_without_breaking(store: GraphStore) -> None:
    await goal(store)
    await execution(store, "e1", 10, produces=[("fig", 1)])

    trace = await trace_provenance(store, "fig#v1", max_hops=2)

    assert (trace.broken, trace.truncated, trace.reason) == (
        False,
        True,
        "truncated at maxHops=2",
    )
    assert [step.hop for step in trace.chain] == [1, 2]


async def test_a_start_that_is_the_target_has_an_empty_chain(store: GraphStore) -> None:
    goal_node = await goal(store)

    trace = await trace_provenance(store, goal_node)

    assert (trace.chain, trace.broken, trace.truncated) == ([], False, False)


async def test_a_claim_traces_through_evidence_and_paper(store: GraphStore) -> None:
    goal_node = await goal(store)
    finder = await search(store, "q1", 10, [LINK])
    cited = await evidence(store, "it says so", link=LINK)
    stated = await claim(store, "so it is", evidence_ids=[cited])

    trace = await trace_provenance(store, stated)

    assert [node for _, node, _, _ in steps(trace)] == [
        cited,
        paper(LINK),
        finder,
        goal_node,
    ]
    assert not trace.broken


async def test_a_report_records_every_new_node_of_a_hop(store: GraphStore) -> None:
    await goal(store)
    await execution(store, "e1", 10, produces=[("report", 1)])
    stated = await claim(store, "see report", artifacts=[("report", 1)], report=("report", 1))

    trace = await trace_provenance(store, "report#v1", target_label=Label.TOOL_CALL)

    assert {(hop, node) for hop, node, _, _ in steps(trace)} == {
        (1, code("e1")),
        (1, stated),
        (2, call("e1")),
    }
    assert trace.reason == "reached ToolCall"


async def test_an_uploaded_file_reaches_the_goal_it_feeds(store: GraphStore) -> None:
    goal_node = await goal(store)
    data = await upload(store, "data.csv")

    trace = await trace_provenance(store, data)

    assert steps(trace) == [(1, goal_node, EdgeType.FEEDS, True)]


async def test_an_input_file_is_traced_alongside_the_tool_call(store: GraphStore) -> None:
    await upload(store, "data.csv")
    await execution(store, "e1", 10, produces=[("fig", 1)], reads_files=["data.csv"])
    goal_node = await goal(store)

    trace = await trace_provenance(store, "fig#v1")

    assert (3, goal_node, EdgeType.FEEDS, True) in steps(trace)
    assert not trace.broken


async def test_other_sessions_are_not_traced(store: GraphStore) -> None:
    await goal(store, session="a")
    await execution(store, "e1", 10, produces=[("shared", 1)], session="a")
    await execution(store, "e2", 20, produces=[("out", 1)], reads=[("shared", 1)], session="b")

    trace = await trace_provenance(store, "out#v1")

    assert trace.broken
    assert artifact("shared") not in {step.node.id for step in trace.chain}


async def test_a_missing_start_is_not_found(store: GraphStore) -> None:
    with pytest.raises(NodeNotFoundError):
        await trace_provenance(store, "missing")


@pytest.mark.parametrize("max_hops", [0, 33])
async def test_max_hops_out_of_range_is_invalid(store: GraphStore, max_hops: int) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await trace_provenance(store, "anything", max_hops=max_hops)

    assert caught.value.field == "maxHops"
