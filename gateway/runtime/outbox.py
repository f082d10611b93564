"""The outbox: observe events journalled while the selected Neo4j is unreachable.

``<dataDir>/outbox`` holds a checksummed record log (``gateway.stores.file.log``) of events,
each durable before the mutation answers ``queued: true``. ``drain`` applies them and then
marks them consumed with an empty snapshot of the generation it drained, so a restart resumes
after it. Meanwhile it notes each batch it applied in ``<dataDir>/outbox/applied``, so a drain
interrupted half-way (a lost store, a killed process) resumes after them: applied again, they
would undo what was done since (a cleanup of their session). Applying an event is idempotent
otherwise, so an event whose note was lost (a crash between the two) is simply applied again.

A journalled event holds its session (whose order it keeps) and every node it claims as its
session's own (``resolvers.observe.claimed_ids``: the first session to write one owns it).
``drain`` replays events that share a hold in the order they were journalled, in batches of
consecutive events of one session (one transaction each, ``gateway.runtime.replay``), and
events that share none side by side: a session's replay never races another session's for a
node both name, so the one acknowledged first owns it. A hold is released (``holds``) as soon
as the last journalled event holding it is applied, so new writes go straight to the store
while other sessions still replay; while the store answers (``resume``, until ``pause``) a new
write that is held can wait for that moment (``released``) instead of being journalled behind
the replay.

An event the store refuses or fails on when replayed alone was acknowledged (``queued: true``)
and can never be applied: ``refuse`` keeps it in ``<dataDir>/outbox/refused.jsonl`` (one JSON
object a line: when, why, the event as journalled), durably, and ``refused`` counts them, so
an operator sees it and can send it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
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
from resolvers.observe import claimed_ids
from resolvers.records import utc_now

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
    from pathlib import Path

Hold = tuple[str, str]
"""``("session", id)`` or ``("node", id)``: what a journalled event keeps in order."""

logger = logging.getLogger(__name__)

REFUSED_FILE = "refused.jsonl"
APPLIED_FILE = "applied"  # lines "<base> <position> …": events of the drained journal applied
# Groups of events replayed at once: events of different groups share no hold.
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
        pending: int,
        held: Counter[Hold],
        *,
        applied: set[int],
        fsync: bool,
        refused: int,
    ) -> None:
        self._directory = directory
        self._lock = lock
        self._log = log
        self._base = base
        self._pending = pending
        self._fsync = fsync
        self._refused = refused
        self._held = held  # journalled events per hold, until they are applied
        self._applied = applied  # positions (from ``_base``) of the events applied already
        self._draining = asyncio.Lock()
        self._replaying = False  # the store answers: holds are being released
        self._lost = False  # the store did not answer (``pause``), and not since (``resume``)
        self._waiters: dict[Hold, asyncio.Event] = {}  # set when the hold is released
        # Held while appending and while a drain counts and rotates: an append in flight at the
        # rotation would land in the drained generation uncounted and be dropped with it.
        self._appending = asyncio.Lock()

    @classmethod
    async def open(cls, directory: Path, *, fsync: bool = True) -> Outbox:
        lock = await asyncio.to_thread(DirectoryLock.acquire, directory)
        try:
            log, base, pending, held, applied = await asyncio.to_thread(_load, directory, fsync)
            refused = await asyncio.to_thread(_count_lines, directory / REFUSED_FILE)
        except BaseException:
            lock.release()
            raise
        return cls(
            directory, lock, log, base, pending, held, applied=applied, fsync=fsync, refused=refused
        )

    @property
    def pending(self) -> int:
        """Events journalled and not yet applied."""
        return self._pending

    @property
    def refused(self) -> int:
        """Journalled events dropped on replay, kept in ``refused.jsonl``."""
        return self._refused

    async def refuse(self, event: Event, reason: str) -> None:
        """Keep ``event``, dropped on replay for ``reason``, in ``refused.jsonl``; returns once
        it is durable. A file that cannot be written leaves the event in the log only (the
        replay logs every dropped event whole): the replay must go on."""
        line = {"refusedAt": utc_now().isoformat(), "reason": reason, "event": event_to_dict(event)}
        payload = json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            await asyncio.to_thread(
                _append_line, self._directory / REFUSED_FILE, payload.encode(), self._fsync
            )
        except OSError as exc:
            logger.error("the dropped %s event is in the log only: %s", event.kind, exc)
            return
        self._refused += 1

    def holds(self, event: Event) -> bool:
        """Whether an event journalled and not yet applied holds the session of ``event`` or a
        node it claims: ``event`` must be applied after it, to keep the session's order and
        the node's first owner."""
        return bool(self._held) and self._held_by(_holds(event)) is not None

    @property
    def lost(self) -> bool:
        """Whether the store was found not answering (``pause``) and not answering since."""
        return self._lost

    def resume(self) -> None:
        """The store answers again: the journal is being replayed, so a new write that is
        held may wait for it (``released``)."""
        self._replaying = True
        self._lost = False

    def pause(self) -> None:
        """The store does not answer: nothing is released until ``resume``, so no write waits,
        and no write is sent to it (``released``): each would wait for it to time out."""
        self._replaying = False
        self._lost = True
        for waiter in self._waiters.values():
            waiter.set()
        self._waiters.clear()

    async def released(self, event: Event, seconds: float) -> bool:
        """Whether ``event`` may be sent to the store now: the store was not found unreachable
        since it last answered (``lost``), and nothing journalled holds ``event``
        (``holds``) — waiting up to ``seconds`` for the replay to apply what does, only while
        the store answers (``resume``): a write that waits instead of being journalled is
        acknowledged as soon as the journal ahead of it is applied, and adds nothing to
        replay."""
        if not self._held:  # the common case, on every write: nothing is journalled
            return not self._lost
        return await self._released(_holds(event), seconds)

    async def settled(self, session_ids: Sequence[str] | None, seconds: float) -> bool:
        """Whether no journalled event of ``session_ids`` (``None``: of any session) is left,
        waiting up to ``seconds`` for the replay to apply them as ``released`` does: a write
        that deletes what they write (a cleanup) must come after them, or their replay would
        write it again."""
        if session_ids is None:
            holds = [hold for hold in self._held if hold[0] == "session"]
        else:
            holds = [("session", session_id) for session_id in session_ids]
        return self._held_by(holds) is None or await self._released(holds, seconds)

    async def _released(self, holds: Sequence[Hold], seconds: float) -> bool:
        if self._lost:
            return False
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                while self._replaying and (hold := self._held_by(holds)) is not None:
                    await self._waiters.setdefault(hold, asyncio.Event()).wait()
        return not self._lost and self._held_by(holds) is None

    def _held_by(self, holds: Iterable[Hold]) -> Hold | None:
        return next((hold for hold in holds if self._held[hold] > 0), None)

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
            self._held.update(_holds(event))

    async def drain(
        self,
        apply: Callable[[Sequence[Event]], Awaitable[object]],
        *,
        sessions: int = REPLAY_SESSIONS,
        batch: int = REPLAY_BATCH,
    ) -> int:
        """Apply every event journalled so far — those that share a hold in the order they
        were journalled, in calls of up to ``batch`` consecutive events of one session; up to
        ``sessions`` groups that share none at once — and return how many were applied.

        Each call's events are noted in ``applied`` (durably) once it returns: a drain that
        stops or a process that dies half-way never applies them again (a cleanup made
        meanwhile would be undone). An exception from ``apply`` stops the drain (the other
        groups' events in flight are cancelled) and propagates; the events not applied stay
        journalled and hold what they held."""
        async with self._draining:
            async with self._appending:
                count = self._pending
                if count == 0:
                    return 0
                generation = await self._log.rotate()
                total = count + len(self._applied)
            payloads = await asyncio.to_thread(self._read, total)
            positions: dict[int, int] = {}  # id() of each event to apply: its position
            events: list[Event] = []
            for position, payload in enumerate(payloads):
                if position not in self._applied:
                    event = event_from_dict(json.loads(payload))
                    positions[id(event)] = position
                    events.append(event)
            applied = 0

            async def replay(work: Iterator[list[Event]]) -> None:
                nonlocal applied
                for group in work:  # shared: each worker takes the next group
                    for chunk in _runs(group, batch):
                        await apply(chunk)
                        await self._note_applied([positions[id(event)] for event in chunk])
                        self._consumed(chunk)
                        applied += len(chunk)

            groups = _groups(events)
            work = iter(groups)
            workers = [
                asyncio.ensure_future(replay(work)) for _ in range(min(sessions, len(groups)))
            ]
            try:
                await asyncio.gather(*workers)
            except BaseException:
                for worker in workers:
                    worker.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.gather(*workers, return_exceptions=True)
                raise
            await asyncio.to_thread(write_snapshot, self._directory, generation, [])
            await asyncio.to_thread(self._log.drop_generations, generation)
            self._base = generation
            self._applied.clear()  # what it noted counts from the old base: never read again
            await asyncio.to_thread(_forget_applied, self._directory / APPLIED_FILE)
            return applied

    async def _note_applied(self, positions: Sequence[int]) -> None:
        """Note, durably, that the events at ``positions`` (counted from ``_base``) are
        applied. A note that cannot be written only means they are applied again, as any
        journalled event may be."""
        line = f"{self._base} {' '.join(map(str, positions))}\n".encode()
        try:
            await asyncio.to_thread(_append_line, self._directory / APPLIED_FILE, line, self._fsync)
        except OSError as exc:
            logger.warning("replayed events not noted as applied (they may be again): %s", exc)
        self._applied.update(positions)

    def _consumed(self, events: Sequence[Event]) -> None:
        for event in events:
            self._pending -= 1
            for hold in _holds(event):
                self._held[hold] -= 1
                if self._held[hold] <= 0:
                    del self._held[hold]  # nothing journalled holds it: new writes go through
                    waiter = self._waiters.pop(hold, None)
                    if waiter is not None:
                        waiter.set()

    def _read(self, count: int) -> list[bytes]:
        return list(itertools.islice(self._log.replay(after_generation=self._base), count))

    async def aclose(self) -> None:
        await self._log.aclose()
        self._lock.release()


