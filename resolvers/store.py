"""The store port: the primitives every backend supplies to the use cases.

The rules of SPEC §3-4 live in the use cases; a backend only stores nodes and edges, keeps the
indexes listed below and answers these primitives in time proportional to their own result:

* by global id; by domain key (optionally per label and session); by ``artifact_id``;
* per session (newest first) and per label; per edge type;
* adjacency per edge type and direction;
* step chains: a node with ``seq > 0`` belongs to the chain ``(session_id, parent_subtask_id)``
  (no ``parent_subtask_id`` = the session's main chain) at position ``(props["chain_at"], seq)``;
* pending edges: an edge whose endpoint ``waiting_for`` does not exist yet, parked until it does;
* search terms: a term matches a node when it is a prefix of one of the tokens
  ``resolvers.text.tokens`` yields for the node's ``resolvers.text.searchable_text``.

Listing primitives skip soft-deleted nodes (``props["deleted_session"]``); lookups by id or key
return them, because writes still need them (a later session may read a soft-deleted artifact).

Writes: a use case runs as one unit of work, ``GraphStore.write(session_id, work)``, and first
names what it will read (``resolvers.plan.ReadPlan``, given to ``GraphTransaction.prefetch``). A
backend whose every primitive is a round trip loads the plan in one request, answers the reads it
covers from that snapshot plus the transaction's own changes, buffers the changes and applies
them in one request when the work ends (or before a read the plan did not cover): a constant
number of requests per event whatever its size. A backend that reads from memory applies each
primitive at once. Either way the rules, and so the changes, are the same.

A backend may also offer ``WalkReader``: a whole chain walk in one request, for a backend
whose every primitive is a network round trip, the source's resolution included where it is a
lookup (``SourceRef``); ``ReachReader``: everything one breadth-first hop of a walk may read,
in one request (a walk over the primitives takes two per level); ``TraceReader``: every
primitive answer a whole provenance trace reads, in one or a few requests; and
``RankedSearch``: a search ranked and paged
where the data is, so only the page crosses the network. ``SizedStore`` reports the
bytes a store keeps on disk, for operators. ``ConsistentReader``: several reads that see one
state of the store, and ``SessionReader``: several reads that see one state of a session, for
an answer composed of several reads (``one_state``). A walk or a trace of ``WalkReader`` and
``TraceReader`` sees one state of its session the same way, from the request that finds its
source: the source's session is not known before.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
    from contextlib import AbstractAsyncContextManager
    from datetime import datetime

    from resolvers.plan import ReadPlan
    from resolvers.records import (
        Backend,
        Direction,
        EdgeRecord,
        EdgeType,
        Label,
        NodeRecord,
        Page,
        SearchHit,
    )

T = TypeVar("T")

ChainPosition = tuple[str, int]
"""``(chain_at ISO-8601 UTC text, seq)``: the sort key of a step inside its chain."""


@dataclass(frozen=True, slots=True)
class Hop:
    """One step of a chain walk: follow ``edge`` in ``direction`` to nodes labelled ``targets``
    (keeping the ``limit`` most recent), or, ``variable``, over one or more edges until the
    nearest level holding a target."""

    edge: EdgeType
    direction: Direction
    targets: frozenset[Label]
    limit: int | None = None
    variable: bool = False


@dataclass(frozen=True, slots=True)
class HopRecord:
    """What one hop of a chain walk added: the nodes it reached (a variable hop's path
    included) and the edges it crossed to reach them."""

    nodes: Sequence[NodeRecord]
    edges: Sequence[EdgeRecord]


@dataclass(frozen=True, slots=True)
class SourceRef:
    """A ``nodeId`` that names its node by a lookup (``resolvers.resolve.source_ref``): the
    node ``node_id`` (of ``label``), or, when ``node_id`` is ``None``, the versions of the
    artifact ``artifact_id`` (only the one keyed ``key`` when given); of these the last in
    ``artifact_versions`` order that is live and of ``session_id`` (any session when
    ``None``). When the lookup finds no such node, the reference may still name one by a
    domain key: the use case then resolves it over the primitives."""

    label: Label
    node_id: str | None
    session_id: str | None
    artifact_id: str | None = None
    key: str | None = None


@dataclass(frozen=True, slots=True)
class SourcedWalk:
    """A chain walk from the node a ``SourceRef`` found: ``hops`` as ``walk_chain`` answers."""

    source: NodeRecord
    hops: Sequence[HopRecord] | None


@dataclass(frozen=True, slots=True)
class RunQuery:
    """A run of ``next`` edges a trace hop takes: down the chain ``(session_id, scope_key)``
    from the member at ``start`` to above ``after`` (through the chain's first member when
    ``None``)."""

    session_id: str
    scope_key: str | None
    start: ChainPosition
    after: ChainPosition | None


@dataclass(frozen=True, slots=True)
class UpstreamRecord:
    """The primitive answers one hop of a provenance trace reads (``TraceReader``).

    ``edges``: ``expand(frontier, t, IN)`` for each of the asked types, in their order;
    ``nearest``: per run, ``chain_before(start, after=after, label=label, limit=1)`` (empty
    for a label that is not a step's); ``heads``: per run, when its ``after`` is ``None``, the
    chain's first member (``chain_neighbours`` at ``CHAIN_START``), else ``None``;
    ``into_heads``: ``expand(heads, NEXT, IN)``;
    ``out_of_ends``: ``expand(nearest + heads, NEXT, OUT)``; ``nodes``: ``get_nodes`` of the
    sources of ``edges`` and ``into_heads`` (those that exist)."""

    edges: Sequence[EdgeRecord]
    nodes: Sequence[NodeRecord]
    nearest: Sequence[Sequence[NodeRecord]]
    heads: Sequence[NodeRecord | None]
    into_heads: Sequence[EdgeRecord]
    out_of_ends: Sequence[EdgeRecord]


@dataclass(frozen=True, slots=True)
class RegionEntry:
    """The primitive answers a trace hop reads about one frontier node (``UpstreamRecord``
    for a frontier of that node alone): ``edges``, ``expand([id], t, IN)`` for every type
    walked, and ``nodes``, the sources of ``edges`` and ``into_head``; for a step of a chain,
    ``nearest``, ``chain_before(its position, label=target, limit=1)`` (``after`` unset),
    ``head``, its chain's first member, ``into_head``, ``expand([head], NEXT, IN)``, and
    ``out_of_ends``, ``expand(nearest + [head], NEXT, OUT)``.

    Optionally, what a run from the step reads of its witness path (``LineQuery``):
    ``below``, ``chain_before(its position, after=nearest's position)`` whole (``None``: not
    read, e.g. too long), and ``below_edges``, every ``next`` edge with an end at the step or
    a member of ``below``."""

    edges: Sequence[EdgeRecord]
    nodes: Sequence[NodeRecord]
    nearest: Sequence[NodeRecord]
    head: NodeRecord | None
    into_head: Sequence[EdgeRecord]
    out_of_ends: Sequence[EdgeRecord]
    below: Sequence[NodeRecord] | None = None
    below_edges: Sequence[EdgeRecord] = ()


@dataclass(frozen=True, slots=True)
class UpstreamRegion:
    """What a trace's exploration reads, in one request (``TraceReader.upstream_walk``).

    ``start``: the node the ``SourceRef`` found (``None``: none, and ``entries`` is empty).
    ``entries``: a ``RegionEntry`` per node of the region, keyed by id. The region is level
    by level: the start, then every node a hop from the region's previous level can list
    (``resolvers.provenance``, "The region") not in the region already, until a level holds a
    node of the target label or is empty, or ``levels`` levels have entries (a backend may
    stop sooner). Only a hint of which nodes the walk will meet: a frontier outside it is
    read hop by hop (``upstream_hop``), so the trace is the same either way."""

    start: NodeRecord | None
    entries: Mapping[str, RegionEntry]


@dataclass(frozen=True, slots=True)
class UpstreamView:
    """A trace's first answers and the reader of the rest (``TraceReader.upstream_walk``):
    ``reads`` answers ``upstream_hop`` and ``run_lines`` from the state ``region`` was read
    in."""

    region: UpstreamRegion
    reads: TraceReader


@dataclass(frozen=True, slots=True)
class LineQuery:
    """The steps of a run on a trace's witness path: the chain ``(session_id, scope_key)``
    strictly between ``after`` and ``start``, and the ``next`` edges among them, the member
    ``start_id`` at ``start`` and ``end_id`` (where the run ends)."""

    session_id: str
    scope_key: str | None
    start: ChainPosition
    after: ChainPosition | None
    start_id: str
    end_id: str


@dataclass(frozen=True, slots=True)
class LineRecord:
    """``chain_before(start, after=after)`` and ``edges_among([start_id, *members, end_id],
    [NEXT])`` of one ``LineQuery``."""

    members: Sequence[NodeRecord]
    edges: Sequence[EdgeRecord]


class GraphReader(Protocol):
    """Read primitives, on the store and inside a transaction (which sees its own writes)."""

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        """The nodes with these global ids, in the same order; ``None`` where absent."""
        ...

    async def nodes_by_key(
        self,
        key: str,
        *,
        labels: Sequence[Label] | None = None,
        session_id: str | None = None,
    ) -> list[NodeRecord]:
        """Every node whose domain key equals ``key`` (a Paper's key is its link), soft-deleted
        ones included, oldest first."""
        ...

    async def artifact_versions(
        self, artifact_id: str, *, session_id: str | None = None
    ) -> list[NodeRecord]:
        """Every stored version of an artifact, soft-deleted ones included, by version ascending."""
        ...

    async def expand(
        self, ids: Sequence[str], edge_type: EdgeType, direction: Direction
    ) -> list[EdgeRecord]:
        """The edges of ``edge_type`` leaving (``OUT``) or entering (``IN``) any of ``ids``."""
        ...

    async def edges_among(
        self, ids: Sequence[str], types: Sequence[EdgeType] | None = None
    ) -> list[EdgeRecord]:
        """Every edge (of ``types``, or of any type) whose two endpoints are both in ``ids``."""
        ...

    async def list_nodes(
        self,
        *,
        labels: Sequence[Label] | None = None,
        session_id: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> Page[NodeRecord]:
        """Live nodes of these labels (all when ``None``) in a session (all sessions when
        ``None``), newest first. ``total`` counts every match, ``truncated`` says whether more
        follow the page. ``labels`` and ``session_id`` may not both be ``None``."""
        ...

    async def list_edges(
        self,
        types: Sequence[EdgeType],
        *,
        session_id: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> Page[EdgeRecord]:
        """Edges of these types whose endpoints are live (and both in ``session_id`` when given),
        newest first."""
        ...

    async def session_node_ids(self, session_id: str) -> list[str]:
        """Every node of a session, soft-deleted ones included."""
        ...

    async def project_artifacts(self, project_id: str) -> list[NodeRecord]:
        """Every Artifact whose ``project_id`` is ``project_id``, soft-deleted ones included."""
        ...

    async def chain_members(self, session_id: str, scope_key: str | None) -> list[NodeRecord]:
        """The steps of one chain in chain order (``scope_key`` ``None`` = main chain)."""
        ...

    async def chain_neighbours(
        self, session_id: str, scope_key: str | None, position: ChainPosition
    ) -> tuple[NodeRecord | None, NodeRecord | None]:
        """The members immediately before and after ``position`` (which itself is excluded)."""
        ...

    async def chain_before(
        self,
        session_id: str,
        scope_key: str | None,
        position: ChainPosition,
        *,
        after: ChainPosition | None = None,
        label: Label | None = None,
        limit: int | None = None,
    ) -> list[NodeRecord]:
        """The members strictly between ``after`` (the chain's start when ``None``) and
        ``position``, nearest to ``position`` first: only those labelled ``label`` when given,
        at most ``limit``. Costs O(log n) plus the members returned."""
        ...

    async def search(
        self,
        terms: Sequence[str],
        *,
        session_id: str | None = None,
        labels: Sequence[Label] | None = None,
        require_all: bool = False,
    ) -> list[SearchHit]:
        """Live nodes matching any (or, with ``require_all``, every) term, each with the number
        of terms it matched and the best field rank of a match (``resolvers.text.match_rank``
        over ``resolvers.text.token_ranks``). Unordered."""
        ...


class GraphTransaction(GraphReader, Protocol):
    """One atomic write: every change becomes visible and durable together, or none does."""

    async def put_node(self, node: NodeRecord) -> None:
        """Create the node or replace the stored one with the same id (whole record).

        Raises ``KeyOwnedByOtherSessionError`` (and stores nothing) when the stored node has
        another ``session_id``: a node belongs to the session that created it. The check and
        the write are one atomic step, also against writers of other sessions (SPEC §3.8)."""
        ...

    async def delete_node(self, node_id: str) -> bool:
        """Delete the node and every edge touching it; ``False`` when it did not exist."""
        ...

    async def put_edge(self, edge: EdgeRecord) -> bool:
        """Create the edge, or replace the properties of the existing ``(type, source, target)``
        edge. Both endpoints must exist. ``True`` when the edge is new."""
        ...

    async def delete_edge(self, edge_type: EdgeType, source: str, target: str) -> bool:
        """Delete one edge; ``False`` when it did not exist."""
        ...

    async def next_seq(self, session_id: str) -> int:
        """The next value of the session's arrival counter; no two calls ever share one."""
        ...

    async def park_edge(self, edge: EdgeRecord, waiting_for: str) -> None:
        """Remember ``edge`` until the node ``waiting_for`` exists. Parking twice is a no-op."""
        ...

    async def take_parked(self, node_id: str) -> list[EdgeRecord]:
        """Remove and return the edges parked for ``node_id``."""
        ...

    async def prefetch(self, plan: ReadPlan) -> None:
        """Load what ``plan`` names in one request, so the reads that follow are answered
        without one (``resolvers.plan``): a hint, never a change of any answer. A backend
        that reads from memory ignores it. A step of ``plan.steps`` that does not exist yet
        takes its ``seq`` here (the next ``next_seq`` calls hand them out)."""
        ...


class GraphStore(GraphReader, Protocol):
    """A storage backend. Open it, use it, ``aclose()`` it."""

    backend: Backend

    def transaction(
        self, session_id: str | None = None
    ) -> AbstractAsyncContextManager[GraphTransaction]:
        """Open a write transaction whose primitives apply one by one (cleanups, migration;
        events go through ``write``). Writers of one session are serialised; leaving the block
        normally commits (durably, before the block returns), an exception rolls back."""
        ...

    async def write(self, session_id: str, work: Callable[[GraphTransaction], Awaitable[T]]) -> T:
        """Run ``work`` in one transaction of ``session_id``'s writes and commit it; return
        what the committed run returned.

        Writers of one session are serialised, across processes too, for no longer than the
        transaction itself; the session's order (``next_seq``) comes from the store, never a
        process clock. When a transaction conflicts with concurrent writers (a deadlock, a
        lost lock) the store rolls it back and runs ``work`` again in a new one, within a
        bounded time: ``work`` must read everything anew in each run and keep nothing from a
        failed one. A domain error raised by ``work`` rolls back and propagates at once."""
        ...

    async def ping(self) -> None:
        """Raise ``StoreUnavailableError`` when the backend cannot serve requests now."""
        ...

    async def count_nodes(self) -> int:
        """The number of stored nodes (for health and metrics)."""
        ...

    async def aclose(self) -> None:
        """Release files, locks, connections. Idempotent."""
        ...


@runtime_checkable
class CleanupLedger(Protocol):
    """Optional, on a transaction: when each session and each project was last cleaned up.

    A backend offers it when an event acknowledged before a cleanup can reach it after the
    cleanup: another replica's outbox replaying what it journalled while the backend was
    unreachable. A cleanup notes its time (``resolvers.cleanup``), and the replay leaves out a
    session's events received before it, and the Artifacts they write that a cleanup after them
    deleted or would have deleted (``gateway.runtime.replay``): applied in time, they would have
    been removed. A
    backend whose writes all come through one process, in the order they were acknowledged,
    needs none."""

    async def note_cleanup(self, session_id: str, at: datetime, *, emptied: bool) -> None:
        """Remember that ``session_id`` was cleaned up at ``at`` (the latest noted wins);
        ``emptied``: its Artifacts too were deleted (a project's cleanup listing it), not
        soft-marked (``cleanupSession``)."""
        ...

    async def cleaned_at(self, session_id: str) -> SessionCleanups:
        """When ``session_id`` was last cleaned up, read so that no cleanup of it commits
        between this read and this transaction's commit."""
        ...

    async def note_project_cleanup(self, project_id: str, at: datetime) -> None:
        """Remember that the project's Artifacts were deleted at ``at`` (the latest wins)."""
        ...

    async def projects_cleaned_at(self, project_ids: Sequence[str]) -> dict[str, datetime]:
        """When each of ``project_ids`` that was ever cleaned up was last, read so that no
        cleanup of them commits between this read and this transaction's commit."""
        ...

    async def note_artifacts_cleaned(self, artifact_ids: Sequence[str], at: datetime) -> None:
        """Remember that a cleanup at ``at`` deleted the Artifacts ``artifact_ids`` (a
        tombstone each; the latest noted wins): a queued event received before it that writes
        one of them again, without naming its project, or names it as an input, is then told
        from one naming an Artifact that never existed."""
        ...

    async def artifacts_cleaned_at(self, artifact_ids: Sequence[str]) -> dict[str, datetime]:
        """When a cleanup last deleted each of ``artifact_ids`` that one ever deleted (read
        without a lock of its own: a replay first locks the projects the Artifacts are in,
        which a project cleanup locks before it deletes them)."""
        ...


@dataclass(frozen=True, slots=True)
class SessionCleanups:
    """When a session was last cleaned up (``None``: never), and last emptied: its Artifacts
    deleted too, not soft-marked (``CleanupLedger``)."""

    at: datetime | None = None
    emptied: datetime | None = None


@runtime_checkable
class ConsistentReader(Protocol):
    """Optional: reads that all see one state of the store.

    A backend offers it when a write can commit between two of its reads (reads on their own
    connections, or threads); one whose reads do not interleave with writes (the log engine
    reads its memory without letting a write in between) needs none."""

    def consistent_view(self) -> AbstractAsyncContextManager[GraphReader]:
        """A reader whose reads all see the state of the store when its first read ran."""
        ...


@runtime_checkable
class SessionReader(Protocol):
    """Optional: reads that all see one state of one session.

    A backend offers it when its reads see each commit as it lands (read committed) and it
    has no snapshot of the whole store to give them, but can keep one session's writes out
    while they run."""

    def session_view(self, session_id: str) -> AbstractAsyncContextManager[GraphReader]:
        """A reader whose reads all see one committed state of the session ``session_id``
        (its nodes, the edges among them, its chains): no write of that session commits
        while the reader is open. Data of other sessions is read as it is at each read."""
        ...


def one_state(
    store: GraphReader, session_id: str | None = None
) -> AbstractAsyncContextManager[GraphReader]:
    """A reader whose reads see one state: of the store (``ConsistentReader``) or, at least,
    of the session ``session_id`` (``SessionReader``); ``store`` itself when it offers
    neither (its reads never interleave with writes)."""
    if isinstance(store, ConsistentReader):
        return store.consistent_view()
    if session_id is not None and isinstance(store, SessionReader):
        return store.session_view(session_id)
    return nullcontext(store)


@runtime_checkable
class WalkReader(Protocol):
    """Optional: a whole walk in one request to the backend.

    A backend offers it when a walk over its primitives would cost one round trip per hop and
    edge type. Its answers are exactly those of the use cases' own walks over the primitives
    (``resolvers.chains``), which run wherever it is not offered.
    """

    async def walk_chain(
        self, source: NodeRecord, hops: Sequence[Hop], session_id: str | None
    ) -> list[HopRecord] | None:
        """What each of ``hops`` adds walking from ``source`` by the rules of
        ``resolvers.chains``, in hop order; ``None`` when a hop reaches nothing."""
        ...

    async def walk_chain_from(self, ref: SourceRef, hops: Sequence[Hop]) -> SourcedWalk | None:
        """The node ``ref`` finds and ``walk_chain`` from it (in ``ref.session_id``), in one
        request whose reads all see one committed state of the found node's session, as
        ``one_state`` gives (no write of it lands in between); ``None`` when ``ref`` finds no
        node."""
        ...


@runtime_checkable
class ReachReader(Protocol):
    """Optional: what a breadth-first walk over one edge type may read, in one request.

    A walk over the primitives asks one ``expand`` and one ``get_nodes`` per level, each
    depending on the one before; a backend whose every primitive costs a statement answers
    the whole walk's questions at once. The walk draws its conclusions from the answer exactly
    as from the primitives' (``resolvers.chains``).
    """

    async def reach(
        self,
        ids: Sequence[str],
        edge_type: EdgeType,
        direction: Direction,
        *,
        stop: frozenset[Label],
        session_id: str | None,
    ) -> tuple[list[EdgeRecord], list[NodeRecord]]:
        """Every edge ``expand`` would give from ``ids`` and, again and again, from the far
        ends it reaches that exist, are live, belong to ``session_id`` (any session when
        ``None``) and carry none of the labels ``stop``; in the order they were stored. And
        every node at the far end of one of those edges (soft-deleted ones included)."""
        ...

    async def reaches(
        self,
        ids: Sequence[str],
        edge_type: EdgeType,
        direction: Direction,
        *,
        stop: frozenset[Label],
        session_id: str | None,
        avoid: Collection[str],
        walk_on: bool = True,
    ) -> bool:
        """Whether the walk ``reach`` describes (with ``walk_on`` false: one step from
        ``ids``), never entering a node of ``avoid``, comes to a live node of ``session_id``
        (any session when ``None``) that carries one of the labels ``stop`` and is not in
        ``avoid``: the question a hop answers with a non-empty result (a breadth-first walk
        to the nearest such node, or one step), asked without reading what it reaches."""
        ...


@runtime_checkable
class SessionPageReader(Protocol):
    """Optional: a page of a session's live nodes and the edges among them, in one request.

    A backend offers it when it can read a session's edges more cheaply than it can look the
    page's ids up one by one (the SQLite engine keeps edges by their endpoints' session).
    """

    async def session_page(
        self, session_id: str, *, limit: int
    ) -> tuple[Page[NodeRecord], Sequence[EdgeRecord]]:
        """``list_nodes(session_id=session_id, limit=limit)`` and ``edges_among`` of its
        nodes (of every type, in no particular order), read in one state."""
        ...


@runtime_checkable
class ChainsReader(Protocol):
    """Optional: the members of several chains of one session in one request.

    A backend offers it when each ``chain_members`` is a request of its own (a hand-off to
    the SQLite engine's reader thread): a session's subgraph asks for every scope's chain.
    """

    async def chains_members(
        self, session_id: str, scope_keys: Sequence[str | None]
    ) -> list[list[NodeRecord]]:
        """``chain_members(session_id, key)`` of each of ``scope_keys``, in their order, read
        in one state."""
        ...


@runtime_checkable
class TraceReader(Protocol):
    """Optional: the primitive answers of a whole provenance trace in one or a few requests.

    A trace over the primitives asks, per hop, one ``expand`` per edge type, one ``get_nodes``
    and a few chain-index lookups per run, each depending on the one before; a backend whose
    every primitive is a round trip answers them all at once: those of every hop the trace can
    reach with the start's resolution (``upstream_walk``), else those of one hop
    (``upstream_hop``), and those of the witness path (``run_lines``).
    ``resolvers.provenance`` draws its conclusions from the answers exactly as from the
    primitives', so the trace is the same (two requests instead of about ten per hop).
    """

    async def upstream_walk(
        self,
        start: SourceRef,
        target: Label,
        levels: int,
        walk: Callable[[UpstreamView], Awaitable[T]],
    ) -> T:
        """``walk``'s answer on an ``UpstreamView``: the ``UpstreamRegion`` of ``target`` from
        the node ``start`` finds, at most ``levels`` levels deep, and a reader of the trace's
        further hops; every read of the view, the region's included, sees one committed state
        of the found node's session, as ``one_state`` gives. ``walk`` may be called more than
        once, each time on a view of its own (a backend may first offer a view that answers
        the region alone, and run ``walk`` again on one that reads on when it asks for more):
        it must only read, and the answer of its last call is returned."""
        ...

    async def upstream_hop(
        self,
        frontier: Sequence[str],
        types: Sequence[EdgeType],
        runs: Sequence[RunQuery],
        label: Label,
    ) -> UpstreamRecord:
        """What ``UpstreamRecord`` lists, for these frontier ids, edge types and runs."""
        ...

    async def run_lines(self, lines: Sequence[LineQuery]) -> list[LineRecord]:
        """What ``LineRecord`` lists, per line."""
        ...


@runtime_checkable
class RankedSearch(Protocol):
    """Optional: one page of a search, ranked by the backend.

    The answer is exactly the page ``resolvers.search`` cuts from ``GraphReader.search``: hits
    ordered by more terms matched, then the better field rank, then the newer ``created_at``,
    then by id; ``total`` counts every hit. Use cases use it wherever it is offered.
    """

    async def search_ranked(
        self,
        terms: Sequence[str],
        *,
        session_id: str | None = None,
        labels: Sequence[Label] | None = None,
        require_all: bool = False,
        limit: int,
        offset: int = 0,
    ) -> Page[NodeRecord]:
        """The hits ``offset`` to ``offset + limit`` in search order."""
        ...


@runtime_checkable
class SizedStore(Protocol):
    """Optional: the bytes a store keeps on disk (reported by ``/metrics``)."""

    def stored_bytes(self) -> int:
        """The bytes the store keeps on disk now."""
        ...
