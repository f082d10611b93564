"""Chain order and incremental maintenance of `next` and `contains` (SPEC §3.3)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

GOAL = "ResearchGoal:goal:session:s1"


def step(name: str) -> str:
    return f"ToolCall:subtask:{name}"


def path_from(graph: dict[str, Any], start: str) -> list[str]:
    """The nodes reached from ``start`` over `next` edges, requiring one single path."""
    successors: dict[str, list[str]] = {}
    for source, target in b.edges_of(graph, "NEXT"):
        successors.setdefault(source, []).append(target)
    path = [start]
    while path[-1] in successors:
        (following,) = successors[path[-1]]
        path.append(following)
    return path


async def test_steps_arriving_out_of_time_order_are_chained_in_time_order(
    gql: GraphQLClient,
) -> None:
    await b.first_message(gql, "s1")

    for name, finished in [("e30", 30), ("e10", 10), ("e20", 20)]:
        await b.execution(gql, "s1", name, finished)

    graph = await b.subgraph(gql, "s1")
    expected = [step("e10"), step("e20"), step("e30")]
    assert await b.session_chain(gql, "s1") == expected
    assert path_from(graph, GOAL) == [GOAL, *expected]
    assert len(b.edges_of(graph, "NEXT")) == 3


async def test_steps_finished_at_the_same_time_keep_their_arrival_order(
    gql: GraphQLClient,
) -> None:
    await b.execution(gql, "s1", "first", 10)

    await b.execution(gql, "s1", "second", 10)
    await b.tool_call(gql, "s1", "subtask:mcp:third", 10)

    assert await b.session_chain(gql, "s1") == [
        step("first"),
        step("second"),
        step("mcp:third"),
    ]


async def test_a_search_is_ordered_by_its_retrieval_time(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e10", 10)
    await b.execution(gql, "s1", "e30", 30)

    await b.tool_call(gql, "s1", "subtask:mcp:q20", 20)
    await b.tool_call(gql, "s1", "subtask:mcp:now", retrievedAt=None)

    assert await b.session_chain(gql, "s1") == [
        step("e10"),
        step("mcp:q20"),
        step("e30"),
        step("mcp:now"),
    ]


async def test_a_scope_takes_its_place_by_start_time(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e10", 10)
    await b.execution(gql, "s1", "e20", 20)

    await b.subagent(gql, "s1", "sub-1", started=15)
    await b.execution(gql, "s1", "c1", 40, parentSubagentId="sub-1")

    assert await b.session_chain(gql, "s1") == [
        step("e10"),
        "Task:subtask:subagent:sub-1",
        step("e20"),
    ]


SEQS = """query { session(sessionId: "s1") { ... on Session { chain {
  ... on ToolCall { seq } } } } }"""


async def test_concurrent_writers_never_share_a_seq(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")

    await asyncio.gather(*(b.execution(gql, "s1", f"e{i}", 10) for i in range(12)))

    chain = (await gql.execute(SEQS))["session"]["chain"]
    seqs = [step["seq"] for step in chain]
    assert len(set(seqs)) == 12
    assert seqs == sorted(seqs)
    assert len(path_from(await b.subgraph(gql, "s1"), GOAL)) == 13


async def main_chain(gql: GraphQLClient, finishes: list[int]) -> None:
    await b.first_message(gql, "s1")
    for finished in finishes:
        await b.execution(gql, "s1", f"e{finished}", finished)


async def test_a_late_step_is_inserted_in_place(gql: GraphQLClient) -> None:
    await main_chain(gql, [10, 20, 30, 40])
    before = b.edges_of(await b.subgraph(gql, "s1"), "NEXT")

    await b.execution(gql, "s1", "e25", 25)

    after = b.edges_of(await b.subgraph(gql, "s1"), "NEXT")
    assert before - after == {(step("e20"), step("e30"))}
    assert after - before == {(step("e20"), step("e25")), (step("e25"), step("e30"))}


async def test_inserting_a_step_costs_the_same_in_a_long_chain(gql: GraphQLClient) -> None:
    for finished in [10, 20]:
        await b.execution(gql, "short", f"short-{finished}", finished)
    for finished in [10, 20, 30, 40, 50, 60, 70, 80]:
        await b.execution(gql, "long", f"long-{finished}", finished)

    short = await b.execution(gql, "short", "short-15", 15)
    long = await b.execution(gql, "long", "long-15", 15)

    # ToolCall, Code, produces, and the two next edges replacing one.
    assert short["written"] == long["written"] == 6


async def test_an_earlier_step_becomes_the_head_after_the_goal(gql: GraphQLClient) -> None:
    await main_chain(gql, [20, 30])

    await b.execution(gql, "s1", "e10", 10)

    graph = await b.subgraph(gql, "s1")
    assert path_from(graph, GOAL) == [GOAL, step("e10"), step("e20"), step("e30")]


SCOPE = "Task:subtask:subagent:sub-1"


def child(name: str) -> str:
    return f"ToolCall:subtask:subagent:sub-1:exec:{name}"


async def test_a_scope_contains_its_first_child_and_chains_the_rest(gql: GraphQLClient) -> None:
    await b.subagent(gql, "s1", "sub-1", started=5)

    await b.execution(gql, "s1", "c20", 20, parentSubagentId="sub-1")
    await b.execution(gql, "s1", "c10", 10, parentSubagentId="sub-1")

    graph = await b.subgraph(gql, "s1")
    assert b.edges_of(graph, "CONTAINS") == {(SCOPE, child("c10"))}
    assert path_from(graph, child("c10")) == [child("c10"), child("c20")]
    (edge,) = [e for e in graph["edges"] if e["type"] == "NEXT"]
    assert edge["properties"]["method"] == "scope_chain"


async def test_children_never_join_the_main_chain(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")
    await b.subagent(gql, "s1", "sub-1", started=5)

    await b.execution(gql, "s1", "c10", 10, parentSubagentId="sub-1")
    await b.execution(gql, "s1", "e20", 20)

    graph = await b.subgraph(gql, "s1")
    assert await b.session_chain(gql, "s1") == [SCOPE, step("e20")]
    assert path_from(graph, GOAL) == [GOAL, SCOPE, step("e20")]
    assert b.edges_of(graph, "CONTAINS") == {(SCOPE, child("c10"))}


STEP_LINKS = """query { node(nodeId: "ToolCall:subtask:e20") { ... on ToolCall {
  previous { id } next { id } } } }"""


async def test_a_step_knows_its_neighbours(gql: GraphQLClient) -> None:
    await main_chain(gql, [10, 20, 30])

    found = (await gql.execute(STEP_LINKS))["node"]

    assert found == {"previous": {"id": step("e10")}, "next": {"id": step("e30")}}