def _load(directory: Path, fsync: bool) -> tuple[RecordLog, int, int, Counter[Hold], set[int]]:
    log = RecordLog.open(directory, fsync=fsync)
    try:
        snapshot = read_latest_snapshot(directory)
        base = snapshot[0] if snapshot is not None else -1
        applied = _read_applied(directory / APPLIED_FILE, base)
        pending, held = 0, Counter[Hold]()
        located = log.replay_located(after_generation=base)
        for position, (path, offset, payload) in enumerate(located):
            if position not in applied:
                pending += 1
                held.update(_holds(_event(path, offset, payload)))
    except BaseException:
        log.close_now()
        raise
    return log, base, pending, held, applied


def _read_applied(path: Path, base: int) -> set[int]:
    """The positions ``path`` notes as applied after generation ``base``; a line that is not
    a whole note (a torn last write), or of another base, notes nothing."""
    applied: set[int] = set()
    damaged = 0
    try:
        with path.open("rb") as file:
            for line in file:
                words = line.split()
                whole = line.endswith(b"\n") and all(w.lstrip(b"-").isdigit() for w in words)
                if whole and words and int(words[0]) == base:
                    applied.update(int(word) for word in words[1:])
                damaged += not whole and line.endswith(b"\n")
    except FileNotFoundError:
        pass
    if damaged:
        logger.warning(
            "%d damaged lines in %s: the events they noted as applied are applied again",
            damaged,
            path,
        )
    return applied


