"""Provenance trace: an upstream-only exploration with a verdict, for the reviewer (SPEC §4).

What is walked: every stored edge of ``WALKED`` against its arrow, from any node (``feeds``,
``supersedes`` and every move along an arrow are never walked: an uploaded file is a dead end),
to live nodes of the trace's session (``session_id``, else the start's).

Hops. One hop is either one edge of another type, or a **run** of one or more ``next`` edges
(the reference's ``next in *``): a step reaches every earlier step of its chain, and the
session's goal through the main chain's first step, in one hop. So an artifact made at step
10 000 is three hops from the goal (Code, ToolCall, the run), and one made inside a subagent
five or six (Code, child, the earlier children, the scope over ``contains``, the run to the
goal). A run stops at the first node of the target label it meets. Hop ``k`` holds the nodes
first reached at hop ``k``; the trace stops at the first hop holding a target node.

What the answer lists:

* ``chain``, hop by hop, newest first by the nodes' own version, then own time (a step's chain
  time, a Paper's retrieval, …), then id — never by arrival: the nodes reached over
  an edge of another type than ``next``, and of a run only the nodes where it ends or leaves
  the chain — the goal, a chain's first step (a scope's first child, whose upstream is the
  scope) — because the steps in between have no upstream but the run itself. The hop that
  reaches the target lists only its terminal nodes (the reference's choice): the first target
  node on each run, and every target node reached otherwise.
* ``path``, the witness: from the start to the first terminal of that hop, every stored edge
  walked, the steps of each run included. Each step names the node it was reached from:
  the newest node (as above) of the previous hop with an edge to it (ties by ``WALKED``
  order), or, inside a run, the next step of the chain.
* ``broken`` when nothing is left to explore and no target was reached; ``reason`` then names
  the dead ends (explored nodes without any upstream). ``truncated`` when hop ``maxHops``
  did not reach the target but something is left to explore.

Cost. A run is not walked edge by edge: the steps of a chain have no upstream but ``next`` and,
for a chain's first step, ``contains``, so the chain index gives what a run can reach — the
nearest step of the target label (``chain_before``), the chain's first step and the goal —
in O(log n) per run; the steps of the witness's runs are read once, as one slice per run,
and reported only over the ``next`` edges actually stored between them. The part of each
chain a run has covered is remembered as a position, so no run is walked twice.

The walk runs here, over the primitives: per hop one ``expand`` per edge type and one
``get_nodes``, per run one or two chain-index lookups, per run of the witness path one slice
and one ``edges_among`` (a terminal whose witness cannot be shown over stored edges, which the
write path never leaves, is not reported as reached). A store that offers ``TraceReader``
(Neo4j) answers all the questions of the whole exploration in one request, the start's
resolution included (``UpstreamRegion``), and those of the witness path in another; the walk
draws the same conclusions from those answers (``_Prefetched``). Either way every read of a
trace sees one state of its session: over the primitives in ``one_state``, on a
``TraceReader`` in its ``upstream_walk``, whose first request finds the start.

The region. What a hop can list from a node ``n`` of its frontier (the trace's session
``s``): the live nodes of ``s`` with a walked edge other than ``next`` into ``n``; for a step,
the nearest step of the target label below it when it is live and of ``s``, its chain's first
step (when that is not ``n``), and the live nodes of ``s`` with a ``next`` edge into that first
step. The region holds the primitive answers about every node reachable so level by level
(``resolvers.store.UpstreamRegion``). It never shrinks an answer: the walk lists a subset of
what the region's levels hold (it skips what an earlier hop or run reached), and when a hop's
frontier holds a node outside the region — the walk went on past a level the region stopped
at — that hop is asked of the store as before (``upstream_hop``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from resolvers.chains import STEPS
from resolvers.errors import InvalidInputError, NodeNotFoundError
from resolvers.merging import newest
from resolvers.records import Direction, EdgeRecord, EdgeType, Label, NodeRecord
from resolvers.resolve import in_scope, resolve_node, source_ref
from resolvers.store import (
    LineQuery,
    LineRecord,
    RunQuery,
    SourceRef,
    TraceReader,
    UpstreamRecord,
    one_state,
)
from resolvers.writes import CHAIN_START

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from resolvers.store import (
        ChainPosition,
        GraphReader,
        RegionEntry,
        UpstreamRegion,
        UpstreamView,
    )

MAX_HOPS_LIMIT = 32
# What a trace looks for, and how far, when the caller does not say (SPEC §4).
DEFAULT_TARGET = Label.RESEARCH_GOAL
DEFAULT_MAX_HOPS = 8
DEAD_ENDS_NAMED = 5

WALKED: tuple[EdgeType, ...] = (
    EdgeType.PRODUCES,
    EdgeType.INPUT,
    EdgeType.NEXT,
    EdgeType.CONTAINS,
    EdgeType.STATED_IN,
    EdgeType.SUPPORTS,
    EdgeType.EXTRACTS,
)
"""The edges a trace walks against the arrow (SPEC §4), in the order that breaks ties."""

Chain = tuple[str, str | None]


@dataclass(frozen=True, slots=True)
class UpstreamStep:
    """A node a trace reached at ``hop``: over the stored edge of type ``via`` from the node
    ``reached_from`` (downstream of it)."""

    node: NodeRecord
    via: EdgeType
    reached_from: str
    hop: int


@dataclass(frozen=True, slots=True)
class UpstreamWalk:
    """A trace's exploration (``resolvers.provenance``): the nodes listed per hop (the last
    hop only its terminals when it reached the target), the witness path to the first of
    them (empty when none was reached), the explored nodes without any upstream, and
    whether anything is left to explore after the last hop."""

    levels: Sequence[Sequence[UpstreamStep]]
    path: Sequence[UpstreamStep]
    dead_ends: Sequence[NodeRecord]
    more: bool


@dataclass(frozen=True, slots=True)
class ProvenanceStep:
    hop: int
    node: NodeRecord
    via_edge: EdgeType
    reached_from: str
    is_terminal: bool


@dataclass(frozen=True, slots=True)
class ProvenanceTrace:
    start: NodeRecord
    path: list[ProvenanceStep]
    chain: list[ProvenanceStep]
    broken: bool
    truncated: bool
    reason: str | None


async def trace_provenance(
    store: GraphReader,
    node_ref: str,
    *,
    target_label: Label | None = None,
    max_hops: int | None = None,
    session_id: str | None = None,
    version: int | None = None,
) -> ProvenanceTrace:
    """Explore upstream from ``node_ref`` until ``target_label``, a dead end or ``max_hops``
    (``DEFAULT_TARGET`` and ``DEFAULT_MAX_HOPS`` when not given)."""
    target_label = DEFAULT_TARGET if target_label is None else target_label
    max_hops = DEFAULT_MAX_HOPS if max_hops is None else max_hops
    if not 1 <= max_hops <= MAX_HOPS_LIMIT:
        raise InvalidInputError("maxHops", f"must be between 1 and {MAX_HOPS_LIMIT}")
    if isinstance(store, TraceReader):
        return await _traced(store, store, node_ref, target_label, max_hops, session_id, version)
    start = await resolve_node(store, node_ref, session_id=session_id, version=version)
    if start.label is target_label:
        return _at_target(start, target_label)
    scope = session_id or start.session_id
    async with one_state(store, scope) as view:  # every hop and the witness from one state
        walk = await _Walk(_Primitives(view, target_label), start, target_label, scope).explore(
            max_hops
        )
    return _verdict(start, walk, target_label, max_hops)


async def _traced(
    store: GraphReader,
    tracer: TraceReader,
    node_ref: str,
    target: Label,
    max_hops: int,
    session_id: str | None,
    version: int | None,
) -> ProvenanceTrace:
    """The trace on ``tracer`` (``store`` itself): from the start its first request finds
    when ``node_ref`` is a lookup (``source_ref``), else from the node ``resolve_node`` finds."""
    ref = source_ref(node_ref, session_id=session_id, version=version)
    traced = None if ref is None else await _trace_from(tracer, ref, target, max_hops)
    if traced is None:
        start = await resolve_node(store, node_ref, session_id=session_id, version=version)
        if start.label is target:
            return _at_target(start, target)
        ref = SourceRef(start.label, start.id, session_id)
        traced = await _trace_from(tracer, ref, target, max_hops)
    if traced is None:  # deleted since it was resolved
        raise NodeNotFoundError(node_ref)
    return traced


async def _trace_from(
    store: TraceReader, ref: SourceRef, target: Label, max_hops: int
) -> ProvenanceTrace | None:
    """The trace from the node ``ref`` finds, every read from one state of its session;
    ``None`` when it finds none."""

    async def traced(view: UpstreamView) -> ProvenanceTrace | None:
        start = view.region.start
        if start is None:
            return None
        if start.label is target:
            return _at_target(start, target)
        scope = ref.session_id or start.session_id
        reads = _Prefetched(view.reads, target, view.region)
        walk = await _Walk(reads, start, target, scope).explore(max_hops)
        return _verdict(start, walk, target, max_hops)

    return await store.upstream_walk(ref, target, max_hops + 1, traced)


def _at_target(start: NodeRecord, target: Label) -> ProvenanceTrace:
    reached = f"reached {target.value}"
    return ProvenanceTrace(start, [], [], broken=False, truncated=False, reason=reached)


def _verdict(
    start: NodeRecord, walk: UpstreamWalk, target: Label, max_hops: int
) -> ProvenanceTrace:
    def step(found: UpstreamStep) -> ProvenanceStep:
        node = found.node
        return ProvenanceStep(found.hop, node, found.via, found.reached_from, node.label is target)

    chain = [step(found) for level in walk.levels for found in level]
    if walk.path:
        path = [step(found) for found in walk.path]
        reason = f"reached {target.value}"
        return ProvenanceTrace(start, path, chain, broken=False, truncated=False, reason=reason)
    if walk.more:
        reason = f"truncated at maxHops={max_hops}"
        return ProvenanceTrace(start, [], chain, broken=False, truncated=True, reason=reason)
    return ProvenanceTrace(
        start, [], chain, broken=True, truncated=False, reason=dead_end_reason(walk.dead_ends)
    )


def dead_end_reason(dead_ends: Sequence[NodeRecord]) -> str:
    """``no upstream of <Label> <key>, …`` naming the first few dead ends."""
    if not dead_ends:
        return "nothing further upstream"
    named = ", ".join(f"{node.label.value} {node.key}" for node in dead_ends[:DEAD_ENDS_NAMED])
    more = len(dead_ends) - DEAD_ENDS_NAMED
    return f"no upstream of {named}" + (f" and {more} more" if more > 0 else "")


def chain_of(node: NodeRecord) -> Chain | None:
    """The chain a step belongs to: ``(session, scope key)`` (``None`` scope = main chain)."""
    if node.seq <= 0:
        return None
    scope = node.get("parent_subtask_id")
    return node.session_id, str(scope) if scope is not None else None


def position(node: NodeRecord) -> ChainPosition:
    return str(node.get("chain_at", "")), node.seq


@dataclass(slots=True)
class _Run:
    """A run of ``next`` edges from ``start`` down its chain, to above ``low`` (exclusive;
    ``None`` = through the chain's first step)."""

    start: NodeRecord
    chain: Chain
    low: ChainPosition | None

    @property
    def query(self) -> RunQuery:
        return RunQuery(*self.chain, position(self.start), self.low)


@dataclass(slots=True)
class _Primitives:
    """The questions of a walk, each asked as its own primitive."""

    store: GraphReader
    target: Label

    async def prepare(self, frontier: Sequence[NodeRecord], runs: Sequence[_Run]) -> None:
        """Nothing to ask ahead: every question goes to the store when it is asked."""

    async def walked(self, ids: Sequence[str]) -> list[tuple[int, EdgeRecord]]:
        """Every ``WALKED`` edge into ``ids``, with the index of its type."""
        return [
            (index, edge)
            for index, edge_type in enumerate(WALKED)
            for edge in await self.store.expand(ids, edge_type, Direction.IN)
        ]

    async def nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        return await self.store.get_nodes(ids)

    async def nearest(self, run: RunQuery) -> list[NodeRecord]:
        return await self.store.chain_before(
            run.session_id, run.scope_key, run.start, after=run.after, label=self.target, limit=1
        )

    async def head(self, chain: Chain) -> NodeRecord | None:
        _, head = await self.store.chain_neighbours(*chain, CHAIN_START)
        return head

    async def next_edges(self, ids: Sequence[str], direction: Direction) -> list[EdgeRecord]:
        return await self.store.expand(ids, EdgeType.NEXT, direction)

    async def lines(self, queries: Sequence[LineQuery]) -> list[LineRecord]:
        found: list[LineRecord] = []
        for query in queries:
            members = await self.store.chain_before(
                query.session_id, query.scope_key, query.start, after=query.after
            )
            ids = [query.start_id, *(node.id for node in members), query.end_id]
            found.append(LineRecord(members, await self.store.edges_among(ids, [EdgeType.NEXT])))
        return found


@dataclass(slots=True)
class _Prefetched:
    """The questions of a walk answered from a ``TraceReader``'s answers for the whole hop
    (``prepare``), which hold every primitive answer the hop can ask for: taken from the
    trace's region when it holds the whole frontier, else asked for the hop."""

    store: TraceReader
    target: Label
    region: UpstreamRegion
    hop: UpstreamRecord | None = None
    runs: dict[RunQuery, int] = field(default_factory=dict)

    async def prepare(self, frontier: Sequence[NodeRecord], runs: Sequence[_Run]) -> None:
        queries = [run.query for run in runs]
        self.runs = {query: index for index, query in enumerate(queries)}
        entries = self.region.entries
        if all(node.id in entries for node in frontier):
            self.hop = _from_region(entries, frontier, runs, self.target)
            return
        ids = [node.id for node in frontier]
        self.hop = await self.store.upstream_hop(ids, WALKED, queries, self.target)

    def _hop(self) -> UpstreamRecord:
        if self.hop is None:
            raise AssertionError("a hop's questions come after its prepare()")
        return self.hop

    async def walked(self, ids: Sequence[str]) -> list[tuple[int, EdgeRecord]]:
        return [(WALKED.index(edge.type), edge) for edge in self._hop().edges]

    async def nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        known = {node.id: node for node in self._hop().nodes}
        return [known.get(node_id) for node_id in ids]

    async def nearest(self, run: RunQuery) -> list[NodeRecord]:
        return list(self._hop().nearest[self.runs[run]])

    async def head(self, chain: Chain) -> NodeRecord | None:
        hop = self._hop()
        return next(
            hop.heads[index]
            for run, index in self.runs.items()
            if (run.session_id, run.scope_key) == chain and run.after is None
        )

    async def next_edges(self, ids: Sequence[str], direction: Direction) -> list[EdgeRecord]:
        wanted = set(ids)
        if direction is Direction.IN:
            return [edge for edge in self._hop().into_heads if edge.target in wanted]
        return [edge for edge in self._hop().out_of_ends if edge.source in wanted]

    async def lines(self, queries: Sequence[LineQuery]) -> list[LineRecord]:
        found = [
            _line_from_region(self.region.entries.get(query.start_id), query) for query in queries
        ]
        missing = [query for query, line in zip(queries, found, strict=True) if line is None]
        read = iter(await self.store.run_lines(missing) if missing else ())
        return [next(read) if line is None else line for line in found]


def _line_from_region(entry: RegionEntry | None, query: LineQuery) -> LineRecord | None:
    """The ``LineRecord`` of ``query`` from the region entry of its start, when the entry read
    the whole of it: ``below`` ends at the entry's nearest target, so a line that goes further
    down (no ``after``, or one below that target) is not there. Its edges are those of
    ``below_edges`` among the line's nodes: every one but a ``next`` loop on the end node,
    which a run's steps never cross (``_run_steps``)."""
    if entry is None or entry.below is None:
        return None
    if entry.nearest and (query.after is None or query.after < position(entry.nearest[0])):
        return None
    after = query.after
    members = [node for node in entry.below if after is None or position(node) > after]
    ids = {query.start_id, query.end_id, *(node.id for node in members)}
    edges = {
        edge.identity: edge
        for edge in entry.below_edges
        if edge.source in ids and edge.target in ids
    }
    return LineRecord(members, list(edges.values()))


def _from_region(
    entries: Mapping[str, RegionEntry],
    frontier: Sequence[NodeRecord],
    runs: Sequence[_Run],
    target: Label,
) -> UpstreamRecord:
    """The ``UpstreamRecord`` of a hop, from its frontier's region entries: a run's nearest
    target is its start's when it lies above the run's ``after``, its head the chain's first
    step when the run goes through it."""
    mine = [entries[node.id] for node in frontier]
    nearest: list[list[NodeRecord]] = []
    heads: list[NodeRecord | None] = []
    into: dict[tuple[EdgeType, str, str], EdgeRecord] = {}
    out: dict[tuple[EdgeType, str, str], EdgeRecord] = {}
    for run in runs:
        entry = entries[run.start.id]
        low = run.low
        found = [n for n in entry.nearest if target in STEPS and (low is None or position(n) > low)]
        head = entry.head if low is None else None
        nearest.append(found)
        heads.append(head)
        if head is not None:
            into.update((edge.identity, edge) for edge in entry.into_head)
        ends = {node.id for node in [*found, head] if node is not None}
        out.update((e.identity, e) for e in entry.out_of_ends if e.source in ends)
    edges = [edge for entry in mine for edge in entry.edges]
    return UpstreamRecord(
        sorted(edges, key=lambda edge: WALKED.index(edge.type)),
        [node for entry in mine for node in entry.nodes],
        nearest,
        heads,
        list(into.values()),
        list(out.values()),
    )


_Reads = _Primitives | _Prefetched


@dataclass(slots=True)
class _Walk:
    """One exploration; every ``_level`` costs a fixed number of questions."""

    reads: _Reads
    start: NodeRecord
    target: Label
    session_id: str
    visited: set[str] = field(default_factory=set)
    explored: dict[Chain, ChainPosition] = field(default_factory=dict)
    heads: dict[Chain, NodeRecord | None] = field(default_factory=dict)
    steps: dict[str, UpstreamStep] = field(default_factory=dict)
    runs: dict[str, _Run] = field(default_factory=dict)
    dead_ends: list[NodeRecord] = field(default_factory=list)

    async def explore(self, max_hops: int) -> UpstreamWalk:
        self.visited.add(self.start.id)
        frontier = [self.start]
        levels: list[list[UpstreamStep]] = []
        for hop in range(1, max_hops + 2):
            level, reached = await self._level(frontier, hop)
            if not reached or hop > max_hops:
                return UpstreamWalk(levels, [], self.dead_ends, more=reached)
            levels.append(level)
            if level and level[0].node.label is self.target:
                return UpstreamWalk(levels, await self._path(level[0]), [], more=False)
            frontier = [found.node for found in level]
        raise AssertionError("unreachable")  # the last hop always returns

    def _seen(self, node: NodeRecord) -> bool:
        chain = chain_of(node)
        if node.id in self.visited:
            return True
        return (
            chain is not None and chain in self.explored and position(node) <= self.explored[chain]
        )

    async def _level(
        self, frontier: Sequence[NodeRecord], hop: int
    ) -> tuple[list[UpstreamStep], bool]:
        """The nodes first reached at ``hop`` that the answer lists (see the module notes),
        and whether any node was (the steps inside a run may be all it reached)."""
        runs, explored = self._runs(frontier)
        await self.reads.prepare(frontier, runs)
        adjacent, plain = await self._adjacent(frontier, hop)
        listed = {node_id: adjacent[node_id] for node_id in plain}
        for step in await self._run_ends(runs, adjacent, hop):
            listed.setdefault(step.node.id, step)
        self.explored.update(explored)
        terminals = [step for step in listed.values() if step.node.label is self.target]
        # Newest first by the nodes' own versions and times, never by arrival (SPEC §3.9): the
        # first terminal is the witness's end, and the order decides each later step's
        # ``reachedFrom``.
        level = sorted(terminals or listed.values(), key=lambda s: newest(s.node), reverse=True)
        for step in level:
            self.visited.add(step.node.id)
            self.steps[step.node.id] = step
        return level, bool(adjacent or level)

    async def _adjacent(
        self, frontier: Sequence[NodeRecord], hop: int
    ) -> tuple[dict[str, UpstreamStep], set[str]]:
        """Every unseen node one stored edge upstream of ``frontier`` (by its best edge), and
        those reached over another edge than ``next``. Records the frontier's dead ends."""
        ids = [node.id for node in frontier]
        rank = {node_id: index for index, node_id in enumerate(ids)}
        edges = await self.reads.walked(ids)
        nodes = await self._fetch([edge.source for _, edge in edges])
        best: dict[str, tuple[tuple[int, int], UpstreamStep]] = {}
        plain: set[str] = set()
        upstream: set[str] = set()
        for index, edge in edges:
            node = nodes.get(edge.source)
            if node is None:
                continue
            upstream.add(edge.target)
            if self._seen(node):
                continue
            order = (rank[edge.target], index)
            if node.id not in best or order < best[node.id][0]:
                best[node.id] = (order, UpstreamStep(node, edge.type, edge.target, hop))
            if edge.type is not EdgeType.NEXT:
                plain.add(node.id)
        self.dead_ends.extend(node for node in frontier if node.id not in upstream)
        return {node_id: step for node_id, (_, step) in best.items()}, plain

    def _runs(
        self, frontier: Sequence[NodeRecord]
    ) -> tuple[list[_Run], dict[Chain, ChainPosition]]:
        """The runs from the frontier's steps — per chain, from each start down to the next
        start below it or to the part explored before — and each chain's new explored part."""
        starts: dict[Chain, list[NodeRecord]] = {}
        for node in frontier:
            chain = chain_of(node)
            if chain is not None:
                starts.setdefault(chain, []).append(node)
        runs: list[_Run] = []
        explored: dict[Chain, ChainPosition] = {}
        for chain, members in starts.items():
            members.sort(key=position, reverse=True)
            before = self.explored.get(chain)
            for index, member in enumerate(members):
                if before is not None and position(member) <= before:
                    break
                below = position(members[index + 1]) if index + 1 < len(members) else None
                lows = [low for low in (below, before) if low is not None]
                runs.append(_Run(member, chain, max(lows) if lows else None))
            top = position(members[0])
            explored[chain] = top if before is None else max(before, top)
        return runs, explored

    async def _run_ends(
        self, runs: Sequence[_Run], adjacent: dict[str, UpstreamStep], hop: int
    ) -> list[UpstreamStep]:
        """What the answer lists of each run: its first target node, else, when it runs
        through the chain's first step, where it ends (the goal, or that first step)."""
        ends: list[UpstreamStep] = []
        away: list[tuple[_Run, NodeRecord]] = []  # ends not next to the run's start
        heads: list[tuple[_Run, NodeRecord]] = []
        for run in runs:
            target = await self._nearest_target(run)
            if target is not None:
                away.append((run, target))
            elif run.low is None:
                head = await self._head(run.chain)
                if head is not None and head.id != run.start.id:
                    heads.append((run, head))
                else:  # the start is the first step: what precedes it is the goal
                    ends.extend(
                        step
                        for step in adjacent.values()
                        if step.via is EdgeType.NEXT and step.reached_from == run.start.id
                    )
        goals = await self._goals([head for _, head in heads])
        for run, head in heads:
            if head.id not in goals:
                away.append((run, head))
                continue
            for goal in goals[head.id]:
                self.runs[goal.id] = run
                ends.append(UpstreamStep(goal, EdgeType.NEXT, head.id, hop))
        successors = await self._successors([end for _, end in away if end.id not in adjacent])
        for run, end in away:
            if end.id in adjacent:
                ends.append(adjacent[end.id])
            elif end.id in successors:
                self.runs[end.id] = run
                ends.append(UpstreamStep(end, EdgeType.NEXT, successors[end.id], hop))
        return [step for step in ends if not self._seen(step.node)]

    async def _nearest_target(self, run: _Run) -> NodeRecord | None:
        if self.target not in STEPS:
            return None  # only steps are chain members
        found = await self.reads.nearest(run.query)
        return next((node for node in found if in_scope(node, self.session_id)), None)

    async def _head(self, chain: Chain) -> NodeRecord | None:
        if chain not in self.heads:
            self.heads[chain] = await self.reads.head(chain)
        return self.heads[chain]

    async def _goals(self, heads: Sequence[NodeRecord]) -> dict[str, list[NodeRecord]]:
        """The live nodes with a ``next`` edge into each of ``heads`` (a main chain's goals)."""
        if not heads:
            return {}
        edges = await self.reads.next_edges([node.id for node in heads], Direction.IN)
        nodes = await self._fetch([edge.source for edge in edges])
        goals: dict[str, list[NodeRecord]] = {}
        for edge in edges:
            if edge.source in nodes:
                goals.setdefault(edge.target, []).append(nodes[edge.source])
        return goals

    async def _successors(self, nodes: Sequence[NodeRecord]) -> dict[str, str]:
        """Per node, the step a run reached it from: the far end of its stored ``next`` edge."""
        if not nodes:
            return {}
        edges = await self.reads.next_edges([node.id for node in nodes], Direction.OUT)
        found: dict[str, str] = {}
        for edge in sorted(edges, key=lambda edge: edge.target):
            found.setdefault(edge.source, edge.target)
        return found

    async def _fetch(self, ids: Sequence[str]) -> dict[str, NodeRecord]:
        nodes = await self.reads.nodes(list(dict.fromkeys(ids)))
        return {node.id: node for node in nodes if in_scope(node, self.session_id)}

    async def _path(self, witness: UpstreamStep) -> list[UpstreamStep]:
        """The witness path from the start to ``witness``, each run's steps included; empty
        when a run's steps are not joined by stored ``next`` edges."""
        trail: list[tuple[UpstreamStep, _Run | None]] = []
        current = witness
        while True:
            run = self.runs.get(current.node.id)
            trail.append((current, run))
            origin = current.reached_from if run is None else run.start.id
            if origin == self.start.id:
                break
            current = self.steps[origin]
        ran = [(run, step) for step, run in trail if run is not None]
        lines = iter(await self.reads.lines([_line(run, step) for run, step in ran]))
        backwards: list[UpstreamStep] = []
        for step, run in trail:
            backwards.append(step)
            if run is not None:
                inner = _run_steps(run, step, next(lines))
                if inner is None:
                    return []
                backwards.extend(reversed(inner))
        return backwards[::-1]


def _line(run: _Run, end: UpstreamStep) -> LineQuery:
    """What the steps of ``run`` before ``end`` are read by."""
    session, scope = run.chain
    after = position(end.node) if chain_of(end.node) == run.chain else None
    return LineQuery(session, scope, position(run.start), after, run.start.id, end.node.id)


def _run_steps(run: _Run, end: UpstreamStep, line: LineRecord) -> list[UpstreamStep] | None:
    """The steps of ``run`` before ``end`` in path order, each over a stored ``next``."""
    nodes = [run.start, *line.members, end.node]
    if end.reached_from != nodes[-2].id:
        return None
    stored = {(edge.source, edge.target) for edge in line.edges}
    ids = [node.id for node in nodes]
    if any((far, near) not in stored for near, far in itertools.pairwise(ids)):
        return None
    return [
        UpstreamStep(far, EdgeType.NEXT, near.id, end.hop)
        for near, far in itertools.pairwise(nodes[:-1])
    ]
