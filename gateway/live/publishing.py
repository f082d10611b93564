"""A store wrapper that reports every committed change to the ``EventBus``.

Every write of every use case — observes, declares, links, cleanups, outbox replay — runs in a
``transaction()`` of the active store, so wrapping the store is the one place that sees them all
without the use cases knowing about subscribers. Reads are the wrapped store's own bound
methods (no extra hop on the read path).

What is published, per committed transaction, in this order: the final state of each node it
put (first-write order), the edges it created or deleted (in order; a property-only update of an
existing edge is not an event), then the nodes it deleted (only fetched while anyone subscribes).
Nodes go to their own session; edges to the transaction's session (for a transaction without
one, to the session of an endpoint written in it).

When the store keeps a change feed (``gateway.live.feed``), the transaction appends those changes to
it just before it commits, and the bus releases them in feed order; a ``FeedTailer`` brings the
other replicas' commits.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, TypeVar

from gateway.live.bus import GraphChange
from gateway.live.feed import FeedSource, FeedTailer, FeedTransaction, encode_changes
from gateway.stores.forwarding import ForwardedReads
from resolvers.records import EdgeRecord
from resolvers.store import (
    ChainsReader,
    CleanupLedger,
    ConsistentReader,
    RankedSearch,
    ReachReader,
    SessionPageReader,
    SessionReader,
    SizedStore,
    TraceReader,
    WalkReader,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from gateway.live.bus import EventBus
    from resolvers.records import EdgeType, NodeRecord
    from resolvers.store import GraphStore, GraphTransaction

T = TypeVar("T")


class PublishingStore(ForwardedReads):
    """``store`` plus change publication; ``inner`` is the wrapped store."""

    def __init__(self, store: GraphStore, bus: EventBus) -> None:
        super().__init__(store)
        self.inner = store
        self.backend = store.backend
        self._bus = bus
        self.ping = store.ping
        self.count_nodes = store.count_nodes
        if isinstance(store, WalkReader):  # optional: forwarded only when the store has it
            self.walk_chain = store.walk_chain
            self.walk_chain_from = store.walk_chain_from
        if isinstance(store, ReachReader):
            self.reach = store.reach
            self.reaches = store.reaches
        if isinstance(store, TraceReader):
            self.upstream_walk = store.upstream_walk
            self.upstream_hop = store.upstream_hop
            self.run_lines = store.run_lines
        if isinstance(store, RankedSearch):
            self.search_ranked = store.search_ranked
        if isinstance(store, SessionPageReader):
            self.session_page = store.session_page
        if isinstance(store, ChainsReader):
            self.chains_members = store.chains_members
        if isinstance(store, SizedStore):
            self.stored_bytes = store.stored_bytes
        if isinstance(store, ConsistentReader):
            self.consistent_view = store.consistent_view
        if isinstance(store, SessionReader):
            self.session_view = store.session_view
        self._tailer = FeedTailer(store, bus) if isinstance(store, FeedSource) else None

    @asynccontextmanager
    async def transaction(self, session_id: str | None = None) -> AsyncIterator[GraphTransaction]:
        attempt = _Attempt(self._bus, session_id)
        try:
            async with self.inner.transaction(session_id) as tx:
                recording = attempt.begin(tx)
                yield recording
                await attempt.append_feed(tx)
            attempt.committed = True
        finally:
            attempt.settle()
        if self._tailer is not None:
            self._tailer.committed()

    async def write(self, session_id: str, work: Callable[[GraphTransaction], Awaitable[T]]) -> T:
        attempt = _Attempt(self._bus, session_id)

        async def recorded(tx: GraphTransaction) -> T:
            attempt.settle()  # a run the store is retrying committed nothing
            recording = attempt.begin(tx)
            result = await work(recording)
            await attempt.append_feed(tx)
            return result

        try:
            result = await self.inner.write(session_id, recorded)
            attempt.committed = True
        finally:
            attempt.settle()
        if self._tailer is not None:
            self._tailer.committed()
        return result

    async def aclose(self) -> None:
        if self._tailer is not None:
            await self._tailer.aclose()
            self._tailer = None
        await self.inner.aclose()


class _Attempt:
    """One run of a transaction: its bus ticket, its recorded changes and feed numbers.

    The ticket is taken while the transaction holds its session's write serialisation, so
    ticket order is commit order; a run that does not commit settles it empty."""

    def __init__(self, bus: EventBus, session_id: str | None) -> None:
        self._bus = bus
        self._session_id = session_id
        self._ticket: int | None = None
        self._recording: RecordingTransaction | None = None
        self._numbers: dict[str, int] | None = None
        self.committed = False

    def begin(self, tx: GraphTransaction) -> RecordingTransaction:
        self._ticket = self._bus.reserve(self._session_id)
        feed = isinstance(tx, FeedTransaction)
        self._recording = RecordingTransaction(tx, self._session_id, self._bus, every_delete=feed)
        self._numbers = None
        return self._recording

    async def append_feed(self, tx: GraphTransaction) -> None:
        if isinstance(tx, FeedTransaction) and self._recording is not None:
            entries = encode_changes(self._recording.changes())
            self._numbers = await tx.append_feed(entries) if entries else {}

    def settle(self) -> None:
        if self._ticket is None:
            return
        committed = self.committed and self._recording is not None
        changes = self._recording.changes() if committed and self._recording else []
        numbers = self._numbers if committed else None
        self._bus.settle(self._session_id, self._ticket, changes, numbers)
        self._ticket = None


class RecordingTransaction(ForwardedReads):
    """A transaction that remembers the nodes and edges it changed."""

    def __init__(
        self,
        tx: GraphTransaction,
        session_id: str | None,
        bus: EventBus,
        *,
        every_delete: bool = False,
    ) -> None:
        super().__init__(tx)
        self._tx = tx
        # A deleted node is read first to report it: only while someone here subscribes, or
        # always when the changes go to a feed that other replicas' subscribers read.
        self._every_delete = every_delete
        self._session_id = session_id
        self._bus = bus
        self._nodes: dict[str, NodeRecord] = {}
        self._edges: list[tuple[EdgeRecord, bool]] = []
        self._deleted: list[NodeRecord] = []
        self.next_seq = tx.next_seq
        self.park_edge = tx.park_edge
        self.take_parked = tx.take_parked
        self.prefetch = tx.prefetch
        if isinstance(tx, CleanupLedger):  # optional: forwarded only when the store has it
            self.note_cleanup = tx.note_cleanup
            self.cleaned_at = tx.cleaned_at
            self.note_project_cleanup = tx.note_project_cleanup
            self.projects_cleaned_at = tx.projects_cleaned_at
            self.note_artifacts_cleaned = tx.note_artifacts_cleaned
            self.artifacts_cleaned_at = tx.artifacts_cleaned_at

    async def put_node(self, node: NodeRecord) -> None:
        await self._tx.put_node(node)
        self._nodes[node.id] = node

    async def delete_node(self, node_id: str) -> bool:
        watched = self._every_delete or self._bus.watching()
        before = (await self._tx.get_nodes([node_id]))[0] if watched else None
        if not await self._tx.delete_node(node_id):
            return False
        self._nodes.pop(node_id, None)
        if before is not None:
            self._deleted.append(before)
        return True

    async def put_edge(self, edge: EdgeRecord) -> bool:
        created = await self._tx.put_edge(edge)
        if created:
            self._edges.append((edge, False))
        return created

    async def delete_edge(self, edge_type: EdgeType, source: str, target: str) -> bool:
        deleted = await self._tx.delete_edge(edge_type, source, target)
        if deleted:
            self._edges.append((EdgeRecord(edge_type, source, target), True))
        return deleted

    def changes(self) -> list[GraphChange]:
        """What was committed, in publication order."""
        changes = [GraphChange(node.session_id, node=node) for node in self._nodes.values()]
        for edge, removed in self._edges:
            session_id = self._edge_session(edge)
            if session_id is not None:
                changes.append(GraphChange(session_id, edge=edge, removed=removed))
        changes += [GraphChange(node.session_id, node=node, removed=True) for node in self._deleted]
        return changes

    def _edge_session(self, edge: EdgeRecord) -> str | None:
        if self._session_id is not None:
            return self._session_id
        for end in (edge.source, edge.target):
            if end in self._nodes:
                return self._nodes[end].session_id
        return None
