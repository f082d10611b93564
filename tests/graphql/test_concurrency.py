"""Many concurrent writers, in one session and across sessions, on every backend.

Whatever the interleaving: no two steps share a ``seq``, ``next`` edges form one path through
all of a session's steps in time order (none lost, none forked), and a node written by several
writers at once exists once.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import TYPE_CHECKING, Any

from tests import builders as b
from tests.graphql.test_chains import path_from

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

# Distinct executions written at once, each twice: 80 writes queued on one session at once.
WRITERS = 40
STEPS = """query($s: String!) { nodesByType(labels: [TOOL_CALL, TASK], sessionId: $s, first: 500) {
  ... on NodeList { nodes { id ... on ToolCall { seq finishedAt } ... on Task { seq } } } } }"""


def goal(session: str) -> str:
    return f"ResearchGoal:goal:session:{session}"


def shuffled(items: list[Any], seed: int) -> list[Any]:
    random.Random(seed).shuffle(items)
    return items


async def steps_of(gql: GraphQLClient, session: str) -> list[dict[str, Any]]:
    data = await gql.execute(STEPS, s=session)
    nodes: list[dict[str, Any]] = data["nodesByType"]["nodes"]
    return nodes


async def test_concurrent_writers_in_one_session_keep_one_path_and_write_each_node_once(
    gql: GraphQLClient,
) -> None:
    finishes = shuffled([10 * i for i in range(1, WRITERS + 1)], seed=5)
    writes = [
        b.execution(gql, "s1", f"e{at}", at, artifacts=[b.artifact(f"fig-{at}")])
        for at in finishes
        for _ in range(2)  # every event arrives twice, at the same time
    ]
    await b.first_message(gql, "s1")

    answers = await asyncio.gather(*writes)

    graph = await b.subgraph(gql, "s1")
    labels = Counter(node["label"] for node in graph["nodes"])
    seqs = [step["seq"] for step in await steps_of(gql, "s1")]
    in_time_order = [f"ToolCall:subtask:e{at}" for at in sorted(finishes)]
    assert {answer["__typename"] for answer in answers} == {"Observed"}
    assert labels == {
        "RESEARCH_GOAL": 1,
        "TOOL_CALL": WRITERS,
        "CODE": WRITERS,
        "ARTIFACT": WRITERS,
    }
    assert len(graph["nodes"]) == len({node["id"] for node in graph["nodes"]})
    assert sorted(Counter(seqs).values()) == [1] * WRITERS
    assert path_from(graph, goal("s1")) == [goal("s1"), *in_time_order]
    assert len(b.edges_of(graph, "NEXT")) == WRITERS


async def test_concurrent_sessions_each_keep_their_own_path(gql: GraphQLClient) -> None:
    sessions = [f"s{n}" for n in range(1, 6)]
    writes = [
        b.execution(gql, session, f"{session}-e{at}", at)
        for session, at in shuffled([(s, 10 * i) for s in sessions for i in range(1, 13)], seed=7)
    ]
    for session in sessions:
        await b.first_message(gql, session)

    await asyncio.gather(*writes)

    for session in sessions:
        graph = await b.subgraph(gql, session)
        seqs = [step["seq"] for step in await steps_of(gql, session)]
        expected = [f"ToolCall:subtask:{session}-e{10 * i}" for i in range(1, 13)]
        assert path_from(graph, goal(session)) == [goal(session), *expected], session
        assert sorted(Counter(seqs).values()) == [1] * 12, session
        assert b.node_ids(graph, "TOOL_CALL") == set(expected), session
        assert len(b.node_ids(graph, "CODE")) == 12, session


async def test_mixed_concurrent_steps_form_one_path_through_all_of_them(
    gql: GraphQLClient,
) -> None:
    writes = [
        *(b.execution(gql, "s1", f"e{at}", at) for at in (10, 40, 70)),
        *(b.tool_call(gql, "s1", f"subtask:mcp:q{at}", at) for at in (20, 50)),
        b.subagent(gql, "s1", "sub-1", started=30),
        b.subagent(gql, "s1", "sub-2", started=60),
        b.upload(gql, "s1", "data.csv"),
    ]
    await b.first_message(gql, "s1")

    await asyncio.gather(*shuffled(writes, seed=3))

    graph = await b.subgraph(gql, "s1")
    steps = await steps_of(gql, "s1")
    path = path_from(graph, goal("s1"))
    assert set(path[1:]) == {step["id"] for step in steps}
    assert len(path) == 1 + 7
    assert len({step["seq"] for step in steps}) == 7
