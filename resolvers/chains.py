"""Chain viewing: short, label-specific walks keyed by a UI button (SPEC §4, reference §4.5).

A kind maps to an ordered tuple of hops. Rules (improving on reference §8.3 items 19-21):

* each hop expands from the nodes the previous hop reached (the frontier), never from the
  accumulated set, and keeps only live nodes (of ``session_id`` when given — Papers included)
  that carry the hop's target label and were not reached before;
* a ``limit`` hop keeps the newest nodes by their own version and time, then id
  (``resolvers.merging.newest``: never by arrival); other hops list the most recent first by
  ``seq``, then ``created_at``, then id;
* a ``variable`` hop (``next in→ResearchGoal *``) walks one or more steps until it reaches the
  target label and keeps the path it took, intermediate steps included;
* a hop that reaches nothing empties the whole chain (all-or-nothing);
* the result holds the reached nodes (source first, then by hop, then most recent first, paged
  by ``CHAIN_CAP``; every page keeps the source and the anchors) and only the edges the walk
  crossed among them.

The hops are data (``HOPS``): a store that offers ``WalkReader`` (Neo4j) runs them in one
request, the source's global id resolved in the same request; elsewhere they run here, one
``expand`` and one ``get_nodes`` per hop (per level of a variable hop, unless the store offers
``ReachReader``: then one request for all its levels, walked here from the answer). Either way
the result is assembled here (``_slice``), and every hop reads one state of the source's
session.

Label decisions: the reference's ``Task`` target of ``viewPrevTask`` / ``viewNextTask`` means a
chain *step* — its old SubTask label became our Task (subagent scope) and ToolCall — so those hops
accept both (never the goal). Every other hop enforces exactly its one label: ``viewSourcePaper``
returns only Papers, ``viewCitingEvidenceForArtifact`` only Evidence, ``viewCitedPaper`` only
Papers, and ``viewGoal`` / ``viewRelatedTask`` are empty when no ResearchGoal is reachable.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Protocol, cast

from resolvers.errors import InvalidInputError, NodeNotFoundError
from resolvers.merging import newest
from resolvers.records import Direction, EdgeRecord, EdgeType, GraphSlice, Label, NodeRecord
from resolvers.resolve import in_scope, resolve_node, source_ref
from resolvers.search import decode_cursor, encode_cursor
from resolvers.store import Hop, HopRecord, ReachReader, SourceRef, WalkReader, one_state
from resolvers.validate import check_first

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from resolvers.store import GraphReader

CHAIN_CAP = 500

IN, OUT = Direction.IN, Direction.OUT
STEPS = frozenset({Label.TASK, Label.TOOL_CALL})


class ChainKind(StrEnum):
    VIEW_PREV_TASK = "viewPrevTask"
    VIEW_NEXT_TASK = "viewNextTask"
    VIEW_GOAL = "viewGoal"
    VIEW_INPUT = "viewInput"
    VIEW_OUTPUT = "viewOutput"
    VIEW_PRODUCING_TASK = "viewProducingTask"
    VIEW_EXTRACTED_EVIDENCE = "viewExtractedEvidence"
    VIEW_CITING_CLAIM = "viewCitingClaim"
    VIEW_CITING_ARTIFACT = "viewCitingArtifact"
    VIEW_SEARCHING_TASK = "viewSearchingTask"
    VIEW_SOURCE_PAPER = "viewSourcePaper"
    VIEW_CITING_CLAIM_FOR_EVIDENCE = "viewCitingClaimForEvidence"
    VIEW_CITING_ARTIFACT_FOR_EVIDENCE = "viewCitingArtifactForEvidence"
    VIEW_CITING_EVIDENCE_FOR_CLAIM = "viewCitingEvidenceForClaim"
    VIEW_CITING_SOURCE_FILE_FOR_CLAIM = "viewCitingSourceFileForClaim"
    VIEW_CONTAINING_ARTIFACT = "viewContainingArtifact"
    VIEW_CONTAINED_CLAIMS = "viewContainedClaims"
    VIEW_CITING_CLAIM_FOR_ARTIFACT = "viewCitingClaimForArtifact"
    VIEW_PRODUCING_CODE = "viewProducingCode"
    VIEW_CITING_EVIDENCE_FOR_ARTIFACT = "viewCitingEvidenceForArtifact"
    VIEW_CITED_PAPER = "viewCitedPaper"
    VIEW_RELATED_TASK = "viewRelatedTask"


def _hop(edge: EdgeType, direction: Direction, target: Label, *, limit: int | None = None) -> Hop:
    return Hop(edge, direction, frozenset({target}), limit)


_NEXT, _PRODUCES, _EXTRACTS = EdgeType.NEXT, EdgeType.PRODUCES, EdgeType.EXTRACTS
_SUPPORTS, _STATED_IN, _INPUT = EdgeType.SUPPORTS, EdgeType.STATED_IN, EdgeType.INPUT
_TO_GOAL = Hop(_NEXT, IN, frozenset({Label.RESEARCH_GOAL}), variable=True)
_TO_EVIDENCE = _hop(_EXTRACTS, OUT, Label.EVIDENCE)
_TO_CLAIM = _hop(_SUPPORTS, OUT, Label.CLAIM)
_TO_REPORT = _hop(_STATED_IN, OUT, Label.ARTIFACT)
_FROM_CLAIM = _hop(_STATED_IN, IN, Label.CLAIM)
_FROM_EVIDENCE = _hop(_SUPPORTS, IN, Label.EVIDENCE)

HOPS: Mapping[ChainKind, tuple[Hop, ...]] = {
    ChainKind.VIEW_PREV_TASK: (Hop(_NEXT, IN, STEPS, limit=1),),
    ChainKind.VIEW_NEXT_TASK: (Hop(_NEXT, OUT, STEPS, limit=1),),
    ChainKind.VIEW_GOAL: (_TO_GOAL,),
    ChainKind.VIEW_INPUT: (_hop(_INPUT, IN, Label.ARTIFACT, limit=1),),
    ChainKind.VIEW_OUTPUT: (_hop(_PRODUCES, OUT, Label.ARTIFACT),),
    ChainKind.VIEW_PRODUCING_TASK: (_hop(_PRODUCES, IN, Label.TOOL_CALL),),
    ChainKind.VIEW_EXTRACTED_EVIDENCE: (_TO_EVIDENCE,),
    ChainKind.VIEW_CITING_CLAIM: (_TO_EVIDENCE, _TO_CLAIM),
    ChainKind.VIEW_CITING_ARTIFACT: (_TO_EVIDENCE, _TO_CLAIM, _TO_REPORT),
    ChainKind.VIEW_SEARCHING_TASK: (_hop(_PRODUCES, IN, Label.TOOL_CALL, limit=1),),
    ChainKind.VIEW_SOURCE_PAPER: (_hop(_EXTRACTS, IN, Label.PAPER, limit=1),),
    ChainKind.VIEW_CITING_CLAIM_FOR_EVIDENCE: (_TO_CLAIM,),
    ChainKind.VIEW_CITING_ARTIFACT_FOR_EVIDENCE: (_TO_CLAIM, _TO_REPORT),
    ChainKind.VIEW_CITING_EVIDENCE_FOR_CLAIM: (_FROM_EVIDENCE,),
    ChainKind.VIEW_CITING_SOURCE_FILE_FOR_CLAIM: (_hop(_SUPPORTS, IN, Label.SOURCE_FILE),),
    ChainKind.VIEW_CONTAINING_ARTIFACT: (_hop(_STATED_IN, OUT, Label.ARTIFACT, limit=1),),
    ChainKind.VIEW_CONTAINED_CLAIMS: (_FROM_CLAIM,),
    ChainKind.VIEW_CITING_CLAIM_FOR_ARTIFACT: (_TO_CLAIM,),
    ChainKind.VIEW_PRODUCING_CODE: (_hop(_PRODUCES, IN, Label.CODE, limit=1),),
    ChainKind.VIEW_CITING_EVIDENCE_FOR_ARTIFACT: (_FROM_CLAIM, _FROM_EVIDENCE),
    ChainKind.VIEW_CITED_PAPER: (_FROM_CLAIM, _FROM_EVIDENCE, _hop(_EXTRACTS, IN, Label.PAPER)),
    ChainKind.VIEW_RELATED_TASK: (
        _hop(_PRODUCES, IN, Label.CODE),
        _hop(_PRODUCES, IN, Label.TOOL_CALL),
        _TO_GOAL,
    ),
}


def recency(node: NodeRecord) -> tuple[int, float, str]:
    """Sort key, larger = more recent: ``seq``, then ``created_at``, then id."""
    return node.seq, node.created_at.timestamp(), node.id


async def get_chain(
    store: GraphReader,
    node_ref: str,
    kind: ChainKind,
    *,
    session_id: str | None = None,
    version: int | None = None,
    first: int | None = None,
    after: str | None = None,
) -> GraphSlice:
    """The nodes and edges of the ``kind`` walk from ``node_ref``; empty when any hop is.

    Paged: a page holds up to ``first`` nodes (default and maximum ``CHAIN_CAP``; at least one
    more than its anchors): always the source and the chain's anchors — the targets of a final
    variable hop (the goal of ``VIEW_GOAL``), which a long path would otherwise push off the
    page — and the next further nodes from ``after``; ``end_cursor`` continues. Edges are those
    walked among the page's nodes."""
    size = check_first(first, CHAIN_CAP, CHAIN_CAP)
    offset = decode_cursor(after)
    source, walked = await _walk_from(store, node_ref, HOPS[kind], session_id, version)
    if walked is None:
        return GraphSlice([], [], 0)
    return _slice(source, HOPS[kind], walked, size, offset)


