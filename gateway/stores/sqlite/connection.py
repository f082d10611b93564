"""A SQLite connection and the thread its slow statements run on.

A statement that touches a few B-tree pages (a lookup by id, one hop of a walk) costs less
than handing it to a thread and back (~50-100 µs on a busy event loop), so those run on the
event loop (``call``); a statement that may read many rows, and every commit (its fsync), run
on the connection's own thread (``run``). One connection is never used by two threads at once:
the store keeps the two kinds on different connections, or (the writer) under its write lock.

A long read must not hold every other: reads of many rows go to ``Readers``, several
connections each with its thread, so it holds one of them. And a read given up by its caller
(its time budget ran out: the awaiting task is cancelled) must not keep its thread: on an
``interruptible`` connection (the readers) SQLite's progress handler aborts the statements of a
job whose caller is gone, and a job not started yet is never run. The writer is not
interruptible: its commits run to the end whoever waits for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator, Sequence
    from pathlib import Path

T = TypeVar("T")

# SQLite virtual-machine instructions between two looks at whether the running job is wanted
# (a few tens of microseconds of work; the look itself is one attribute read).
PROGRESS_INSTRUCTIONS = 10_000


class _Job:
    __slots__ = ("abandoned",)

    def __init__(self) -> None:
        self.abandoned = False


class Worker:
    """A connection, opened with ``pragmas``, and one thread for it."""

    def __init__(
        self, path: Path, *, name: str, pragmas: dict[str, Any], interruptible: bool = False
    ) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._path = path
        self._pragmas = pragmas
        self._interruptible = interruptible
        self._job: _Job | None = None  # the job running on the thread
        self.in_hand = 0  # jobs handed to the thread whose caller still waits
        # Jobs handed to the thread and not done there (run, or cancelled before they ran):
        # a caller that gave up leaves its job running, which ``in_hand`` no longer counts.
        self._undone = 0
        self._undone_lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        # What a statement's error means to the caller (the store's: a damaged file is a
        # state of the store, not a bug); the error itself when not set or not known there.
        self.fault: Callable[[sqlite3.DatabaseError], Exception] | None = None

    async def start(self) -> None:
        await self.run_raw(self._connect)

    def _connect(self) -> None:
        # Autocommit: transactions are begun and ended explicitly, nothing is implicit.
        connection = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        for name, value in self._pragmas.items():
            connection.execute(f"PRAGMA {name} = {value}")
        if self._interruptible:
            connection.set_progress_handler(self._abandoned, PROGRESS_INSTRUCTIONS)
        self._connection = connection

    def _abandoned(self) -> bool:
        """SQLite's progress handler: true aborts the statement ("interrupted")."""
        job = self._job
        return job is not None and job.abandoned

    def call(self, function: Callable[..., T], *args: Any) -> T:
        """``function(connection, *args)`` here, on the event loop."""
        with self._faults_meant():
            return function(self.connection, *args)

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(connection, *args)`` on the connection's thread."""
        return await self.run_raw(lambda: function(self.connection, *args))

    async def run_after(self, function: Callable[..., T], *args: Any) -> T:
        """``function(connection, *args)`` after everything handed to the thread: here, on
        the event loop, when the thread has nothing left (a cheap statement, such as a read
        transaction's ``BEGIN`` or end, then costs no hand-off), else queued on the thread."""
        if self._undone == 0:
            return self.call(function, *args)
        return await self.run(function, *args)

    async def run_raw(self, function: Callable[[], T]) -> T:
        self.in_hand += 1
        try:
            with self._faults_meant():
                if not self._interruptible:
                    return await self._submit(function)
                job = _Job()
                try:
                    return await self._submit(self._run_job, job, function)
                except asyncio.CancelledError:
                    job.abandoned = True
                    raise
        finally:
            self.in_hand -= 1

    @contextlib.contextmanager
    def _faults_meant(self) -> Iterator[None]:
        """A statement's error raised as what it means to the caller (``fault``)."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            meant = exc if self.fault is None else self.fault(exc)
            if meant is exc:
                raise
            raise meant from exc

    def _submit(self, function: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """What ``loop.run_in_executor`` does, counting the job until it is done."""
        with self._undone_lock:
            self._undone += 1
        future = self._executor.submit(function, *args)
        future.add_done_callback(self._done)
        return asyncio.wrap_future(future)

    def _done(self, _: object) -> None:  # on the thread, or where the job was cancelled
        with self._undone_lock:
            self._undone -= 1

    def _run_job(self, job: _Job, function: Callable[[], T]) -> T:
        self._job = job
        try:
            return function()
        finally:
            self._job = None

    @property
    def connection(self) -> sqlite3.Connection:
        if self._connection is None:
            raise RuntimeError("the connection is closed")
        return self._connection

    async def aclose(self) -> None:
        def close() -> None:
            connection, self._connection = self._connection, None
            if connection is not None:
                connection.close()

        await self.run_raw(close)
        self._executor.shutdown(wait=True)


class Readers:
    """Reader connections of one database, each with its thread: a read goes to the one with
    the fewest reads in hand (``run``), so a long read holds one thread, not every read."""

    def __init__(self, workers: Sequence[Worker]) -> None:
        self.workers = tuple(workers)
        self._lent: set[Worker] = set()  # taken out by ``lend``: no other read goes there
        # One connection is never lent (unless there is only one): the other reads keep it.
        self._lendable = asyncio.Semaphore(max(1, len(self.workers) - 1))

    async def start(self) -> None:
        for worker in self.workers:
            await worker.start()

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(connection, *args)`` on the thread of the least busy connection."""
        return await self._least_busy().run(function, *args)

    def busy(self) -> bool:
        """Whether any read is in hand or any connection lent."""
        return bool(self._lent) or any(worker.in_hand for worker in self.workers)

    def _least_busy(self) -> Worker:
        free = [worker for worker in self.workers if worker not in self._lent]
        return min(free or self.workers, key=attrgetter("in_hand"))

    @contextlib.asynccontextmanager
    async def lend(self) -> AsyncIterator[Worker]:
        """The least busy connection, for the caller's reads alone until it is given back;
        waits while as many are lent as may be."""
        await self._lendable.acquire()
        worker = self._least_busy()
        self._lent.add(worker)
        try:
            yield worker
        finally:
            self._lent.discard(worker)
            self._lendable.release()

    async def aclose(self) -> None:
        for worker in self.workers:
            await worker.aclose()
