"""A subgraph read while its session is being written answers one state of the session.

One task records a session through the real mutations (executions arriving out of time order,
so each is inserted inside the chain and the ``next`` edge it lands on is replaced; claims
citing the artifacts), another reads the session's subgraph over and over. Each write is one
transaction, so every state a reader may see satisfies what SPEC §2-4 says of a session: each
answer must too, whichever writes it fell between.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import TYPE_CHECKING, Any

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

EXECUTIONS = 40
CLAIM_EVERY = 4
GOAL = "ResearchGoal:goal:session:s1"
LAST = 10_000  # finished after every other step: its trace crosses the whole chain


def broken_rules(graph: dict[str, Any]) -> list[str]:
    """What in one subgraph answer no state of the session written here can show."""
    ids = [node["id"] for node in graph["nodes"]]
    labels = {node["id"]: node["label"] for node in graph["nodes"]}
    of_label = {
        label: {i for i, found in labels.items() if found == label} for label in labels.values()
    }
    edges = [(e["type"], e["source"], e["target"]) for e in graph["edges"]]
    broken = []
    if graph["truncated"] or graph["total"] != len(ids) or len(set(ids)) != len(ids):
        broken.append("total")
    if any(source not in labels or target not in labels for _, source, target in edges):
        broken.append("dangling edge")
    produces = {(source, target) for kind, source, target in edges if kind == "PRODUCES"}
    made = {source for source, _ in produces}
    calls, codes = of_label.get("TOOL_CALL", set()), of_label.get("CODE", set())
    artifacts = of_label.get("ARTIFACT", set())
    if not len(calls) == len(codes) == len(artifacts) or not calls | codes <= made:
        broken.append("product missing")
    supported = {target for kind, _, target in edges if kind == "SUPPORTS"}
    if not of_label.get("CLAIM", set()) <= supported:
        broken.append("claim unsupported")
    if not _one_chain(edges, calls, graph["nodes"]):
        broken.append("chain")
    return broken


def _one_chain(
    edges: list[tuple[str, str, str]], calls: set[str], nodes: list[dict[str, Any]]
) -> bool:
    """The ``next`` edges are one path from the goal through every step in time order."""
    following: dict[str, list[str]] = {}
    for kind, source, target in edges:
        if kind == "NEXT":
            following.setdefault(source, []).append(target)
    path = [GOAL]
    while len(following.get(path[-1], [])) == 1 and len(path) <= len(calls):
        path.append(following[path[-1]][0])
    finished = {n["id"]: n["properties"]["finished_at"] for n in nodes if n["id"] in calls}
    in_time = sorted(calls, key=lambda call: finished[call])
    return path[1:] == in_time and path[-1] not in following


async def write_session(gql: GraphQLClient) -> None:
    finishes = list(range(10, 10 * (EXECUTIONS + 1), 10))
    random.Random(11).shuffle(finishes)
    for index, finished in enumerate(finishes):
        name = f"fig-{finished}"
        await b.execution(gql, "s1", f"e{finished}", finished, artifacts=[b.artifact(name)])
        if index % CLAIM_EVERY == 0:
            answer = await b.claim(gql, "s1", artifacts=[(name, 1)])
            assert answer["__typename"] == "ClaimDeclared", answer


async def read_subgraph(gql: GraphQLClient, *, fold: bool) -> list[str]:
    """What is wrong with one subgraph answer; a failed read is wrong too."""
    result = await gql.raw(b.SUBGRAPH, s="s1", fold=fold)
    if result.errors:
        return [f"failed: {result.errors[0].message}"]
    return broken_rules(result.data["subgraph"])


async def test_a_subgraph_read_during_writes_is_one_state_of_the_session(
    gql: GraphQLClient,
) -> None:
    await b.first_message(gql, "s1")
    writing = asyncio.ensure_future(write_session(gql))
    answers: list[list[str]] = []

    while not writing.done() or not answers:
        answers.append(await read_subgraph(gql, fold=len(answers) % 2 == 0))
    await writing

    torn = Counter(rule for broken in answers for rule in broken)
    final = await read_subgraph(gql, fold=False)
    assert final == []
    assert len(answers) >= 10
    assert not torn, f"{sum(map(bool, answers))} of {len(answers)} answers torn: {torn}"


def broken_trace(trace: dict[str, Any]) -> list[str]:
    """What in a trace of a recorded artifact to the goal no state of the session can show:
    every state holds its whole task chain."""
    if trace["__typename"] != "ProvenanceTrace":
        return [f"failed: {trace['__typename']}"]
    broken = []
    if trace["broken"] or trace["truncated"]:
        broken.append(f"verdict: {trace['reason']}")
    path = trace["path"]
    reached = [trace["startNode"]["id"], *(step["node"]["id"] for step in path)]
    if path and (
        reached[-1] != GOAL
        or any(step["reachedFrom"] != reached[index] for index, step in enumerate(path))
    ):
        broken.append("path")
    return broken


async def test_a_trace_read_during_writes_is_one_state_of_the_session(
    gql: GraphQLClient,
) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e-last", LAST, artifacts=[b.artifact("fig-last")])
    writing = asyncio.ensure_future(write_session(gql))
    answers: list[list[str]] = []

    while not writing.done() or not answers:
        result = await gql.raw(b.TRACE, id="Artifact:fig-last#v1", s="s1", hops=32)
        failed = [f"failed: {result.errors[0].message}"] if result.errors else []
        answers.append(failed or broken_trace(result.data["traceProvenance"]))
    await writing

    torn = Counter(rule for broken in answers for rule in broken)
    assert len(answers) >= 10
    assert not torn, f"{sum(map(bool, answers))} of {len(answers)} answers torn: {torn}"


async def test_a_chain_read_during_writes_is_one_state_of_the_session(
    gql: GraphQLClient,
) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e-last", LAST, artifacts=[b.artifact("fig-last")])
    writing = asyncio.ensure_future(write_session(gql))
    answers: list[list[str]] = []

    while not writing.done() or not answers:
        result = await gql.raw(b.CHAIN, id="ToolCall:subtask:e-last", kind="VIEW_GOAL", s="s1")
        chain = None if result.errors else result.data["getChain"]
        ids = {node["id"] for node in chain["nodes"]} if chain else set()
        answers.append([] if {GOAL, "ToolCall:subtask:e-last"} <= ids else ["goal not reached"])
    await writing

    torn = Counter(rule for broken in answers for rule in broken)
    assert len(answers) >= 10
    assert not torn, f"{sum(map(bool, answers))} of {len(answers)} answers torn: {torn}"