async def chain_exists(
    store: GraphReader,
    node_ref: str,
    kinds: Sequence[ChainKind],
    *,
    session_id: str | None = None,
    version: int | None = None,
) -> dict[ChainKind, bool]:
    """Per kind, whether ``get_chain`` would be non-empty (one source resolution)."""
    if not kinds:
        raise InvalidInputError("kinds", "must not be empty")
    source = await resolve_node(store, node_ref, session_id=session_id, version=version)
    if isinstance(store, WalkReader):
        return {
            kind: await store.walk_chain(source, HOPS[kind], session_id) is not None
            for kind in dict.fromkeys(kinds)
        }
    # Kinds often begin with the same hops (three of an artifact's six at its claims): each
    # question is asked once.
    reader = _RememberedReach(store) if isinstance(store, ReachReader) else _Remembered(store)
    return {
        kind: await _leads_somewhere(reader, source, HOPS[kind], session_id)
        for kind in dict.fromkeys(kinds)
    }


async def _leads_somewhere(
    store: _HopReader, source: NodeRecord, hops: Sequence[Hop], session_id: str | None
) -> bool:
    """Whether ``_walk`` would reach anything. A ``ReachReader`` is asked the last hop as a
    question whose answer is yes or no (``reaches``): a hop reaches something exactly when a
    node it may keep is there (a walk to the goal: when one is at any level, not only at the
    nearest), whichever it would keep."""
    *before, last = hops
    if not isinstance(store, ReachReader) or any(hop.variable for hop in before):
        return await _walk(store, source, hops, session_id) is not None
    walked = await _walk(store, source, before, session_id)
    if walked is None:
        return False
    frontier = walked[-1].nodes if walked else [source]  # a single hop's nodes are its targets
    reached = {source.id, *(node.id for hop in walked for node in hop.nodes)}
    return await store.reaches(
        [node.id for node in frontier],
        last.edge,
        last.direction,
        stop=last.targets,
        session_id=session_id,
        avoid=reached,
        walk_on=last.variable,
    )


