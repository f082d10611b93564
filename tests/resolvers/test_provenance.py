"""traceProvenance: the upstream exploration, its witness path and verdict (SPEC §4)."""

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
    goal_id,
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


def path(trace: ProvenanceTrace) -> list[tuple[int, str, EdgeType, str]]:
    return [(s.hop, s.node.id, s.via_edge, s.reached_from) for s in trace.path]


async def test_an_artifact_traces_to_the_goal(store: GraphStore) -> None:
    goal_node = await goal(store)
    await execution(store, "e1", 10, produces=[("fig", 1)])

    trace = await trace_provenance(store, "fig#v1")

    assert steps(trace) == [
        (1, code("e1"), EdgeType.PRODUCES, False),
        (2, call("e1"), EdgeType.PRODUCES, False),
        (3, goal_node, EdgeType.NEXT, True),
    ]
    assert path(trace) == [
        (1, code("e1"), EdgeType.PRODUCES, artifact("fig")),
        (2, call("e1"), EdgeType.PRODUCES, code("e1")),
        (3, goal_node, EdgeType.NEXT, call("e1")),
    ]
    assert (trace.broken, trace.truncated, trace.reason) == (False, False, "reached ResearchGoal")
    assert trace.start.id == artifact("fig")


async def test_a_late_step_reaches_the_goal_in_one_hop_over_every_stored_edge(
    store: GraphStore,
) -> None:
    goal_node = await goal(store)
    await execution(store, "e1", 10)
    await execution(store, "e2", 20)
    await execution(store, "e3", 30, produces=[("fig", 1)])

    trace = await trace_provenance(store, "fig#v1")

    assert steps(trace)[2:] == [(3, goal_node, EdgeType.NEXT, True)]
    assert path(trace)[2:] == [
        (3, call("e2"), EdgeType.NEXT, call("e3")),
        (3, call("e1"), EdgeType.NEXT, call("e2")),
        (3, goal_node, EdgeType.NEXT, call("e1")),
    ]


async def test_a_subagent_artifact_crosses_contains_to_the_goal(store: GraphStore) -> None:
    goal_node = await goal(store)
    await execution(store, "main", 5)
    scope = await subagent(store, "sub", 10)
    await execution(store, "c1", 11, scope="sub")
    await execution(store, "c2", 12, scope="sub", produces=[("fig", 1)])

    trace = await trace_provenance(store, "fig#v1")

    assert path(trace) == [
        (1, code("c2"), EdgeType.PRODUCES, artifact("fig")),
        (2, call("c2", "sub"), EdgeType.PRODUCES, code("c2")),
        (3, call("c1", "sub"), EdgeType.NEXT, call("c2", "sub")),
        (4, scope, EdgeType.CONTAINS, call("c1", "sub")),
        (5, call("main"), EdgeType.NEXT, scope),
        (5, goal_node, EdgeType.NEXT, call("main")),
    ]
    assert [(hop, node) for hop, node, _, _ in steps(trace)] == [
        (1, code("c2")),
        (2, call("c2", "sub")),
        (3, call("c1", "sub")),
        (4, scope),
        (5, goal_node),
    ]
    assert (trace.broken, trace.truncated) == (False, False)


async def test_a_scope_in_the_main_chain_is_found_as_a_task(store: GraphStore) -> None:
    await goal(store)
    scope = await subagent(store, "sub", 10)
    await execution(store, "e1", 20)
    await execution(store, "e2", 30, produces=[("fig", 1)])

    trace = await trace_provenance(store, "fig#v1", target_label=Label.TASK)

    assert (trace.broken, trace.truncated) == (False, False)
    assert path(trace)[2:] == [
        (3, call("e1"), EdgeType.NEXT, call("e2")),
        (3, scope, EdgeType.NEXT, call("e1")),
    ]
    assert steps(trace)[-1] == (3, scope, EdgeType.NEXT, True)


async def test_a_missing_goal_is_broken_naming_the_dead_end(store: GraphStore) -> None:
    await execution(store, "e1", 10, produces=[("fig", 1)])

    trace = await trace_provenance(store, "fig#v1")

    assert (trace.broken, trace.truncated) == (True, False)
    assert trace.reason == "no upstream of ToolCall subtask:e1"
    assert [step.node.id for step in trace.chain] == [code("e1"), call("e1")]
    assert trace.path == []


