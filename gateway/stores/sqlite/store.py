"""SqliteStore: the embedded graph store on SQLite (``<dataDir>/graph.sqlite3``).

Storage: the tables of ``gateway.stores.sqlite.schema``, in WAL mode. Nothing is held in
memory beyond SQLite's bounded page caches and the search index's tail (the search rows of
the nodes written since the last merge, at most ``TAIL_ROWS`` after a commit:
``gateway.stores.sqlite.tail``), so opening costs the same at any size and the resident
memory does not grow with the graph. The tail is merged into ``terms`` in sorted batches,
each one transaction, when it outgrows its bound and when writes pause.

Guarantees, and how:

* durable before acknowledged: ``synchronous = FULL`` (``fsync`` on), so ``COMMIT`` fsyncs the
  write-ahead log before ``transaction()`` returns;
* torn tails: SQLite's WAL recovery drops a frame set that was not completely written; the
  WAL is copied into the database by a checkpoint on a connection of its own while writes go
  on (``_checkpoint_when_due``), which moves only committed pages and is itself recovered
  from the WAL after a crash;
* one writer across processes: the directory's ``LOCK`` (``gateway.stores.file.lock``, the same
  lock the log engine takes) is held for as long as the store is open; inside the process one
  asyncio lock serialises transactions, each a savepoint of the writer connection's
  ``BEGIN IMMEDIATE`` … ``COMMIT``, several sharing one commit (``transaction``);
* disk faults: a statement or commit the disk refuses answers ``StoreWriteError`` and the
  transaction is rolled back whole; ``ping`` reports the directory's state as the log engine's
  does (``gateway.stores.file.faults``).

Reads outside a transaction run on reader connections (point reads on one, on the event loop;
reads of many rows on ``READERS`` others, each with its thread, so one long read does not hold
the rest: ``gateway.stores.sqlite.connection``): they see only committed writes and never wait
for a commit's fsync. The statements of a transaction run on the event loop too; its commit
(the fsync) on the writer's thread. A walk to the nearest goal is one recursive statement
(``reach``), not two statements per step.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import sqlite3
import struct
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from gateway.stores.file.faults import DirectoryWatch, check_durable, disk_fault
from gateway.stores.file.lock import DirectoryLock
from gateway.stores.sqlite import queries
from gateway.stores.sqlite.connection import Readers, Worker
from gateway.stores.sqlite.migrate import DATABASE_NAME, DatabaseFileError, prepare_database
from gateway.stores.sqlite.reads import Reads
from gateway.stores.sqlite.schema import (
    DAMAGED,
    SCHEMA,
    SCHEMA_VERSION,
    TRIGGERS,
    UPGRADE_FROM_1,
    UPGRADE_TO_5,
    UPGRADE_TO_6,
    result_code,
    term_rows,
)
from gateway.stores.sqlite.tail import Change, Tail
from gateway.stores.sqlite.transaction import Parked, SqliteTransaction
from gateway.stores.sqlite.writes import (
    any_parked,
    merge_rows,
    pending_nodes,
    set_tail_version,
    tail_version,
)
from resolvers.errors import StoreUnavailableError, StoreWriteError
from resolvers.records import Backend

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from pathlib import Path

    from resolvers.store import GraphReader, GraphTransaction

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Connections (each with its thread) that reads of many rows share: one more than the
# gateway's heavy queries that may run at once (``Settings.heavy_readers``, 4 by default), so
# those can never hold every reader and a light query's read always finds one.
READERS = 5
# The records (nodes and edges) the session pages read last hold at most (``SessionPages``):
# ~13 sessions of the explorer's default 500 nodes and their edges, ~30 MB at most (~1.9 KB a
# record at 1M nodes, measured with tracemalloc; most are the decoded rows' records anyway).
PAGE_RECORDS = 16_000
# ... and the characters of their text properties: a session of 500 summaries of 200,000
# characters would otherwise hold 100 MB for each of those ~13 pages.
PAGE_TEXT = 32 * 2**20
# Page caches, per connection (negative = KiB): what the store keeps resident at any size.
READER_CACHE_KIB = 32 * 1024
WRITER_CACHE_KIB = 128 * 1024
# Pages the WAL grows by before a checkpoint copies them into the database: a search-index
# page that several commits change in between is copied once, not once per checkpoint. The
# checkpoint runs on a connection of its own (``_checkpoint``), not inside a commit: there it
# held the write lock for ~1 s at 1M nodes (its random index pages), and no write went on.
WAL_CHECKPOINT_PAGES = 16_384
# Transactions committed by one fsync at most: a steady stream of writers still gets commits.
MAX_GROUP = 64
# Search rows the tail holds at most (~200 bytes of memory each) before the writer, after a
# commit, merges the oldest of them into ``terms`` itself; and the rows one merge moves (one
# transaction: a write that arrives meanwhile waits for it).
TAIL_ROWS = 200_000
MERGE_ROWS = 50_000
# Seconds without a commit after which the tail is merged, a batch at a time, while no
# write waits.
IDLE_SECONDS = 0.5

# SQLite's primary result codes for a lock held by another process (a SQLite shell, a backup
# tool) past the busy timeout (and ``DAMAGED``: a file it cannot read as a database).
_HELD = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
# How long a write waits for another process's lock, and how often it looks again.
BUSY_SECONDS = 5.0
BUSY_RETRY_SECONDS = 0.05
_HELD_BY = "another process holds the database's write lock (a SQLite shell or a backup tool?)"
HELD_BY_ANOTHER_PROCESS = f"{_HELD_BY}; writes go on once it lets go"
_SQLITE_FAULTS = {
    sqlite3.SQLITE_FULL: errno.ENOSPC,
    sqlite3.SQLITE_IOERR: errno.EIO,
    sqlite3.SQLITE_READONLY: errno.EROFS,
    sqlite3.SQLITE_CANTOPEN: errno.ENOENT,
    sqlite3.SQLITE_PERM: errno.EACCES,
}


def _unreadable(path: Path, exc: sqlite3.DatabaseError) -> DatabaseFileError:
    """Why the database at ``path`` could not be opened, and what to do."""
    if result_code(exc) in _HELD:
        problem, advice = _HELD_BY, "stop it and start again"
    else:
        problem = f"SQLite cannot read it as a database ({exc})"
        advice = (
            "restore it from a backup, or move it aside to start with an empty graph "
            "(`science-memory import-graph` rebuilds one from an export)"
        )
    return DatabaseFileError(f"{path}: {problem}; {advice}")


def _not_a_directory(path: Path) -> bool:
    return path.exists() and not path.is_dir()


class SqliteStore(Reads):
    """The embedded backend on SQLite. Use ``await SqliteStore.open(directory)``."""

    backend = Backend.FILE
    _db: Readers

    def __init__(
        self,
        directory: Path,
        lock: DirectoryLock,
        writer: Worker,
        readers: Readers,
        point: Worker,
        checkpointer: Worker,
        tail: Tail,
        tail_rows: int,
    ) -> None:
        self.directory = directory
        self._tail = tail
        self._tail_rows = tail_rows
        self._last_commit = 0.0  # the event loop's time of the last commit
        self._merging: asyncio.Task[None] | None = None  # merges the tail once writes pause
        self._lock = lock
        self._writer = writer
        self._parked = Parked()
        self._db = readers
        self._point = point
        self._pages = queries.SessionPages(PAGE_RECORDS, PAGE_TEXT)
        self._checkpointer = checkpointer
        self._checkpointing: asyncio.Task[None] | None = None
        # The WAL's index (shared memory of every connection): how long the log is, read
        # after each commit to decide on a checkpoint.
        self._wal_index = os.open(directory / f"{DATABASE_NAME}-shm", os.O_RDONLY)
        self._write_lock = asyncio.Lock()
        self._queued = 0  # transactions waiting for the write lock
        self._group: _Group | None = None  # the open SQLite transaction's members
        self._committing: asyncio.Future[None] | None = None
        self._adopting: asyncio.Future[None] | None = None
        self._closed = False
        self._write_failure: str | None = None
        self._damaged: str | None = None  # why the database file cannot be read, once found
        self._held_since: float | None = None  # when a write first met another process's lock
        self._file = os.stat(directory / DATABASE_NAME)  # the database file the writer opened
        self._watch = DirectoryWatch(directory, self._still_there)
        self._watching: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls,
        directory: Path,
        *,
        fsync: bool = True,
        readers: int = READERS,
        tail_rows: int = TAIL_ROWS,
    ) -> SqliteStore:
        """Lock the directory, migrate a log-engine directory found there (once), open the
        database with ``readers`` connections for reads of many rows, rebuild the search
        index's tail (at most ``tail_rows`` rows after a commit). Raises
        ``StoreLockedError`` when another process holds the directory."""
        if await asyncio.to_thread(_not_a_directory, directory):
            raise DatabaseFileError(
                f"{directory}: not a directory, where the graph's database is kept; move it "
                "aside (or choose another data directory)"
            )
        lock = DirectoryLock.acquire(directory)
        path = directory / DATABASE_NAME
        try:
            await asyncio.to_thread(prepare_database, directory, fsync=fsync)
            synchronous = "FULL" if fsync else "OFF"
            writer = Worker(
                path,
                name="sqlite-writer",
                pragmas={
                    "journal_mode": "WAL",
                    "synchronous": synchronous,
                    "cache_size": -WRITER_CACHE_KIB,
                    "wal_autocheckpoint": 0,  # the checkpointer's (``_checkpoint``)
                    # Each transaction is a savepoint of its group's SQLite transaction, so
                    # every page it changes is first copied to the statement journal; past
                    # 64 KiB that journal is a temporary file, written with a system call a
                    # page (~8% of the event loop's time at 1M nodes). In memory it is
                    # bounded by one transaction's pages and gone at its release.
                    "temp_store": "MEMORY",
                    "busy_timeout": 0,  # a lock another process holds: ``_open_group``
                },
            )
            await writer.start()
            await writer.run(_create_schema)
            tail = Tail(writer.call(tail_version))
            pending = await writer.run(pending_nodes)
            tail.load((rid, node, term_rows(node, rid)) for rid, node in pending)

            def reader(name: str) -> Worker:
                pragmas = {"cache_size": -READER_CACHE_KIB, "query_only": 1}
                return Worker(path, name=name, pragmas=pragmas, interruptible=True)

            pool = Readers([reader(f"sqlite-reader-{n}") for n in range(readers)])
            await pool.start()
            point = reader("sqlite-point-reader")
            await point.start()
            # Its ``synchronous`` is the writer's: a checkpoint fsyncs the log before copying
            # it and the database before marking it copied.
            checkpointer = Worker(
                path,
                name="sqlite-checkpointer",
                pragmas={"synchronous": synchronous, "cache_size": -1024, "query_only": 1},
            )
            await checkpointer.start()
        except sqlite3.DatabaseError as exc:
            lock.release()
            raise _unreadable(path, exc) from None  # the start stops with one line: why
        except BaseException:
            lock.release()
            raise
        store = cls(directory, lock, writer, pool, point, checkpointer, tail, tail_rows)
        for worker in (*pool.workers, point):
            worker.fault = store._fault
        store._parked.maybe = writer.call(any_parked)
        store._watching = asyncio.create_task(store._watch.run())
        return store

    async def write(self, session_id: str, work: Callable[[GraphTransaction], Awaitable[T]]) -> T:
        """One transaction: writers never conflict here (one write lock), so ``work`` runs once."""
        async with self.transaction(session_id) as tx:
            return await work(tx)

    @asynccontextmanager
    async def transaction(self, session_id: str | None = None) -> AsyncIterator[GraphTransaction]:
        """One transaction is one savepoint of the writer's open SQLite transaction (group
        commit): while a commit's fsync runs, the transactions that arrive queue on the write
        lock; the first of them begins the next SQLite transaction, each hands the lock to the
        next waiter, and the last (or the ``MAX_GROUP``-th) commits them all in one fsync.
        Each waits for that commit before it returns; a commit the disk refuses fails them
        all, and nothing of any of them is kept."""
        if self._closed:
            raise StoreUnavailableError(Backend.FILE.value, detail="The store is closed.")
        if self._damaged is not None:  # writing on would spread the damage
            raise StoreWriteError(
                f"The write was refused: {self._damaged}.", backend=Backend.FILE.value
            )
        self._queued += 1
        try:
            await self._write_lock.acquire()
        except asyncio.CancelledError:
            if self._group is not None:
                # An open group may have been handed to this waiter: let a task take it over.
                self._adopting = asyncio.ensure_future(self._adopt_group())
            raise
        finally:
            self._queued -= 1
        try:
            group = await self._open_group()
        except BaseException:
            self._write_lock.release()
            raise
        try:
            db = self._writer.connection
            db.execute("SAVEPOINT tx")
            tx = SqliteTransaction(self._writer, self._parked, self._tail, group.version)
            try:
                yield tx
            except BaseException as exc:
                self._parked.maybe = True  # what it took out is back
                self._tail.undo(tx.changes)
                if not _undo_savepoint(db):
                    group.lost = exc
                if isinstance(exc, sqlite3.DatabaseError):
                    raise self._write_error(exc) from exc
                raise
            db.execute("RELEASE tx")
            group.members += 1
            group.changes.extend(tx.changes)
        finally:
            self._hand_over(group)
        await asyncio.shield(group.durable)

    async def _adopt_group(self) -> None:
        """Commit (or hand over) a group whose next member gave up while waiting for it."""
        await self._write_lock.acquire()
        if self._group is None:
            self._write_lock.release()
            return
        self._hand_over(self._group)

    async def _open_group(self) -> _Group:
        if self._group is None:
            loop = asyncio.get_running_loop()
            while True:
                try:
                    self._writer.call(_begin)
                    break
                except sqlite3.DatabaseError as exc:
                    # The writer does not wait for a lock itself (``busy_timeout`` 0): another
                    # process's lock is waited for here, the event loop serving meanwhile, up
                    # to ``BUSY_SECONDS`` since it was first met, whichever write meets it
                    # (the writes queued behind a refused one are refused at once).
                    if result_code(exc) not in _HELD:
                        raise self._write_error(exc) from exc
                    if self._held_since is None:
                        self._held_since = loop.time()
                    if loop.time() >= self._held_since + BUSY_SECONDS:
                        raise self._write_error(exc) from exc
                await asyncio.sleep(BUSY_RETRY_SECONDS)
            self._held_since = None
            self._group = _Group(loop.create_future(), self._tail.committed + 1)
        return self._group

    def _hand_over(self, group: _Group) -> None:
        """Let the next waiter add to the open group, or commit it (the lock is released once
        the commit is done, so nothing is written meanwhile)."""
        if self._queued and group.members < MAX_GROUP and group.lost is None:
            self._write_lock.release()
            return
        self._group = None
        self._committing = asyncio.ensure_future(self._commit(group))

    async def _commit(self, group: _Group) -> None:
        try:
            await self._settle(group)
            while self._tail.rows > self._tail_rows and not self._closed:
                if not await self._merge():  # the oldest rows: the tail stays bounded
                    break
            await self._checkpoint_when_due()
        finally:
            self._write_lock.release()
        self._last_commit = asyncio.get_running_loop().time()
        if self._merging is None and self._tail.rows and not self._closed:
            self._merging = asyncio.create_task(self._merge_when_idle())

    async def _settle(self, group: _Group) -> None:
        """Commit ``group`` (the write lock held) and tell its members how it went."""
        try:
            if group.lost is not None:
                raise StoreWriteError(
                    "The write could not be made durable: the disk refused it; nothing of it "
                    "was kept.",
                    backend=Backend.FILE.value,
                )
            version = group.version if group.changes else None
            try:
                # One hand-off: the commit, then whether the file is still at its path.
                there = await self._writer.run(self._committed, version)
            except sqlite3.DatabaseError as exc:
                raise self._write_error(exc) from exc
            if not there:
                # Committed into a file no longer at its path (``rm -rf`` of the data
                # directory): a restart would not find it, so it is not acknowledged.
                self._write_failure = disk_fault(errno.ENOENT)
                raise StoreWriteError(
                    f"The write could not be made durable: {self._write_failure}.",
                    backend=Backend.FILE.value,
                )
        except StoreWriteError as exc:
            self._tail.undo(group.changes)
            self._parked.maybe = True  # what the group took out is back
            logger.warning("rolled back %d write(s): %s", group.members, exc.__cause__ or exc)
            group.durable.set_exception(exc)
            group.durable.exception()  # retrieved: a group may have no member left to wait
        except BaseException as exc:
            self._tail.undo(group.changes)
            self._parked.maybe = True
            group.durable.set_exception(exc)
            group.durable.exception()
            raise
        else:
            if group.changes:
                self._tail.commit(group.version)
            self._write_failure = None
            group.durable.set_result(None)

    async def merge_search_tail(self) -> None:
        """Merge the whole tail of the search index into ``terms`` now (tests, tools)."""
        while self._tail.rows or self._tail.pending_rids():
            async with self._write_lock:
                if not await self._merge():
                    return

    async def _merge(self, rows: int = MERGE_ROWS) -> bool:
        """Move the oldest ~``rows`` search rows of the tail into ``terms``, in one
        transaction (the write lock held, no group open); False when the disk refused it."""
        rids, moved = self._tail.oldest(rows)
        if not rids:
            return False
        version = self._tail.committed + 1
        changes = [change for rid in rids if (change := self._tail.stage_drop(rid, version))]
        try:
            await self._writer.run(_merge_sql, moved, rids, version)
        except BaseException as exc:
            self._tail.undo(changes)
            if isinstance(exc, sqlite3.DatabaseError):
                logger.warning("could not merge the search index's tail: %s", exc)
                self._write_error(exc)
                return False
            raise
        self._tail.commit(version)
        return True

    async def _merge_when_idle(self) -> None:
        """Merge the tail, a batch at a time, once no commit came for ``IDLE_SECONDS`` and
        while no write waits and no read runs on a thread (a write that comes during a batch
        waits for it; the bound merges after a commit keep the tail bounded under any load)."""
        loop = asyncio.get_running_loop()
        try:
            while self._tail.rows and not self._closed:
                pause = self._last_commit + IDLE_SECONDS - loop.time()
                if pause > 0:
                    await asyncio.sleep(pause)
                    continue
                if self._write_lock.locked() or self._queued or self._group is not None:
                    await asyncio.sleep(IDLE_SECONDS)
                    continue
                if self._db.busy():  # a read on a thread: a batch would slow it down
                    await asyncio.sleep(IDLE_SECONDS / 10)
                    continue
                # Shielded: a close waits for the batch (it holds the write lock) to end.
                if not await asyncio.shield(self._merge_unlocked()):
                    return
        finally:
            self._merging = None

    async def _merge_unlocked(self) -> bool:
        async with self._write_lock:
            merged = await self._merge()
            await self._checkpoint_when_due()
        return merged

    async def _checkpoint_when_due(self) -> None:
        """After a commit (the write lock held): once ``WAL_CHECKPOINT_PAGES`` frames of the
        WAL are not copied into the database yet, start a checkpoint on the checkpointer's
        connection. The log starts over only at a write that finds every frame copied, which
        writes going on during that checkpoint never let happen: so once the WAL is that long
        and fewer frames are left, the writer copies them itself, holding the lock (the pages
        written during the last checkpoint, not all)."""
        if self._checkpointing is not None or self._closed:
            return
        frames, copied = _wal_frames(self._wal_index)
        left = frames - copied
        if left >= WAL_CHECKPOINT_PAGES:
            self._checkpointing = asyncio.create_task(self._checkpoint())
        elif frames >= WAL_CHECKPOINT_PAGES and left:
            try:
                await self._writer.run(_checkpoint_sql)
            except sqlite3.DatabaseError as exc:
                logger.warning("could not checkpoint the write-ahead log: %s", exc)
                self._write_error(exc)

    async def _checkpoint(self) -> None:
        """Copy the WAL into the database on the checkpointer's connection and thread: writes
        go on meanwhile (a commit is durable once the WAL is fsynced; the checkpoint only moves
        committed pages, fsyncing each file in turn, and a crash in it is recovered from the
        WAL)."""
        try:
            await self._checkpointer.run(_checkpoint_sql)
        except sqlite3.DatabaseError as exc:
            logger.warning("could not checkpoint the write-ahead log: %s", exc)
            self._write_error(exc)
        finally:
            self._checkpointing = None

    def _write_error(self, exc: sqlite3.Error) -> Exception:
        """``StoreWriteError`` for a fault of the disk, a damaged file or a write lock another
        process holds; ``exc`` itself for anything else."""
        result = result_code(exc)
        if result in DAMAGED:
            self._damage(exc)
            return StoreWriteError(
                f"The write was refused: {self._damaged}; nothing of it was kept.",
                backend=Backend.FILE.value,
            )
        if result in _HELD:
            self._write_failure = HELD_BY_ANOTHER_PROCESS
        else:
            code = _SQLITE_FAULTS.get(result)
            if code is None:
                return exc
            self._write_failure = disk_fault(code)
        return StoreWriteError(
            f"The write could not be made durable: {self._write_failure}; nothing of it was kept.",
            backend=Backend.FILE.value,
        )

    def _committed(self, db: sqlite3.Connection, tail_version: int | None) -> bool:
        """Commit the open group (rolled back if that fails) and tell whether the database
        file at its path is still the one opened (blocking, on the writer's thread)."""
        try:
            _commit_sql(db, tail_version)
        except BaseException:
            _rollback(db)
            raise
        return self._still_there()

    def _still_there(self) -> bool:
        """Whether the database file at its path is still the one opened (blocking)."""
        try:
            return os.path.samestat(self._file, os.stat(self.directory / DATABASE_NAME))
        except FileNotFoundError:
            return False

    async def ping(self) -> None:
        """Raise ``StoreUnavailableError`` while writes cannot be made durable (the last one
        failed, or the directory is gone, read-only or on a full disk) or once the database
        file was found damaged."""
        check_durable(
            closed=self._closed,
            problem=self._damaged or self._watch.problem or self._write_failure,
        )

    def _fault(self, exc: sqlite3.DatabaseError) -> Exception:
        """What a read's error means (``Worker.fault``): a damaged file makes the store
        unreachable (``MemoryGraphUnreachable``), anything else stays the error it is."""
        if result_code(exc) not in DAMAGED:
            return exc
        self._damage(exc)
        return StoreUnavailableError(Backend.FILE.value, detail=f"Reads failed: {self._damaged}.")

    def _damage(self, exc: sqlite3.Error) -> None:
        """Note that the database file is damaged: reads that meet a damaged page fail, writes
        are refused until a restart, and the health check says why and what to do."""
        if self._damaged is None:
            path = self.directory / DATABASE_NAME
            self._damaged = (
                f"the database file {path} is damaged ({exc}); restore it from a backup, or "
                "stop the gateway and copy out what can still be read with "
                "`science-memory export-graph` (then `import-graph` it into a new data "
                "directory)"
            )
            logger.error("%s", self._damaged)

    @asynccontextmanager
    async def consistent_view(self) -> AsyncIterator[GraphReader]:
        """Reads that all see one state (``ConsistentReader``): one reader connection, lent to
        them alone, in one read transaction. It is ended after whatever ran on the connection's
        thread (``Worker.run_after``), even when the caller is cancelled, so the connection
        never keeps an old state for the reads after it."""
        async with self._db.lend() as worker:
            with self._tail.hold():  # what the snapshot sees of the tail stays until its end
                try:
                    await worker.run_after(queries.begin_read)
                    yield _ConsistentView(worker, self._tail, self._pages)
                finally:
                    await asyncio.shield(worker.run_after(queries.end_read))

    async def read(self, query: Callable[[sqlite3.Connection], T]) -> T:
        """``query(connection)`` on the reader's thread (capture, exports)."""
        return await self._db.run(query)

    async def count_nodes(self) -> int:
        return await self._db.run(queries.count_nodes)

    def stored_bytes(self) -> int:
        """The bytes of the database and its write-ahead log on disk."""
        return sum(
            path.stat().st_size
            for path in self.directory.glob(f"{DATABASE_NAME}*")
            if path.is_file()
        )

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._merging is not None:
            self._merging.cancel()
            await asyncio.gather(self._merging, return_exceptions=True)
        if self._watching is not None:
            self._watching.cancel()
            await asyncio.gather(self._watching, return_exceptions=True)
        if self._checkpointing is not None:  # its thread runs it to the end: wait for it
            await asyncio.gather(self._checkpointing, return_exceptions=True)
        async with self._write_lock:  # a commit in flight holds it until it is done
            group, self._group = self._group, None
            if group is not None:  # handed to this close by a member that gave up waiting
                await self._settle(group)
            await self._db.aclose()
            await self._point.aclose()
            await self._checkpointer.aclose()
            await self._writer.aclose()  # the last connection: it checkpoints the rest
        os.close(self._wal_index)
        self._lock.release()


def _create_schema(db: sqlite3.Connection) -> None:
    """Create the tables of an empty database, or upgrade an older one (in one transaction)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        version = _schema_version(db)
        if version is not None and version > SCHEMA_VERSION:
            raise RuntimeError(
                f"the graph database has schema {version}, newer than this gateway's "
                f"{SCHEMA_VERSION}: upgrade the gateway"
            )
        if version == 1:
            logger.info("upgrading the graph database's search index (schema 1 to 2)")
            for statement in UPGRADE_FROM_1:
                db.execute(statement)
        for statement in (*SCHEMA.split(";"), *TRIGGERS):  # not executescript: it commits
            db.execute(statement)
        if version is not None and version < 5:
            logger.info("re-indexing the search terms of non-ASCII text (schema %d to 5)", version)
            for statement in UPGRADE_TO_5:
                db.execute(statement)
        elif version == 5:
            logger.info("re-indexing the search terms of text with an İ (schema 5 to 6)")
            for statement in UPGRADE_TO_6:
                db.execute(statement)
        if version is None:
            db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif version < SCHEMA_VERSION:
            db.execute("UPDATE meta SET value = ? WHERE name = 'schema'", (str(SCHEMA_VERSION),))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    if version is not None and version < SCHEMA_VERSION:
        logger.info("upgraded the graph database to schema %d", SCHEMA_VERSION)


def _schema_version(db: sqlite3.Connection) -> int | None:
    """The database's schema version; ``None`` for an empty database."""
    if db.execute("SELECT 1 FROM sqlite_schema WHERE name = 'meta'").fetchone() is None:
        return None
    row = db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
    return None if row is None else int(row[0])


@dataclass(slots=True)
class _Group:
    """The transactions of one SQLite transaction, and the future of its commit."""

    durable: asyncio.Future[None]
    version: int  # the tail's version its commit stores (when it changed the tail)
    members: int = 0
    lost: BaseException | None = None  # set when SQLite rolled the whole group back
    changes: list[Change] = field(default_factory=list)  # its members' changes of the tail


def _undo_savepoint(db: sqlite3.Connection) -> bool:
    """Roll back to the transaction's savepoint; False when SQLite had already rolled back
    the whole group (it does after some I/O errors)."""
    if not db.in_transaction:
        return False
    try:
        db.execute("ROLLBACK TO tx")
        db.execute("RELEASE tx")
    except sqlite3.OperationalError:
        return False
    return True


def _begin(db: sqlite3.Connection) -> None:
    db.execute("BEGIN IMMEDIATE")


class _ConsistentView(Reads):
    """The read primitives on one lent reader connection inside its read transaction (its
    point reads on the event loop: nothing else runs on that connection meanwhile)."""

    def __init__(self, worker: Worker, tail: Tail, pages: queries.SessionPages | None) -> None:
        self._db = self._point = worker
        self._tail = tail
        self._pages = pages


def _commit_sql(db: sqlite3.Connection, tail_version: int | None) -> None:
    if tail_version is not None:
        set_tail_version(db, tail_version)
    db.execute("COMMIT")


def _checkpoint_sql(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def _wal_frames(wal_index: int) -> tuple[int, int]:
    """The frames in the WAL and those of them copied into the database: ``mxFrame`` of the
    wal-index header and ``nBackfill`` of its checkpoint information, native byte order
    (https://sqlite.org/walformat.html). Read without SQLite's locks: a hint for when to
    checkpoint, nothing more."""
    header = os.pread(wal_index, 100, 0)
    if len(header) < 100:
        return 0, 0
    return struct.unpack_from("=I", header, 16)[0], struct.unpack_from("=I", header, 96)[0]


def _merge_sql(
    db: sqlite3.Connection, rows: list[tuple[Any, ...]], rids: list[int], version: int
) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        merge_rows(db, rows, rids)
        set_tail_version(db, version)
        db.execute("COMMIT")
    except BaseException:
        _rollback(db)
        raise


def _rollback(db: sqlite3.Connection) -> None:
    if db.in_transaction:
        db.execute("ROLLBACK")
