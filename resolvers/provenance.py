"""Provenance trace: an ordered, upstream-only walk with a verdict, for the reviewer (SPEC §4).

Breadth-first by hop from the start node. Each reached node is expanded with its OWN label's
upstream moves (the reference applied the start's list to the whole frontier, §8.3 item 18):

=============  ===============================================================================
Artifact       ``produces`` in (its Code), ``stated_in`` in (the claims a report states)
Code           ``produces`` in (its ToolCall), ``input`` in (Artifact versions / SourceFiles read)
ToolCall       ``next`` in, ``contains`` in (a scope's first child → the scope Task)
Task           ``next`` in
Paper          ``produces`` in (the ToolCalls that found it)
Evidence       ``extracts`` in (its Paper or PDF SourceFile)
Claim          ``supports`` in (Evidence / Artifact / SourceFile)
SourceFile     ``feeds`` OUT — an upload has nothing upstream of it; the goal it was fed into is
               its origin, so an uploaded input is traceable (the only move along an arrow)
ResearchGoal   nothing
=============  ===============================================================================

``next`` is followed like the reference's ``next in *`` but without listing every earlier step
(temporal predecessors are not inputs): a step whose predecessor is another step jumps to the
first step of its own chain (the chain index finds it in O(log n)); a chain's first step reaches
the goal over ``next`` or its scope over ``contains``. So an artifact made inside a subagent
traces child → first child → scope → main chain → goal instead of stopping at the first child.

A node is never revisited; every new node of a hop is recorded (terminal ones flagged), most
recent first; a node reached over several moves records the first move the frontier (most
recent first, then each node's moves in table order) asked for, any other move before ``next``.
The trace stays inside ``session_id``, or the start node's session when none is given: the
verdict is about that session's goal. Soft-deleted nodes are never reached.

A store that offers ``WalkReader`` (Neo4j) computes the levels in one request from ``UPSTREAM``;
elsewhere each hop costs one ``expand`` per edge type, one ``get_nodes`` and one chain lookup
per distinct chain in the frontier. Either way the verdict is drawn here (``_verdict``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from resolvers.chains import STEPS, recency
from resolvers.errors import InvalidInputError
from resolvers.records import Direction, EdgeType, Label, NodeRecord
from resolvers.resolve import in_scope, resolve_node
from resolvers.store import WalkReader
from resolvers.writes import CHAIN_START

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from resolvers.store import GraphReader, Move, UpstreamStep

MAX_HOPS_LIMIT = 32

IN, OUT = Direction.IN, Direction.OUT

UPSTREAM: Mapping[Label, tuple[Move, ...]] = {
    Label.ARTIFACT: ((EdgeType.PRODUCES, IN), (EdgeType.STATED_IN, IN)),
    Label.CODE: ((EdgeType.PRODUCES, IN), (EdgeType.INPUT, IN)),
    Label.TOOL_CALL: ((EdgeType.NEXT, IN), (EdgeType.CONTAINS, IN)),
    Label.TASK: ((EdgeType.NEXT, IN),),
    Label.PAPER: ((EdgeType.PRODUCES, IN),),
    Label.EVIDENCE: ((EdgeType.EXTRACTS, IN),),
    Label.CLAIM: ((EdgeType.SUPPORTS, IN),),
    Label.SOURCE_FILE: ((EdgeType.FEEDS, OUT),),
    Label.RESEARCH_GOAL: (),
}


@dataclass(frozen=True, slots=True)
class ProvenanceStep:
    hop: int
    node: NodeRecord
    via_edge: EdgeType
    is_terminal: bool


@dataclass(frozen=True, slots=True)
class ProvenanceTrace:
    start: NodeRecord
    chain: list[ProvenanceStep]
    broken: bool
    truncated: bool
    reason: str | None


async def trace_provenance(
    store: GraphReader,
    node_ref: str,
    *,
    target_label: Label = Label.RESEARCH_GOAL,
    max_hops: int = 8,
    session_id: str | None = None,
    version: int | None = None,
) -> ProvenanceTrace:
    """Walk upstream from ``node_ref`` until ``target_label``, a dead end or ``max_hops``."""
    if not 1 <= max_hops <= MAX_HOPS_LIMIT:
        raise InvalidInputError("maxHops", f"must be between 1 and {MAX_HOPS_LIMIT}")
    start = await resolve_node(store, node_ref, session_id=session_id, version=version)
    if start.label is target_label:
        reached = f"reached {target_label.value}"
        return ProvenanceTrace(start, [], broken=False, truncated=False, reason=reached)
    scope = session_id or start.session_id
    if isinstance(store, WalkReader):
        levels = await store.walk_upstream(start, UPSTREAM, target_label, max_hops, scope)
    else:
        levels = await _levels(store, start, target_label, max_hops, scope)
    return _verdict(start, levels, target_label, max_hops)


def _verdict(
    start: NodeRecord, levels: Sequence[Sequence[UpstreamStep]], target: Label, max_hops: int
) -> ProvenanceTrace:
    chain = [
        ProvenanceStep(hop, node, via, node.label is target)
        for hop, level in enumerate(levels, start=1)
        for node, via in level
    ]
    if any(step.is_terminal for step in chain):
        reason = f"reached {target.value}"
        return ProvenanceTrace(start, chain, broken=False, truncated=False, reason=reason)
    if len(levels) == max_hops:
        reason = f"truncated at maxHops={max_hops}"
        return ProvenanceTrace(start, chain, broken=False, truncated=True, reason=reason)
    tail = chain[-1].node if chain else start
    reason = f"no upstream of {tail.label.value} {tail.key}"
    return ProvenanceTrace(start, chain, broken=True, truncated=False, reason=reason)


async def _levels(
    store: GraphReader, start: NodeRecord, target: Label, max_hops: int, session_id: str
) -> list[list[UpstreamStep]]:
    """Hop by hop over the primitives, up to the first level holding ``target``."""
    visited = {start.id}
    frontier = [start]
    levels: list[list[UpstreamStep]] = []
    while len(levels) < max_hops:
        found = await _upstream(store, frontier, session_id, visited)
        if not found:
            break
        levels.append(found)
        if any(node.label is target for node, _ in found):
            break
        visited.update(node.id for node, _ in found)
        frontier = [node for node, _ in found]
    return levels


async def _upstream(
    store: GraphReader, frontier: Sequence[NodeRecord], session_id: str, visited: set[str]
) -> list[UpstreamStep]:
    """The new live nodes one hop upstream of ``frontier``, most recent first."""
    moves: dict[Move, list[str]] = {}
    for node in frontier:
        for move in UPSTREAM[node.label]:
            moves.setdefault(move, []).append(node.id)
    via: dict[str, EdgeType] = {}
    preceded: dict[str, str] = {}  # a `next` predecessor → the frontier step it precedes
    for (edge_type, direction), ids in moves.items():
        for edge in await store.expand(ids, edge_type, direction):
            far = edge.source if direction is IN else edge.target
            if edge_type is EdgeType.NEXT:
                preceded.setdefault(far, edge.target)
            else:
                via.setdefault(far, edge_type)
    fetched = await store.get_nodes([*via, *preceded])
    nodes = {n.id: n for n in fetched if in_scope(n, session_id)}
    frontier_by_id = {node.id: node for node in frontier}
    heads: dict[tuple[str, str | None], NodeRecord | None] = {}
    for far, near in preceded.items():
        earlier = nodes.get(far)
        if earlier is None or far in via:
            continue
        if earlier.label in STEPS:
            # An earlier step: jump to the start of the chain instead of listing every step.
            head = await _chain_head(store, frontier_by_id[near], heads)
            if head is not None and in_scope(head, session_id):
                nodes[head.id] = earlier = head
        via.setdefault(earlier.id, EdgeType.NEXT)
    fresh = sorted(
        (nodes[i] for i in via if i in nodes and i not in visited), key=recency, reverse=True
    )
    return [(node, via[node.id]) for node in fresh]


async def _chain_head(
    store: GraphReader, step: NodeRecord, cache: dict[tuple[str, str | None], NodeRecord | None]
) -> NodeRecord | None:
    """The first step of the chain ``step`` belongs to (looked up once per chain and hop)."""
    scope = step.get("parent_subtask_id")
    chain = (step.session_id, str(scope) if scope is not None else None)
    if chain not in cache:
        _, cache[chain] = await store.chain_neighbours(*chain, CHAIN_START)
    return cache[chain]
