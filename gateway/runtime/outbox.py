"""The outbox: observe events journalled while the selected Neo4j is unreachable.

``<dataDir>/outbox`` holds a checksummed record log (``gateway.stores.file.log``) of events,
each durable before the mutation answers ``queued: true``. ``drain`` applies them — each
session's in the order they were journalled, in batches of consecutive events of one session
(one transaction each, ``gateway.runtime.replay``), several sessions at once — and then marks them
consumed with an empty snapshot of the generation it drained, so a restart resumes after it.
A session stops being held (``holds``) as soon as its last journalled event is applied, so its
new writes go straight to the store while other sessions still replay; while the store answers
(``resume``, until ``pause``) a new write of a held session can wait for that moment
(``released``) instead of being journalled behind the replay. Applying an event is idempotent,
so a drain interrupted half-way is simply repeated.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections import Counter
from typing import TYPE_CHECKING

from gateway.stores.file.log import (
    CorruptLogError,
    DirectoryLock,
    LogWriteError,
    RecordLog,
    read_latest_snapshot,
    write_snapshot,
)
from resolvers.events import Event, event_from_dict, event_to_dict

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator, Sequence
    from pathlib import Path

# Sessions replayed at once: their events are independent (each session's stay in order).
REPLAY_SESSIONS = 8
# Consecutive events of one session applied together (one transaction on the store).
REPLAY_BATCH = 32


class Outbox:
    """A durable FIFO of events. Use ``await Outbox.open(directory)``."""

    def __init__(
        self,
        directory: Path,
        lock: DirectoryLock,
        log: RecordLog,
        base: int,
        sessions: Counter[str],
    ) -> None:
        self._directory = directory
        self._lock = lock
        self._log = log
        self._base = base
        self._pending = sessions.total()
        self._sessions = sessions  # journalled events per session, until they are applied
        self._draining = asyncio.Lock()
        self._replaying = False  # the store answers: held sessions are being released
        self._waiters: dict[str, asyncio.Event] = {}  # set when the session is released
        # Held while appending and while a drain counts and rotates: an append in flight at the
        # rotation would land in the drained generation uncounted and be dropped with it.
        self._appending = asyncio.Lock()

    @classmethod
    async def open(cls, directory: Path, *, fsync: bool = True) -> Outbox:
        lock = await asyncio.to_thread(DirectoryLock.acquire, directory)
        try:
            log, base, sessions = await asyncio.to_thread(_load, directory, fsync)
        except BaseException:
            lock.release()
            raise
        return cls(directory, lock, log, base, sessions)

    @property
    def pending(self) -> int:
        """Events journalled and not yet applied."""
        return self._pending

    def holds(self, session_id: str) -> bool:
        """Whether events of ``session_id`` are journalled and not yet drained: a new one must
        queue behind them to keep the session's order."""
        return self._sessions[session_id] > 0

    def resume(self) -> None:
        """The store answers again: the journal is being replayed, so a new write of a held
        session may wait for it (``released``)."""
        self._replaying = True

    def pause(self) -> None:
        """The store does not answer: nothing is released until ``resume``, so no write waits."""
        self._replaying = False
        for waiter in self._waiters.values():
            waiter.set()
        self._waiters.clear()

    async def released(self, session_id: str, seconds: float) -> bool:
        """Whether ``session_id`` holds no journalled event, waiting up to ``seconds`` for
        the replay to apply its last one — only while the store answers (``resume``): a write
        that waits instead of being journalled is acknowledged as soon as the journal ahead
        of it is empty, and adds nothing to replay."""
        if self._replaying and self.holds(session_id):
            waiter = self._waiters.setdefault(session_id, asyncio.Event())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await waiter.wait()
        return not self.holds(session_id)

    async def append(self, event: Event) -> None:
        """Journal ``event``; returns once it is durable."""
        payload = json.dumps(event_to_dict(event), ensure_ascii=False, separators=(",", ":"))
        async with self._appending:
            try:
                await self._log.append(payload.encode())
            except LogWriteError:
                # One append at a time: nothing was built on the refused event, so the journal
                # may take the next one at once.
                await self._log.resume()
                raise
            self._pending += 1
            self._sessions[event.session_id] += 1

    async def drain(
        self,
        apply: Callable[[Sequence[Event]], Awaitable[object]],
        *,
        sessions: int = REPLAY_SESSIONS,
        batch: int = REPLAY_BATCH,
    ) -> int:
        """Apply every event journalled so far — each session's in order, in calls of up to
        ``batch`` consecutive events of one session, up to ``sessions`` sessions at once — and
        return how many were applied.

        An exception from ``apply`` stops the drain (the other sessions' events in flight are
        cancelled) and propagates; every event stays journalled and every session it held is
        held again."""
        async with self._draining:
            async with self._appending:
                count = self._pending
                if count == 0:
                    return 0
                generation = await self._log.rotate()
            payloads = await asyncio.to_thread(self._read, count)
            queues: dict[str, list[Event]] = {}
            for payload in payloads:
                event = event_from_dict(json.loads(payload))
                queues.setdefault(event.session_id, []).append(event)
            applied: Counter[str] = Counter()

            async def replay(work: Iterator[list[Event]]) -> None:
                for events in work:  # shared: each worker takes the next session
                    for start in range(0, len(events), batch):
                        chunk = events[start : start + batch]
                        await apply(chunk)
                        self._consumed(chunk[0].session_id, len(chunk))
                        applied[chunk[0].session_id] += len(chunk)

            work = iter(queues.values())
            workers = [
                asyncio.ensure_future(replay(work)) for _ in range(min(sessions, len(queues)))
            ]
            try:
                await asyncio.gather(*workers)
            except BaseException:
                for worker in workers:
                    worker.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.gather(*workers, return_exceptions=True)
                self._pending += applied.total()
                self._sessions.update(applied)  # still journalled: held again, in order
                raise
            await asyncio.to_thread(write_snapshot, self._directory, generation, [])
            await asyncio.to_thread(self._log.drop_generations, generation)
            self._base = generation
            return applied.total()

    def _consumed(self, session_id: str, count: int) -> None:
        self._pending -= count
        self._sessions[session_id] -= count
        if self._sessions[session_id] <= 0:
            del self._sessions[session_id]  # nothing journalled left: new writes go through
            waiter = self._waiters.pop(session_id, None)
            if waiter is not None:
                waiter.set()

    def _read(self, count: int) -> list[bytes]:
        return list(itertools.islice(self._log.replay(after_generation=self._base), count))

    async def aclose(self) -> None:
        await self._log.aclose()
        self._lock.release()


def _load(directory: Path, fsync: bool) -> tuple[RecordLog, int, Counter[str]]:
    log = RecordLog.open(directory, fsync=fsync)
    try:
        snapshot = read_latest_snapshot(directory)
        base = snapshot[0] if snapshot is not None else -1
        sessions = Counter(
            _event(path, offset, payload).session_id
            for path, offset, payload in log.replay_located(after_generation=base)
        )
    except BaseException:
        log.close_now()
        raise
    return log, base, sessions


def _event(path: Path, offset: int, payload: bytes) -> Event:
    """The journalled event; a record that is not one stops the start, saying where."""
    try:
        return event_from_dict(json.loads(payload))
    except (KeyError, ValueError, TypeError, AttributeError, IndexError) as exc:
        problem = f"the field {exc} is missing" if isinstance(exc, KeyError) else repr(exc)
        raise CorruptLogError(
            f"the outbox record in {path} at byte offset {offset} has a valid checksum but is "
            f"not an event ({problem}); refusing to start without it: restore the file from a "
            f"backup, or cut it there (`truncate -s {offset} {path}`) to drop it and every "
            "later queued event (none of them reached Neo4j)"
        ) from None