async def test_every_dead_end_is_named_not_the_last_node_listed(store: GraphStore) -> None:
    await upload(store, "data.csv")
    await execution(store, "e1", 10, produces=[("fig", 1)], reads_files=["data.csv"])

    trace = await trace_provenance(store, "fig#v1")

    assert trace.broken
    assert trace.reason == (
        "no upstream of ToolCall subtask:e1, SourceFile source_file:session:s1:data.csv"
    )


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
    assert trace.path == []


async def test_max_hops_at_the_last_explored_hop_is_broken_not_truncated(
    store: GraphStore,
) -> None:
    await execution(store, "e1", 10, produces=[("fig", 1)])

    trace = await trace_provenance(store, "fig#v1", max_hops=2)

    assert (trace.broken, trace.truncated) == (True, False)


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

    assert [node for _, node, _, _ in steps(trace)] == [cited, paper(LINK), finder, goal_node]
    assert [node for _, node, _, _ in path(trace)] == [cited, paper(LINK), finder, goal_node]
    assert not trace.broken


async def test_the_terminal_hop_lists_only_its_terminals(store: GraphStore) -> None:
    await goal(store)
    await execution(store, "e1", 10, produces=[("report", 1)])
    stated = await claim(store, "see report", artifacts=[("report", 1)], report=("report", 1))

    trace = await trace_provenance(store, "report#v1", target_label=Label.TOOL_CALL)

    assert [(hop, node) for hop, node, _, _ in steps(trace)] == [
        (1, code("e1")),  # newest first by own time: the Code's finish; a Claim has none
        (1, stated),
        (2, call("e1")),
    ]
    assert [node for _, node, _, _ in path(trace)] == [code("e1"), call("e1")]
    assert trace.reason == "reached ToolCall"


async def test_a_hop_lists_its_nodes_alike_whatever_order_they_arrived_in(
    store: GraphStore,
) -> None:
    # Two searches find one Paper; in s2 they arrive the other way round.
    answers = []
    for session, order in (("s1", (0, 1)), ("s2", (1, 0))):
        await goal(store, session)
        finders = {}
        for index in order:
            finder = await search(store, f"{session}-q{index}", 10 + index, [LINK], session=session)
            finders[finder] = f"q{index}"
        trace = await trace_provenance(store, paper(LINK, session))
        named = {**finders, goal_id(session): "goal", paper(LINK, session): "paper"}
        answers.append(
            (
                [(hop, named[node], named[source]) for hop, node, _, source in path(trace)],
                [named[node] for _, node, _, _ in steps(trace)],
            )
        )

    assert answers[0] == answers[1]
    assert answers[0][1] == ["q1", "q0", "goal"]  # newest first by their own retrieval time


async def test_an_uploaded_file_is_a_dead_end(store: GraphStore) -> None:
    await goal(store)
    data = await upload(store, "data.csv")

    trace = await trace_provenance(store, data)

    assert (trace.broken, trace.chain, trace.path) == (True, [], [])
    assert trace.reason == "no upstream of SourceFile source_file:session:s1:data.csv"


async def test_code_outside_the_task_chain_that_read_an_upload_is_broken(
    store: GraphStore,
) -> None:
    await goal(store)
    await upload(store, "d.csv")
    await execution(store, "x0", 10, produces=[("fig", 1)], reads_files=["d.csv"], scope="ghost")

    trace = await trace_provenance(store, "fig#v1")

    assert (trace.broken, trace.path) == (True, [])
    assert trace.reason == (
        "no upstream of ToolCall subtask:subagent:ghost:exec:x0, "
        "SourceFile source_file:session:s1:d.csv"
    )


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


async def test_a_run_that_lists_nothing_still_explores(store: GraphStore) -> None:
    # Found by the model (tests/model): a run whose new steps are all inside the chain was
    # taken for "nothing left", so the trace said broken where maxHops had cut it.
    await execution(store, "x1", 10, produces=[("a2", 1)])
    await execution(store, "x3", 5, produces=[("a4", 1)], reads=[("a2", 1)])
    await search(store, "q9", 5, [])

    cut = await trace_provenance(store, "a4#v1", max_hops=4)
    explored = await trace_provenance(store, "a4#v1", max_hops=32)

    assert (cut.broken, cut.truncated) == (False, True)
    assert (explored.broken, explored.truncated) == (True, False)
    assert explored.reason == "no upstream of ToolCall subtask:x3"
    assert max(step.hop for step in explored.chain) == 4
