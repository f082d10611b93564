"""An executable model of the read semantics of SPEC §4 over ``tests.model.graph.Graph``.

Written from SPEC §4 and reference §4.5 (the hop tables), with the tie-breaks the API
documents ("most recent" = ``seq``, then ``createdAt``, then id). Nothing here knows about
chain indexes or walk optimisations: every walk follows the stored edges one by one.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from tests.model.graph import Edge, Graph

IN, OUT = "in", "out"
STEPS = frozenset({"Task", "ToolCall"})


@dataclass(frozen=True, slots=True)
class Hop:
    edge: str
    direction: str
    targets: frozenset[str]
    limit: int | None = None
    variable: bool = False


def _hop(edge: str, direction: str, target: str, limit: int | None = None) -> Hop:
    return Hop(edge, direction, frozenset({target}), limit)


TO_GOAL = Hop("next", IN, frozenset({"ResearchGoal"}), variable=True)
TO_EVIDENCE = _hop("extracts", OUT, "Evidence")
TO_CLAIM = _hop("supports", OUT, "Claim")
TO_REPORT = _hop("stated_in", OUT, "Artifact")
FROM_CLAIM = _hop("stated_in", IN, "Claim")
FROM_EVIDENCE = _hop("supports", IN, "Evidence")

# Reference §4.5 minus DbRecord / WebPage; a "Task" of the old prev/next buttons is any step.
KINDS: dict[str, tuple[Hop, ...]] = {
    "viewPrevTask": (Hop("next", IN, STEPS, 1),),
    "viewNextTask": (Hop("next", OUT, STEPS, 1),),
    "viewGoal": (TO_GOAL,),
    "viewInput": (_hop("input", IN, "Artifact", 1),),
    "viewOutput": (_hop("produces", OUT, "Artifact"),),
    "viewProducingTask": (_hop("produces", IN, "ToolCall"),),
    "viewExtractedEvidence": (TO_EVIDENCE,),
    "viewCitingClaim": (TO_EVIDENCE, TO_CLAIM),
    "viewCitingArtifact": (TO_EVIDENCE, TO_CLAIM, TO_REPORT),
    "viewSearchingTask": (_hop("produces", IN, "ToolCall", 1),),
    "viewSourcePaper": (_hop("extracts", IN, "Paper", 1),),
    "viewCitingClaimForEvidence": (TO_CLAIM,),
    "viewCitingArtifactForEvidence": (TO_CLAIM, TO_REPORT),
    "viewCitingEvidenceForClaim": (FROM_EVIDENCE,),
    "viewCitingSourceFileForClaim": (_hop("supports", IN, "SourceFile"),),
    "viewContainingArtifact": (_hop("stated_in", OUT, "Artifact", 1),),
    "viewContainedClaims": (FROM_CLAIM,),
    "viewCitingClaimForArtifact": (TO_CLAIM,),
    "viewProducingCode": (_hop("produces", IN, "Code", 1),),
    "viewCitingEvidenceForArtifact": (FROM_CLAIM, FROM_EVIDENCE),
    "viewCitedPaper": (FROM_CLAIM, FROM_EVIDENCE, _hop("extracts", IN, "Paper")),
    "viewRelatedTask": (_hop("produces", IN, "Code"), _hop("produces", IN, "ToolCall"), TO_GOAL),
}


@dataclass(frozen=True, slots=True)
class ChainAnswer:
    nodes: list[str]  # by hop, then most recent first
    edges: frozenset[Edge]


def _moves(graph: Graph, node: str, hop: Hop) -> list[tuple[str, Edge]]:
    """``(far node, edge)`` for every stored ``hop.edge`` edge at ``node`` in its direction."""
    if hop.direction == IN:
        return [(s, (hop.edge, s, node)) for s in graph.into(node, hop.edge)]
    return [(t, (hop.edge, node, t)) for t in graph.out(node, hop.edge)]


def get_chain(graph: Graph, source: str, kind: str, session: str | None) -> ChainAnswer:
    """The walk of ``kind`` from ``source``: all-or-nothing, hop after hop from the frontier."""
    hop_of = {source: 0}
    edges: set[Edge] = set()
    frontier = [source]
    for index, hop in enumerate(KINDS[kind], start=1):
        found = _variable(graph, frontier, hop, session, hop_of) if hop.variable else None
        if found is None and not hop.variable:
            found = _single(graph, frontier, hop, session, hop_of)
        if found is None:
            return ChainAnswer([], frozenset())
        frontier, reached, crossed = found
        for node in reached:
            hop_of.setdefault(node, index)
        edges |= crossed
    newest = sorted(hop_of, key=lambda n: graph.nodes[n].newest, reverse=True)
    return ChainAnswer(sorted(newest, key=hop_of.__getitem__), frozenset(edges))


Found = tuple[list[str], list[str], set["Edge"]]
"""A hop's targets (the next frontier), every node it reached, the edges it crossed."""