async def _walk_from(
    store: GraphReader,
    node_ref: str,
    hops: Sequence[Hop],
    session_id: str | None,
    version: int | None,
) -> tuple[NodeRecord, list[HopRecord] | None]:
    """The source ``node_ref`` names and what each hop adds from it, every hop from one state
    of the source's session: a ``WalkReader`` finds the source in the walk's own request
    when ``node_ref`` is a lookup (``source_ref``), else after ``resolve_node``."""
    if not isinstance(store, WalkReader):
        source = await resolve_node(store, node_ref, session_id=session_id, version=version)
        async with one_state(store, session_id or source.session_id) as view:
            return source, await _walk(view, source, hops, session_id)
    ref = source_ref(node_ref, session_id=session_id, version=version)
    sourced = None if ref is None else await store.walk_chain_from(ref, hops)
    if sourced is None:
        found = await resolve_node(store, node_ref, session_id=session_id, version=version)
        ref = SourceRef(found.label, found.id, session_id)
        sourced = await store.walk_chain_from(ref, hops)
    if sourced is None:  # deleted since it was resolved
        raise NodeNotFoundError(node_ref)
    return sourced.source, None if sourced.hops is None else list(sourced.hops)


async def _walk(
    store: _HopReader, source: NodeRecord, hops: Sequence[Hop], session_id: str | None
) -> list[HopRecord] | None:
    """What each hop adds, over the primitives (a ``WalkReader`` walks them itself)."""
    reached = {source.id}
    frontier = [source]
    added: list[HopRecord] = []
    for hop in hops:
        step = _variable_hop if hop.variable else _single_hop
        found = await step(store, frontier, hop, session_id, reached)
        if found is None:
            return None
        frontier, record = found
        reached.update(node.id for node in record.nodes)
        added.append(record)
    return added


