"""FileStore: the embedded, durable graph store (the default backend).

Storage format (``<dataDir>``):

* ``LOCK`` — single-writer lock; a second process on the directory is refused;
* ``log.<generation>.jsonl`` — one checksummed line per committed transaction, holding the
  transaction's change operations (``gateway.stores.file.codec``);
* ``snapshot.<generation>.jsonl`` — the whole graph as of the end of that log generation.

Guarantees: a transaction's changes are applied in memory under one write lock, appended to the
log in commit order and fsync'ed (shared with concurrent commits: group commit) before
``transaction()`` returns; start-up loads the newest complete snapshot and replays only the log
generations after it; a torn tail is truncated, corruption mid-file refuses to start. Disk I/O
runs on the log's writer thread or in worker threads, never on the event loop. Reads are served
from in-memory indexes (``gateway.stores.file.graph``) in time proportional to their result.
The search-term index is built after the store is open, in short steps on the event loop: every
other read and every write is served at once, and ``search`` waits for the index (cancelling
the caller, as its time budget does, stops only the wait).
"""

from __future__ import annotations

import asyncio
import gc
import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from gateway.stores.file.codec import (
    Captured,
    Op,
    apply_op,
    capture,
    decode,
    delete_edge_op,
    delete_node_op,
    edge_op,
    encode,
    node_op,
    park_op,
    seq_op,
    snapshot_ops,
    unpark_op,
)
from gateway.stores.file.graph import MemoryGraph
from gateway.stores.file.log import (
    DirectoryLock,
    LogWriteError,
    RecordLog,
    read_latest_snapshot,
    write_snapshot,
)
from resolvers.errors import StoreUnavailableError, StoreWriteError
from resolvers.records import (
    Backend,
    Direction,
    EdgeRecord,
    EdgeType,
    Label,
    NodeRecord,
    Page,
    SearchHit,
    utc_now,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence
    from pathlib import Path

    from resolvers.store import ChainPosition, GraphTransaction

logger = logging.getLogger(__name__)

# A snapshot is taken once the log since the last one holds this many ops, or half as many as
# that snapshot holds records, whichever is more: rewriting the graph then costs O(1) amortised
# per op however large it grows, and a restart replays at most half the graph's size of log.
DEFAULT_SNAPSHOT_EVERY = 200_000
# Nodes whose search terms are indexed per step of the background build, between two yields to
# the event loop: about 5 ms of work (50 µs a node), so the loop keeps serving while it runs.
TERM_INDEX_STEP = 100


class _Reads:
    """The read primitives, shared by the store and its transactions."""

    _graph: MemoryGraph
    _terms_indexed: asyncio.Event

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        nodes = self._graph.nodes
        return [nodes.get(node_id) for node_id in ids]

    async def nodes_by_key(
        self,
        key: str,
        *,
        labels: Sequence[Label] | None = None,
        session_id: str | None = None,
    ) -> list[NodeRecord]:
        return [
            node
            for node in self._graph.by_key(key)
            if (labels is None or node.label in labels)
            and (session_id is None or node.session_id == session_id)
        ]

    async def artifact_versions(
        self, artifact_id: str, *, session_id: str | None = None
    ) -> list[NodeRecord]:
        return [
            node
            for node in self._graph.versions(artifact_id)
            if session_id is None or node.session_id == session_id
        ]

    async def expand(
        self, ids: Sequence[str], edge_type: EdgeType, direction: Direction
    ) -> list[EdgeRecord]:
        return self._graph.expand(ids, edge_type, direction)

    async def edges_among(
        self, ids: Sequence[str], types: Sequence[EdgeType] | None = None
    ) -> list[EdgeRecord]:
        return self._graph.edges_among(ids, types)

    async def list_nodes(
        self,
        *,
        labels: Sequence[Label] | None = None,
        session_id: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> Page[NodeRecord]:
        return self._graph.list_nodes(labels, session_id, limit, offset)

    async def list_edges(
        self,
        types: Sequence[EdgeType],
        *,
        session_id: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> Page[EdgeRecord]:
        return self._graph.list_edges(types, session_id, limit, offset)

    async def session_node_ids(self, session_id: str) -> list[str]:
        return self._graph.session_ids(session_id)

    async def project_artifacts(self, project_id: str) -> list[NodeRecord]:
        return self._graph.project_artifacts(project_id)

    async def chain_members(self, session_id: str, scope_key: str | None) -> list[NodeRecord]:
        return self._graph.chain(session_id, scope_key)

    async def chain_neighbours(
        self, session_id: str, scope_key: str | None, position: ChainPosition
    ) -> tuple[NodeRecord | None, NodeRecord | None]:
        return self._graph.chain_neighbours(session_id, scope_key, position)

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
        return self._graph.chain_before(session_id, scope_key, position, after, label, limit)

    async def search(
        self,
        terms: Sequence[str],
        *,
        session_id: str | None = None,
        labels: Sequence[Label] | None = None,
        require_all: bool = False,
    ) -> list[SearchHit]:
        while not self._graph.terms_complete:
            await self._terms_indexed.wait()
        matches = [self._graph.search(term, session_id) for term in dict.fromkeys(terms)]
        if not matches:
            return []
        ids = set(matches[0]).intersection(*matches[1:]) if require_all else set().union(*matches)
        hits = []
        for node_id in ids:
            node = self._graph.nodes.get(node_id)
            if node is None or node.deleted or (labels is not None and node.label not in labels):
                continue
            ranks = [found[node_id] for found in matches if node_id in found]
            hits.append(SearchHit(node, len(ranks), min(ranks)))
        return hits


class _FileTransaction(_Reads):
    """Applies changes to the graph at once, recording redo ops (for the log) and undo steps."""

    def __init__(self, graph: MemoryGraph, terms_indexed: asyncio.Event) -> None:
        self._graph = graph
        self._terms_indexed = terms_indexed
        self.ops: list[Op] = []
        self._undo: list[Callable[[], object]] = []

    def rollback(self) -> None:
        for step in reversed(self._undo):
            step()
        self._undo.clear()
        self.ops.clear()

    async def put_node(self, node: NodeRecord) -> None:
        old = self._graph.put_node(node)
        self.ops.append(node_op(node))
        if old is None:
            self._undo.append(lambda: self._graph.delete_node(node.id))
        else:
            self._undo.append(lambda: self._graph.put_node(old))

    async def delete_node(self, node_id: str) -> bool:
        removed = self._graph.delete_node(node_id)
        if removed is None:
            return False
        node, edges = removed
        self.ops.append(delete_node_op(node_id))

        def restore() -> None:
            self._graph.put_node(node)
            for edge in edges:
                self._graph.put_edge(edge)

        self._undo.append(restore)
        return True

    async def put_edge(self, edge: EdgeRecord) -> bool:
        if edge.source not in self._graph.nodes or edge.target not in self._graph.nodes:
            raise ValueError(f"edge endpoint missing: {edge.identity}")
        old = self._graph.put_edge(edge)
        if old == edge:
            return False
        self.ops.append(edge_op(edge))
        if old is None:
            self._undo.append(lambda: self._graph.delete_edge(*edge.identity))
        else:
            self._undo.append(lambda: self._graph.put_edge(old))
        return old is None

    async def delete_edge(self, edge_type: EdgeType, source: str, target: str) -> bool:
        old = self._graph.delete_edge(edge_type, source, target)
        if old is None:
            return False
        self.ops.append(delete_edge_op(edge_type, source, target))
        self._undo.append(lambda: self._graph.put_edge(old))
        return True

    async def next_seq(self, session_id: str) -> int:
        value = self._graph.next_seq(session_id)
        self.ops.append(seq_op(session_id, value))
        self._undo.append(lambda: self._graph.seq.__setitem__(session_id, value - 1))
        return value

    async def park_edge(self, edge: EdgeRecord, waiting_for: str) -> None:
        parked = self._graph.parked.setdefault(waiting_for, {})
        if edge.identity in parked:
            return
        parked[edge.identity] = edge
        self.ops.append(park_op(edge, waiting_for))
        self._undo.append(lambda: parked.pop(edge.identity, None))

    async def take_parked(self, node_id: str) -> list[EdgeRecord]:
        parked = self._graph.parked.pop(node_id, None)
        if not parked:
            return []
        self.ops.append(unpark_op(node_id))
        self._undo.append(lambda: self._graph.parked.__setitem__(node_id, parked))
        return list(parked.values())


class FileStore(_Reads):
    """The embedded backend. Use ``await FileStore.open(directory)``."""

    backend = Backend.FILE

    def __init__(
        self,
        directory: Path,
        lock: DirectoryLock,
        log: RecordLog,
        graph: MemoryGraph,
        snapshot_every: int,
    ) -> None:
        self.directory = directory
        self._lock = lock
        self._log = log
        self._graph = graph
        self._snapshot_every = snapshot_every
        self._snapshot_records = graph.record_count()
        self._ops_since_snapshot = 0
        self._write_lock = asyncio.Lock()
        self._snapshotting: asyncio.Task[None] | None = None
        self._snapshot_lock = asyncio.Lock()
        self._closed = False
        self._in_flight: set[asyncio.Future[None]] = set()
        self._terms_indexed = asyncio.Event()
        self._indexing: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls,
        directory: Path,
        *,
        fsync: bool = True,
        snapshot_every: int = DEFAULT_SNAPSHOT_EVERY,
    ) -> FileStore:
        """Lock the directory, load the newest snapshot and replay the log after it.

        Raises ``StoreLockedError`` when another process holds the directory and
        ``CorruptLogError`` when a log file is damaged before its tail.
        """
        lock = DirectoryLock.acquire(directory)  # creates the directory when missing
        try:
            log, graph = await asyncio.to_thread(_load, directory, fsync)
        except BaseException:
            lock.release()
            raise
        store = cls(directory, lock, log, graph, snapshot_every)
        store._index_terms_in_background()
        return store

    @asynccontextmanager
    async def transaction(self, session_id: str | None = None) -> AsyncIterator[GraphTransaction]:
        if self._closed:
            raise StoreUnavailableError(Backend.FILE.value, detail="The store is closed.")
        async with self._write_lock:
            tx = _FileTransaction(self._graph, self._terms_indexed)
            try:
                yield tx
                # Encoded before the lock is released: a change that cannot be logged (text
                # that is not valid Unicode) is rolled back, never left in memory only.
                payload = encode({"at": utc_now().isoformat(), "ops": tx.ops}) if tx.ops else b""
            except BaseException:
                tx.rollback()
                raise
            if not payload:
                return
            # Started under the lock so records reach the log in commit order.
            durable = asyncio.ensure_future(self._log.append(payload))
            self._in_flight.add(durable)
            durable.add_done_callback(self._in_flight.discard)
            self._ops_since_snapshot += len(tx.ops)
        try:
            await durable
        except LogWriteError as exc:
            await self._reload()
            raise StoreWriteError(f"The write could not be made durable: {exc}") from exc
        threshold = max(self._snapshot_every, self._snapshot_records // 2)
        if (
            self._ops_since_snapshot >= threshold
            and self._snapshotting is None
            and not self._closed  # a write that settles after aclose() began
        ):
            # In the background: the write that crossed the threshold is already durable, and
            # its caller need not wait for the whole graph to be rewritten.
            self._snapshotting = asyncio.create_task(self._snapshot_in_background())

    async def _snapshot_in_background(self) -> None:
        try:
            await self.snapshot()
        except Exception:
            # The log still holds everything; the next threshold crossing tries again.
            logger.exception("automatic snapshot failed")
        finally:
            self._snapshotting = None

    async def snapshot(self) -> None:
        """Write a snapshot of the current graph and drop the log generations it covers.

        One at a time: a newer snapshot deletes the older ones' files, in flight or not."""
        async with self._snapshot_lock:
            async with self._write_lock:
                generation = await self._log.rotate()
                captured = capture(self._graph)
                self._ops_since_snapshot = 0
                self._snapshot_records = captured.record_count()
            payloads = (encode(op) for op in snapshot_ops(captured))
            await asyncio.to_thread(write_snapshot, self.directory, generation, payloads)
            await asyncio.to_thread(self._log.drop_generations, generation)

    async def _reload(self) -> None:
        """After a failed append, rebuild memory from what is durable on disk."""
        async with self._write_lock:
            # Appends started before the failure settle first, so memory matches the disk.
            await asyncio.gather(*self._in_flight, return_exceptions=True)
            self._graph = await asyncio.to_thread(_replay, self.directory, self._log)
            self._index_terms_in_background()
        logger.warning("file store reloaded from disk after a failed write")

    def _index_terms_in_background(self) -> None:
        """Build the search-term index the load deferred, unless it is complete."""
        if self._graph.terms_complete:
            self._terms_indexed.set()
            return
        self._terms_indexed.clear()
        if self._indexing is None or self._indexing.done():
            self._indexing = asyncio.create_task(self._index_deferred_terms())

    async def _index_deferred_terms(self) -> None:
        complete = False
        try:
            while not complete:
                await asyncio.sleep(0)  # the loop serves everything else between two steps
                # The current graph: a reload may have replaced the one this started on.
                complete = self._graph.index_deferred_terms(TERM_INDEX_STEP)
        except Exception:
            # Searches keep waiting (each within its caller's time budget); say why.
            logger.exception("building the search-term index failed")
            raise
        gc.freeze()  # the index joins the loaded graph, out of the cyclic collector's walks
        self._terms_indexed.set()

    def capture(self) -> Captured:
        """A consistent copy of every record (for migration and export)."""
        return capture(self._graph)

    async def ping(self) -> None:
        if self._closed:
            raise StoreUnavailableError(Backend.FILE.value, detail="The store is closed.")

    async def count_nodes(self) -> int:
        return len(self._graph.nodes)

    @property
    def size_bytes(self) -> int:
        return self._log.size_bytes

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._indexing is not None:
            self._indexing.cancel()
            await asyncio.gather(self._indexing, return_exceptions=True)
        if self._snapshotting is not None:
            await asyncio.shield(self._snapshotting)  # its files must be complete first
        async with self._write_lock:
            await self._log.aclose()
        self._lock.release()


def _load(directory: Path, fsync: bool) -> tuple[RecordLog, MemoryGraph]:
    log = RecordLog.open(directory, fsync=fsync)
    return log, _replay(directory, log)


def _replay(directory: Path, log: RecordLog) -> MemoryGraph:
    graph = MemoryGraph()
    after = -1
    snapshot = read_latest_snapshot(directory)
    strings: dict[str, str] = {}
    # The graph holds no reference cycles (reference counting frees it), so the cyclic
    # collector only rescans the growing heap while loading; pause it, then move what was
    # loaded out of its generations so serving never walks the whole graph either.
    gc.disable()
    try:
        with graph.deferred_terms():
            if snapshot is not None:
                after, payloads = snapshot
                for payload in payloads:
                    apply_op(graph, decode(payload), strings)
            for payload in log.replay(after_generation=after):
                for op in decode(payload)["ops"]:
                    apply_op(graph, op, strings)
    finally:
        gc.enable()
    gc.freeze()
    return graph
