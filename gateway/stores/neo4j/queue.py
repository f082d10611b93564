"""The write queue of ``Neo4jStore``: one session's writes one turn at a time, in arrival order,
and the writes of several sessions committed together (group commit).

Writers of one session are serialised by the server anyway (the session counter's lock, held to
the commit); here they wait for their turn without holding a connection, so only writers of
other processes ever wait on the server's lock. A turn is a batch of writes, run by the queue,
or one explicit transaction, run by its caller (``turn``).

A batch takes the waiting writes in arrival order, at most ``batch`` of them, skipping the
sessions that have a turn in progress (a skipped session's later writes stay behind its earlier
ones), and at most ``concurrency`` batches run at once. A write that arrives while they run
waits, and the next batch takes it with the others that came meanwhile, unless a running batch
of its session takes it first (``joining``: it holds the session's lock anyway): under load many
events share one transaction's begin, commit and fsync, and a write that finds the queue idle
runs at once in a transaction of its own.

A waiting request gives up (``StoreUnavailableError``) only after ``seconds`` in which no turn
ended, never because the queue is long. A cancelled request that has not started leaves the
queue and never runs; one that has keeps running (its batch's other writes share its
transaction) and its outcome is dropped.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from resolvers.errors import StoreUnavailableError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

    from resolvers.store import GraphTransaction

T = TypeVar("T")


@dataclass(eq=False, slots=True)
class Request(Generic[T]):
    """One write (``work``) or one explicit transaction's turn (``work`` ``None``) of a
    session; ``outcome`` is the work's result once its batch committed (a turn: set when it
    is granted)."""

    session_id: str
    work: Callable[[GraphTransaction], Awaitable[T]] | None
    outcome: asyncio.Future[T] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class WriteQueue:
    """Hands out turns per session and runs batches with ``commit`` (module docstring).

    ``commit(requests)`` runs the writes of ``requests`` (and of those ``joining`` adds to
    the list) and settles each one's ``outcome``, a result or an exception; the queue only
    orders and groups them."""

    def __init__(
        self,
        commit: Callable[[list[Request[Any]]], Awaitable[None]],
        *,
        backend: str,
        concurrency: int,
        batch: int,
    ) -> None:
        self._commit = commit
        self._backend = backend
        self._concurrency = concurrency
        self._batch = batch
        self._waiting: list[Request[Any]] = []
        self._busy: set[str] = set()  # sessions with a turn in progress
        self._running: set[asyncio.Task[None]] = set()
        self._turns = 0  # turns ended so far: the queue's progress

    async def write(
        self, session_id: str, work: Callable[[GraphTransaction], Awaitable[T]], seconds: float
    ) -> T:
        """``work``'s result once the transaction it ran in committed."""
        request: Request[T] = Request(session_id, work)
        request.outcome.add_done_callback(_retrieved)
        await self._wait(request, seconds)
        return request.outcome.result()

    @asynccontextmanager
    async def turn(self, session_id: str, seconds: float) -> AsyncIterator[None]:
        """The session's turn for one explicit transaction: no batch of it runs meanwhile."""
        request: Request[None] = Request(session_id, None)
        try:
            await self._wait(request, seconds)
        except BaseException:
            if request.outcome.done() and not request.outcome.cancelled():
                self._ended([request])  # granted as the waiter was cancelled
            raise
        try:
            yield
        finally:
            self._ended([request])

    def joining(self, sessions: set[str], limit: int) -> list[Request[Any]]:
        """Writes of ``sessions`` that came while their batch ran, in arrival order, for the
        batch to take too (at most ``limit``; none past a turn of their session): they would
        wait for the lock it holds anyway."""
        joining: list[Request[Any]] = []
        closed: set[str] = set()
        for request in self._waiting:
            if len(joining) == limit:
                break
            if request.session_id not in sessions or request.session_id in closed:
                continue
            if request.work is None:
                closed.add(request.session_id)
                continue
            joining.append(request)
        self._remove(joining)
        return joining

    def fail_waiting(self, error: Exception) -> None:
        """Fail every write waiting for a turn with ``error``: the server was found not
        answering, and each would wait for it in vain (the outbox journals them at once).
        Explicit transactions' turns keep waiting."""
        for request in self._waiting:
            if request.work is not None and not request.outcome.done():
                request.outcome.set_exception(error)
        self._waiting = [request for request in self._waiting if request.work is None]

    async def aclose(self) -> None:
        """Fail what waits, stop the batches that run (their writes fail as unavailable)."""
        closed = StoreUnavailableError(self._backend, detail="The store is closed.")
        for request in self._waiting:
            if not request.outcome.done():
                request.outcome.set_exception(closed)
        self._waiting.clear()
        for task in list(self._running):
            task.cancel()
        if self._running:
            await asyncio.wait(self._running)

    async def _wait(self, request: Request[Any], seconds: float) -> None:
        self._waiting.append(request)
        self._dispatch()
        try:
            seen = -1
            while seen != self._turns or request not in self._waiting:
                seen = self._turns
                done, _ = await asyncio.wait({request.outcome}, timeout=seconds)
                if done:
                    return
        except BaseException:
            self._leave(request)
            raise
        self._leave(request)
        detail = f"Writes to this session made no progress for {seconds:g} s."
        raise StoreUnavailableError(self._backend, detail=detail)

    def _leave(self, request: Request[Any]) -> None:
        if request in self._waiting:
            self._waiting.remove(request)
            request.outcome.cancel()

    def _dispatch(self) -> None:
        while len(self._running) < self._concurrency and (taken := self._take()):
            self._busy.update(request.session_id for request in taken)
            if taken[0].work is None:
                taken[0].outcome.set_result(None)
                continue
            task = asyncio.create_task(self._run(taken))
            self._running.add(task)

    def _take(self) -> list[Request[Any]]:
        """The next turn: a batch of writes, or one explicit transaction's turn."""
        taken: list[Request[Any]] = []
        blocked = set(self._busy)
        for request in self._waiting:
            if request.session_id in blocked:
                continue
            if request.work is None:
                if not taken:
                    taken.append(request)
                    break
                blocked.add(request.session_id)  # its session's later writes wait for it
                continue
            taken.append(request)
            if len(taken) == self._batch:
                break
        self._remove(taken)
        return taken

    def _remove(self, taken: Sequence[Request[Any]]) -> None:
        chosen = set(map(id, taken))
        self._waiting = [request for request in self._waiting if id(request) not in chosen]

    async def _run(self, requests: list[Request[Any]]) -> None:
        try:
            await self._commit(requests)
        except BaseException as exc:
            failure = exc if isinstance(exc, Exception) else None
            for request in requests:
                if not request.outcome.done():
                    request.outcome.set_exception(
                        failure or StoreUnavailableError(self._backend, detail="Interrupted.")
                    )
            if failure is None:
                raise
        finally:
            self._running.discard(asyncio.current_task())
            self._ended(requests)

    def _ended(self, requests: Sequence[Request[Any]]) -> None:
        self._busy.difference_update(request.session_id for request in requests)
        self._turns += 1
        self._dispatch()


def _retrieved(outcome: asyncio.Future[Any]) -> None:
    """A write whose caller left: its outcome is nobody's, and no error to report."""
    if not outcome.cancelled():
        outcome.exception()