Reached = tuple[list[NodeRecord], HopRecord]
"""A hop's result: its target nodes (the next frontier) and what it adds to the walk."""


def _far(edge: EdgeRecord, direction: Direction) -> str:
    return edge.source if direction is Direction.IN else edge.target


def _near(edge: EdgeRecord, direction: Direction) -> str:
    return edge.target if direction is Direction.IN else edge.source


class _HopReader(Protocol):
    """The two primitives one level of a walk reads."""

    async def expand(
        self, ids: Sequence[str], edge_type: EdgeType, direction: Direction
    ) -> list[EdgeRecord]: ...

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]: ...


class _Remembered:
    """``expand`` and ``get_nodes`` of ``store``, each edge question and each node read once
    (the answers of one state at most: no walk that uses it holds a view)."""

    def __init__(self, store: _HopReader) -> None:
        self._store = store
        self._edges: dict[tuple[tuple[str, ...], EdgeType, Direction], list[EdgeRecord]] = {}
        self._nodes: dict[str, NodeRecord | None] = {}

    async def expand(
        self, ids: Sequence[str], edge_type: EdgeType, direction: Direction
    ) -> list[EdgeRecord]:
        key = (tuple(ids), edge_type, direction)
        found = self._edges.get(key)
        if found is None:
            found = self._edges[key] = await self._store.expand(ids, edge_type, direction)
        return list(found)

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        nodes = self._nodes
        missing = [node_id for node_id in dict.fromkeys(ids) if node_id not in nodes]
        if missing:
            nodes.update(zip(missing, await self._store.get_nodes(missing), strict=True))
        return [nodes[node_id] for node_id in ids]


class _RememberedReach(_Remembered):
    """``_Remembered`` of a ``ReachReader``, which stays one (its own ``reach`` and
    ``reaches`` answer: a walk reads what no other walk asks)."""

    def __init__(self, store: ReachReader) -> None:
        super().__init__(cast("_HopReader", store))
        self.reach = store.reach
        self.reaches = store.reaches


class _Reach:
    """``expand`` and ``get_nodes`` answered from a ``ReachReader.reach`` answer, as the store
    would answer them: per id asked, in order, its edges in the order they were stored."""

    def __init__(
        self, edges: Sequence[EdgeRecord], nodes: Sequence[NodeRecord], direction: Direction
    ) -> None:
        self._edges: dict[str, list[EdgeRecord]] = {}
        for edge in edges:
            self._edges.setdefault(_near(edge, direction), []).append(edge)
        self._nodes = {node.id: node for node in nodes}

    async def expand(
        self, ids: Sequence[str], edge_type: EdgeType, direction: Direction
    ) -> list[EdgeRecord]:
        return [edge for near in dict.fromkeys(ids) for edge in self._edges.get(near, ())]

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        return [self._nodes.get(node_id) for node_id in ids]


async def _fetch(
    store: _HopReader, ids: Sequence[str], session_id: str | None
) -> dict[str, NodeRecord]:
    nodes = await store.get_nodes(list(dict.fromkeys(ids)))
    return {node.id: node for node in nodes if in_scope(node, session_id)}