def _forget_applied(path: Path) -> None:
    path.unlink(missing_ok=True)


def _count_lines(path: Path) -> int:
    """The lines of ``path``: 0 when it does not exist, or cannot be read (said in the log: it
    only keeps what the log has too, so it never stops a start)."""
    try:
        with path.open("rb") as file:
            return sum(1 for _ in file)
    except FileNotFoundError:
        return 0
    except OSError as exc:
        logger.warning("cannot count the refused events in %s: %s", path, exc)
        return 0


def _append_line(path: Path, line: bytes, fsync: bool) -> None:
    with path.open("ab") as file:
        file.write(line)
        file.flush()
        if fsync:
            os.fsync(file.fileno())


def _holds(event: Event) -> tuple[Hold, ...]:
    return (("session", event.session_id), *(("node", key) for key in claimed_ids(event)))


def _groups(events: Sequence[Event]) -> list[list[Event]]:
    """``events`` (in journal order) split into groups, each in journal order, such that no
    two groups share a hold; a group comes at the place of its first event."""
    parent: list[int] = []  # a union-find of the groups, by their first event's number

    def root(group: int) -> int:
        while parent[group] != group:
            parent[group] = parent[parent[group]]
            group = parent[group]
        return group

    last: dict[Hold, int] = {}  # each hold's group (any member; ``root`` finds the group)
    member: list[int] = []
    for event in events:
        holds = _holds(event)
        joined = {root(last[hold]) for hold in holds if hold in last}
        group = min(joined) if joined else len(parent)
        if not joined:
            parent.append(group)
        for other in joined:
            parent[other] = group
        for hold in holds:
            last[hold] = group
        member.append(group)
    groups: dict[int, list[Event]] = {}
    for event, group in zip(events, member, strict=True):
        groups.setdefault(root(group), []).append(event)
    return list(groups.values())


def _runs(group: Sequence[Event], batch: int) -> Iterator[list[Event]]:
    """Runs of up to ``batch`` consecutive events of one session, in order."""
    run: list[Event] = []
    for event in group:
        if run and (event.session_id != run[0].session_id or len(run) == batch):
            yield run
            run = []
        run.append(event)
    if run:
        yield run


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