def _pick(graph: Graph) -> Callable[[str], tuple[int, str, str]]:
    return lambda n: graph.nodes[n].newest_pick


def _single(
    graph: Graph, frontier: Sequence[str], hop: Hop, session: str | None, reached: dict[str, int]
) -> Found | None:
    moves = [(far, edge) for near in frontier for far, edge in _moves(graph, near, hop)]
    targets = {
        far
        for far, _ in moves
        if far not in reached
        and graph.visible(far, session)
        and graph.nodes[far].label in hop.targets
    }
    order = (lambda n: graph.nodes[n].newest) if hop.limit is None else _pick(graph)
    kept = sorted(targets, key=order, reverse=True)[: hop.limit]
    if not kept:
        return None
    return kept, kept, {edge for far, edge in moves if far in kept}


def _variable(
    graph: Graph, frontier: Sequence[str], hop: Hop, session: str | None, reached: dict[str, int]
) -> Found | None:
    """Breadth-first to the nearest level holding a target; the paths back included."""
    came_by: dict[str, tuple[str, Edge]] = {}
    seen = set(frontier) | set(reached)
    level = list(frontier)
    while level:
        fresh: list[str] = []
        for near in level:
            for far, edge in _moves(graph, near, hop):
                if far not in seen and graph.visible(far, session):
                    seen.add(far)
                    came_by[far] = (near, edge)
                    fresh.append(far)
        targets = [n for n in fresh if graph.nodes[n].label in hop.targets]
        if targets:
            nodes: list[str] = []
            edges: set[Edge] = set()
            for target in targets:
                current = target
                while current in came_by and current not in nodes:
                    nodes.append(current)
                    current, edge = came_by[current]
                    edges.add(edge)
            return sorted(targets, key=lambda n: graph.nodes[n].newest, reverse=True), nodes, edges
        level = fresh
    return None


def chain_exists(graph: Graph, source: str, kind: str, session: str | None) -> bool:
    return bool(get_chain(graph, source, kind, session).nodes)


# --- traceProvenance -------------------------------------------------------------------------

WALKED = ("produces", "input", "next", "contains", "stated_in", "supports", "extracts")


@dataclass(frozen=True, slots=True)
class Step:
    hop: int
    node: str
    via: str
    reached_from: str


@dataclass(frozen=True, slots=True)
class TraceAnswer:
    path: list[Step]
    chain: list[Step]
    broken: bool
    truncated: bool
    reason: str


