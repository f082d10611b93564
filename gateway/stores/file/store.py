"""FileStore: the embedded, durable graph store (the default backend).

Storage format (``<dataDir>``):

* ``LOCK`` — single-writer lock; a second process on the directory is refused;
* ``log.<generation>.jsonl`` — one checksummed line per committed transaction, holding the
  transaction's change operations (``gateway.stores.file.codec``);
* ``snapshot.<generation>.jsonl`` — the whole graph as of the end of that log generation.

Guarantees: a transaction's changes are applied in memory under one write lock, appended to the
log in commit order and fsync'ed (shared with concurrent commits: group commit) before
``transaction()`` returns; start-up loads the newest complete snapshot and replays only the log
generations after it (``loading.py``); a torn tail is truncated, corruption mid-file or a record
that cannot be applied refuses to start, naming file, offset and fix. The snapshot cadence
counts the ops a restart replays, so it survives restarts.

Disk faults are states, not crashes: a commit whose append fails (``ENOSPC``, ``EROFS``,
``EIO``, a log file deleted under the store) answers ``StoreWriteError`` and is undone in memory
by its own undo steps — together with every later commit, which the log refuses until then —
newest first, in time proportional to the changes; nothing is read back from disk and no copy
of the graph is made. ``ping`` reports the fault (the last write failed, or the directory is
gone, read-only or on a full disk) as ``StoreUnavailableError`` with a reason that names no
path; reads are served from memory throughout. Disk I/O
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
from typing import TYPE_CHECKING, TypeVar

from gateway.stores.file.codec import Captured, capture, encode, snapshot_ops
from gateway.stores.file.faults import DirectoryWatch, check_durable, disk_fault
from gateway.stores.file.loading import load
from gateway.stores.file.log import DirectoryLock, LogWriteError, RecordLog, write_snapshot
from gateway.stores.file.reads import Reads
from gateway.stores.file.transaction import FileTransaction
from resolvers.errors import StoreUnavailableError, StoreWriteError
from resolvers.records import (
    Backend,
    utc_now,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from pathlib import Path

    from gateway.stores.file.graph import MemoryGraph
    from resolvers.store import GraphTransaction

T = TypeVar("T")
logger = logging.getLogger(__name__)

# A snapshot is taken once the log since the last one holds this many ops, or half as many as
# that snapshot holds records, whichever is more: rewriting the graph then costs O(1) amortised
# per op however large it grows, and a restart replays at most half the graph's size of log.
DEFAULT_SNAPSHOT_EVERY = 200_000
# Nodes whose search terms are indexed per step of the background build, between two yields to
# the event loop: about 5 ms of work (50 µs a node), so the loop keeps serving while it runs.
TERM_INDEX_STEP = 100
# How often the data directory is checked (gone, read-only, disk full) for ``ping``. Writes do
# not wait for it: each append checks its own file before it is acknowledged.


class FileStore(Reads):
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
        # Appends not yet known durable, in commit order, with what undoes each.
        self._unsettled: dict[asyncio.Future[None], FileTransaction] = {}
        self._rolling_back: asyncio.Future[None] | None = None
        self._write_failure: str | None = None  # why the last write failed, until one succeeds
        self._commits = 0  # transactions handed to the log so far
        self._failed_through = 0  # the last of them settled by the latest roll-back
        self._watch = DirectoryWatch(directory, self._log.still_linked)
        self._watching: asyncio.Task[None] | None = None
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
            loaded = await asyncio.to_thread(load, directory, fsync)
        except BaseException:
            lock.release()
            raise
        store = cls(directory, lock, loaded.log, loaded.graph, snapshot_every)
        # The cadence survives restarts: what the log holds since the snapshot counts.
        store._ops_since_snapshot = loaded.log_ops
        store._index_terms_in_background()
        store._watching = asyncio.create_task(store._watch.run())
        return store

    @asynccontextmanager
    async def transaction(self, session_id: str | None = None) -> AsyncIterator[GraphTransaction]:
        if self._closed:
            raise StoreUnavailableError(Backend.FILE.value, detail="The store is closed.")
        async with self._write_lock:
            tx = FileTransaction(self._graph, self._terms_indexed)
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
            self._commits += 1
            tx.commit_number = self._commits
            self._unsettled[durable] = tx
            durable.add_done_callback(self._settled)
            self._ops_since_snapshot += len(tx.ops)
        try:
            # Shielded: a caller that gives up does not decide whether the record was written.
            await asyncio.shield(durable)
        except LogWriteError as exc:
            if self._rolling_back is not None:
                await asyncio.shield(self._rolling_back)
            raise StoreWriteError(
                f"The write could not be made durable: {disk_fault(exc.errno)}; nothing of it "
                "was kept.",
                backend=Backend.FILE.value,
            ) from exc
        threshold = max(self._snapshot_every, self._snapshot_records // 2)
        if (
            self._ops_since_snapshot >= threshold
            and self._snapshotting is None
            and not self._closed  # a write that settles after aclose() began
        ):
            # In the background: the write that crossed the threshold is already durable, and
            # its caller need not wait for the whole graph to be rewritten.
            self._snapshotting = asyncio.create_task(self._snapshot_in_background())

    async def write(self, session_id: str, work: Callable[[GraphTransaction], Awaitable[T]]) -> T:
        """One transaction: writers never conflict here (one write lock), so ``work`` runs once."""
        async with self.transaction(session_id) as tx:
            return await work(tx)

    def _settled(self, durable: asyncio.Future[None]) -> None:
        """A durable transaction is forgotten; a failed one starts the roll-back of it and of
        every transaction committed after it (the log refuses those: they may build on it)."""
        if not _failed(durable):
            tx = self._unsettled.pop(durable, None)
            if tx is not None and tx.commit_number > self._failed_through:
                self._write_failure = None  # a write after the failure made it: it is over
        elif self._rolling_back is None:
            self._rolling_back = asyncio.ensure_future(self._roll_back_failed())

    async def _roll_back_failed(self) -> None:
        try:
            async with self._write_lock:
                await self._roll_back_locked()
        finally:
            self._rolling_back = None

    async def _roll_back_locked(self) -> None:
        """Undo the transactions whose records could not be made durable, newest first, in
        time proportional to their changes; then let the log accept appends again. Called with
        the write lock held, so no transaction starts meanwhile."""
        if not self._unsettled:
            return
        await asyncio.gather(*self._unsettled, return_exceptions=True)
        failed = [(tx, durable) for durable, tx in self._unsettled.items() if _failed(durable)]
        self._unsettled.clear()
        if not failed:
            return
        for tx, _ in reversed(failed):
            self._ops_since_snapshot -= len(tx.ops)
            tx.rollback()
        first = failed[0][1]
        error = None if first.cancelled() else first.exception()
        self._write_failure = disk_fault(getattr(error, "errno", None))
        self._failed_through = self._commits
        logger.warning(
            "rolled back %d write(s) that could not be made durable: %s", len(failed), error
        )
        await self._log.resume()

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
                # A snapshot holds only what is durable: failed writes are undone first.
                await self._roll_back_locked()
                generation = await self._log.rotate()
                captured = capture(self._graph)
                self._ops_since_snapshot = 0
                self._snapshot_records = captured.record_count()
            payloads = (encode(op) for op in snapshot_ops(captured))
            await asyncio.to_thread(write_snapshot, self.directory, generation, payloads)
            await asyncio.to_thread(self._log.drop_generations, generation)

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
        """Raise ``StoreUnavailableError`` while the store cannot make writes durable: the
        last write failed (until one succeeds), or the data directory is gone, read-only or on
        a full disk (checked every ``DIRECTORY_CHECK_SECONDS``, so a ping answers at once).
        Reads are still served from memory meanwhile."""
        check_durable(closed=self._closed, problem=self._watch.problem or self._write_failure)

    async def count_nodes(self) -> int:
        return len(self._graph.nodes)

    def stored_bytes(self) -> int:
        """The bytes of the current log generation on disk."""
        return self._log.size_bytes

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._watching is not None:
            self._watching.cancel()
            await asyncio.gather(self._watching, return_exceptions=True)
        if self._indexing is not None:
            self._indexing.cancel()
            await asyncio.gather(self._indexing, return_exceptions=True)
        if self._snapshotting is not None:
            await asyncio.shield(self._snapshotting)  # its files must be complete first
        async with self._write_lock:
            await self._roll_back_locked()
            await self._log.aclose()
        self._lock.release()


def _failed(durable: asyncio.Future[None]) -> bool:
    return durable.cancelled() or durable.exception() is not None
