"""Steps whose key an execution and a tool call share, against a model written from SPEC.

An execution ``x`` observed at the top level shares its step's key ``subtask:x`` with a tool
call of that ``taskId``; inside a subagent, ``<scope>:exec:x`` is the key of both the execution
and a search of ``subtask:mcp:x``. Random observations of both kinds, in both scopes, delivered
in any order and some twice, must leave what this model says (SPEC §3.2, §3.3, §3.9):

* the execution has one step, in the scope of its observation ranked highest (terminal status,
  then time); that step produces its Code;
* a scope holds the step ``x`` when the execution is placed there or a tool call was observed
  there; the step holds the highest-ranked of those observations, and produces every Paper
  the scope's tool calls found;
* each chain is ordered by its steps' times.

All times differ, so no tie-break is needed to tell the order.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hypothesis import given
from hypothesis import strategies as st

from tests import builders as b
from tests.profiles import profile

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

SCOPES = (None, "sa")
EXAMPLES = profile("shared_steps", examples=30, long_examples=400)
_prefixes = itertools.count()


@dataclass(frozen=True)
class Seen:
    """One observation of the shared step: by the execution or by a tool call."""

    call: bool
    scope: str | None
    at: int
    terminal: bool


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[list[Seen], list[int], dict[str, int]]:
    kinds = draw(
        st.lists(st.tuples(st.booleans(), st.sampled_from(SCOPES), st.booleans()), max_size=5)
    )
    times = draw(st.permutations(range(20, 20 + len(kinds) + 3)))
    seen = [Seen(c, s, times[i], t) for i, (c, s, t) in enumerate(kinds)]
    others = {"y": times[-1], "z": times[-2], "sa": times[-3]}  # a top step, a sa step, sa
    order = draw(st.permutations(range(len(seen))))
    again = draw(st.lists(st.sampled_from(order), max_size=2)) if order else []
    return seen, [*order, *again], others


def rank(seen: Seen) -> tuple[bool, int]:
    return seen.terminal, seen.at


def scope_key(scope: str | None, prefix: str) -> str:
    return f"subtask:subagent:{prefix}{scope}" if scope else ""


def expected(seen: list[Seen], others: dict[str, int], prefix: str) -> dict[str, Any]:
    """What the model says of the graph: each scope's step ``x`` (its holder's kind, time,
    status and products), and each chain's order."""
    runs = [s for s in seen if not s.call]
    placed = max(runs, key=lambda s: (rank(s), scope_key(s.scope, prefix))) if runs else None
    steps: dict[str | None, dict[str, Any]] = {}
    for scope in SCOPES:
        calls = [s for s in seen if s.call and s.scope == scope]
        held = calls + ([placed] if placed is not None and placed.scope == scope else [])
        if not held:
            continue
        holder = max(held, key=rank)
        steps[scope] = {
            "call": holder.call,
            "at": holder.at,
            "running": not holder.terminal,
            "papers": {paper(prefix, s) for s in calls},
            "code": placed is not None and placed.scope == scope,
        }
    main = {
        step_id(prefix, None, "y"): others["y"],
        f"Task:{scope_key('sa', prefix)}": others["sa"],
    }
    inner = {step_id(prefix, "sa", "z"): others["z"]}
    for scope, chain in ((None, main), ("sa", inner)):
        if scope in steps:
            chain[step_id(prefix, scope, "x")] = steps[scope]["at"]
    return {
        "steps": steps,
        "main": sorted(main, key=main.__getitem__),
        "inner": sorted(inner, key=inner.__getitem__),
    }


def step_id(prefix: str, scope: str | None, ref: str) -> str:
    if scope:
        return f"ToolCall:{scope_key(scope, prefix)}:exec:{prefix}{ref}"
    return f"ToolCall:subtask:{prefix}{ref}"


def paper(prefix: str, seen: Seen) -> str:
    return f"https://example.org/{prefix}/{seen.at}"


async def send(gql: GraphQLClient, session: str, prefix: str, seen: Seen) -> dict[str, Any]:
    extra: dict[str, Any] = {"parentSubagentId": prefix + seen.scope} if seen.scope else {}
    if not seen.call:
        status = "succeeded" if seen.terminal else "running"
        return await b.execution(gql, session, prefix + "x", seen.at, status=status, **extra)
    task = f"subtask:mcp:{prefix}x" if seen.scope else f"subtask:{prefix}x"
    status = "completed" if seen.terminal else "running"
    found = [b.paper(paper(prefix, seen))]
    return await b.tool_call(gql, session, task, seen.at, papers=found, status=status, **extra)


def found(graph: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The same facts, read from a session's subgraph and chains."""
    nodes = {node["id"]: node["properties"] for node in graph["nodes"]}
    produces = b.edges_of(graph, "PRODUCES")
    steps: dict[str | None, dict[str, Any]] = {}
    for scope in SCOPES:
        step = step_id(prefix, scope, "x")
        if step not in nodes:
            continue
        props = nodes[step]
        steps[scope] = {
            "call": "result_count" in props,
            "at": next(t for t in range(100) if props["finished_at"].startswith(b.at(t)[:19])),
            "running": props["status"] == "running",
            "papers": {
                t.split("|", 1)[1] for s, t in produces if s == step and t.startswith("Paper:")
            },
            "code": (step, f"Code:{prefix}x") in produces,
        }
    follows = dict(b.edges_of(graph, "NEXT")) | dict(b.edges_of(graph, "CONTAINS"))
    inner, at = [], follows.get(f"Task:{scope_key('sa', prefix)}")
    while at is not None:
        inner.append(at)
        at = follows.get(at)
    return {"steps": steps, "inner": inner}


@EXAMPLES
@given(delivery=deliveries())
async def test_a_shared_step_is_what_the_model_says_in_any_delivery(
    gql: GraphQLClient, delivery: tuple[list[Seen], list[int], dict[str, int]]
) -> None:
    seen, order, others = delivery
    prefix = f"sh{next(_prefixes)}-"
    session = prefix + "s"
    await b.first_message(gql, session)
    await b.subagent(gql, session, prefix + "sa", started=others["sa"])
    await b.execution(gql, session, prefix + "y", others["y"])
    await b.execution(gql, session, prefix + "z", others["z"], parentSubagentId=prefix + "sa")
    for index in order:
        assert (await send(gql, session, prefix, seen[index]))["__typename"] == "Observed"

    model = expected(seen, others, prefix)
    graph = await b.subgraph(gql, session)
    actual = found(graph, prefix)
    main = [step for step in await b.session_chain(gql, session) if "ResearchGoal" not in step]

    assert actual["steps"] == model["steps"]
    assert main == model["main"]
    assert actual["inner"] == model["inner"]