async def _single_hop(
    store: _HopReader,
    frontier: Sequence[NodeRecord],
    hop: Hop,
    session_id: str | None,
    reached: set[str],
) -> Reached | None:
    edges = await store.expand([node.id for node in frontier], hop.edge, hop.direction)
    far = [_far(edge, hop.direction) for edge in edges]
    fetched = await _fetch(store, [i for i in far if i not in reached], session_id)
    order = recency if hop.limit is None else newest
    targets = sorted(
        (node for node in fetched.values() if node.label in hop.targets), key=order, reverse=True
    )
    if hop.limit is not None:
        targets = targets[: hop.limit]
    if not targets:
        return None
    kept = {node.id for node in targets}
    crossed = [edge for edge in edges if _far(edge, hop.direction) in kept]
    return targets, HopRecord(targets, crossed)


async def _variable_hop(
    store: _HopReader,
    frontier: Sequence[NodeRecord],
    hop: Hop,
    session_id: str | None,
    reached: set[str],
) -> Reached | None:
    """Breadth-first over ``hop.edge`` until the nearest level holding a target."""
    seen: dict[str, NodeRecord] = {node.id: node for node in frontier}
    came_by: dict[str, EdgeRecord] = {}
    level = list(seen)
    reader: _HopReader = store
    if isinstance(store, ReachReader):
        edges, nodes = await store.reach(
            level, hop.edge, hop.direction, stop=hop.targets, session_id=session_id
        )
        reader = _Reach(edges, nodes, hop.direction)
    while level:
        edges = await reader.expand(level, hop.edge, hop.direction)
        ids = [_far(e, hop.direction) for e in edges]
        unseen = [i for i in ids if i not in seen and i not in reached]
        fetched = await _fetch(reader, unseen, session_id)
        for edge in edges:
            far = _far(edge, hop.direction)
            if far in fetched and far not in came_by:
                came_by[far] = edge
        seen.update(fetched)
        targets = [node for node in fetched.values() if node.label in hop.targets]
        if targets:
            targets.sort(key=recency, reverse=True)
            return targets, _paths(targets, came_by, seen, hop.direction)
        level = list(fetched)
    return None


def _paths(
    targets: Sequence[NodeRecord],
    came_by: Mapping[str, EdgeRecord],
    seen: Mapping[str, NodeRecord],
    direction: Direction,
) -> HopRecord:
    """Every node and edge on the way back from each target to the frontier."""
    nodes: dict[str, NodeRecord] = {}
    edges: dict[tuple[EdgeType, str, str], EdgeRecord] = {}
    for target in targets:
        current = target.id
        while current not in nodes and current in came_by:
            nodes[current] = seen[current]
            edge = came_by[current]
            edges[edge.identity] = edge
            current = _near(edge, direction)
    return HopRecord(list(nodes.values()), list(edges.values()))


def _slice(
    source: NodeRecord, hops: Sequence[Hop], walked: Sequence[HopRecord], size: int, offset: int
) -> GraphSlice:
    hop_of = {source.id: 0}
    nodes = {source.id: source}
    edges: dict[tuple[EdgeType, str, str], tuple[int, EdgeRecord]] = {}
    for index, hop in enumerate(walked, start=1):
        for node in hop.nodes:
            nodes.setdefault(node.id, node)
            hop_of.setdefault(node.id, index)
        for edge in hop.edges:
            edges.setdefault(edge.identity, (index, edge))
    ordered = sorted(nodes.values(), key=recency, reverse=True)
    ordered.sort(key=lambda node: hop_of[node.id])  # stable: by hop, then most recent
    anchors = {source.id}
    if hops and hops[-1].variable:
        anchors.update(node.id for node in walked[-1].nodes if node.label in hops[-1].targets)
    rest = [node for node in ordered if node.id not in anchors]
    page = rest[offset : offset + max(1, size - len(anchors))]
    truncated = offset + len(page) < len(rest)
    kept = anchors | {node.id for node in page}
    crossed = [
        edge
        for _, edge in sorted(edges.values(), key=lambda item: (item[0], *item[1].identity))
        if edge.source in kept and edge.target in kept
    ]
    cursor = encode_cursor(offset + len(page)) if truncated else None
    nodes_kept = [node for node in ordered if node.id in kept]  # in chain order, anchors too
    return GraphSlice(nodes_kept, crossed, len(ordered), truncated, cursor)