def trace(graph: Graph, start: str, target: str, max_hops: int, session: str) -> TraceAnswer:
    """SPEC §4 traceProvenance with its documented hops: one hop is one walked edge, or a run
    of ``next`` edges (stopping at the first target node); hop ``k`` is every node first
    reached at hop ``k``; the trace ends at the first hop holding the target."""
    if graph.nodes[start].label == target:
        return TraceAnswer([], [], False, False, f"reached {target}")

    def up(node: str) -> list[tuple[str, str]]:
        """``(upstream node, edge type)`` of every walked edge into ``node``."""
        return [
            (source, kind)
            for kind in WALKED
            for source in graph.into(node, kind)
            if graph.visible(source, session)
        ]

    def newest_first(nodes: set[str] | list[str]) -> list[str]:
        """By the nodes' own versions and times, never by arrival (SPEC §3.9)."""
        return sorted(nodes, key=lambda n: graph.nodes[n].newest_pick, reverse=True)

    hop_of = {start: 0}
    step_of: dict[str, Step] = {}  # how each node is listed
    steps_in_run: dict[str, Step] = {}  # how a run passes each node it reaches
    chain: list[Step] = []
    frontier = [start]
    for hop in range(1, max_hops + 2):
        rank = {node: index for index, node in enumerate(newest_first(frontier))}
        adjacent: dict[str, list[tuple[int, int, str, str]]] = {}
        for near in frontier:
            for far, kind in up(near):
                if far not in hop_of:
                    adjacent.setdefault(far, []).append(
                        (rank[near], WALKED.index(kind), near, kind)
                    )
        # Runs: from the nodes reached over `next`, on over `next`, through nodes not reached
        # at an earlier hop, stopping at target nodes. Inside a run a node is reached from the
        # node before it in the run, whatever else reaches it.
        run_step: dict[str, Step] = {}
        for far, ways in adjacent.items():
            nexts = [way for way in ways if way[3] == "next"]
            if nexts:
                run_step[far] = Step(hop, far, "next", min(nexts)[2])
        queue = deque(newest_first(set(run_step)))
        while queue:
            near = queue.popleft()
            if graph.nodes[near].label == target:
                continue
            for far, kind in up(near):
                if kind == "next" and far not in hop_of and far not in run_step:
                    run_step[far] = Step(hop, far, "next", near)
                    queue.append(far)
        in_run = set(run_step)
        reached = set(adjacent) | in_run
        if not reached or hop > max_hops:
            break
        for node in reached:
            hop_of[node] = hop
            if node in adjacent:
                _, _, near, kind = min(adjacent[node])
                step_of[node] = Step(hop, node, kind, near)
            else:
                step_of[node] = run_step[node]
        steps_in_run.update(run_step)
        terminals = [n for n in reached if graph.nodes[n].label == target]
        plain = {n for n, ways in adjacent.items() if any(k != "next" for *_, k in ways)}
        ends = {
            n
            for n in in_run - plain
            if not any(k == "next" for _, k in up(n)) or any(k != "next" for _, k in up(n))
        }
        listed = newest_first(terminals or (plain | ends))
        chain += [step_of[n] for n in listed]
        if terminals:
            return TraceAnswer(
                _path(start, listed[0], step_of, steps_in_run),
                chain,
                False,
                False,
                f"reached {target}",
            )
        frontier = list(reached)
    else:
        raise AssertionError("the last hop always ends the loop")
    if hop > max_hops and reached:
        return TraceAnswer([], chain, False, True, f"truncated at maxHops={max_hops}")
    dead = sorted(newest_first([n for n in hop_of if not up(n)]), key=hop_of.__getitem__)
    return TraceAnswer([], chain, True, False, _dead_end_reason(graph, dead))


def _path(start: str, end: str, step_of: dict[str, Step], in_run: dict[str, Step]) -> list[Step]:
    """Back from ``end`` to ``start``: over its listed step, and through a run (to the node of
    the previous hop it started from) once the path is inside one."""
    path = [step_of[end]]
    inside = step_of[end] is in_run.get(end)
    while path[-1].reached_from != start:
        near = path[-1].reached_from
        step = (
            in_run[near]
            if inside and near in in_run and in_run[near].hop == path[-1].hop
            else step_of[near]
        )
        inside = step is in_run.get(near)
        path.append(step)
    return path[::-1]


def _dead_end_reason(graph: Graph, dead: list[str]) -> str:
    if not dead:
        return "nothing further upstream"
    named = ", ".join(f"{graph.nodes[n].label} {graph.nodes[n].key}" for n in dead[:5])
    return f"no upstream of {named}" + (f" and {len(dead) - 5} more" if len(dead) > 5 else "")
