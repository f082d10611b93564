"""Outbox replay in batches: consecutive journalled events of one session in one transaction.

Replaying one event per transaction costs a transaction (a session lock, a commit, a feed entry)
per event; a batch pays them once. The use cases open their own transaction for each event, so
each event of a batch runs on ``_BatchStore``: the store whose ``transaction()`` is the batch's
open transaction (not committed by the event). When a batch cannot be applied whole — an event
is rejected (``DomainError``) or fails, or the store asks for a retry (a transient conflict) —
it is rolled back and its events are applied one transaction each, as before: an event rejected
or failing alone is dropped (logged whole) and the others still count.

A batch's transaction takes the events in order until ``BATCH_SECONDS`` are spent (at least
one), commits, and the rest go in the next: the session's lock is held about that long at a
time, so a writer of the same session in another replica (replaying its own journal of that
session, say) never waits for a whole batch on a slow server — long enough to run out of
time and stop its replay.
"""

from __future__ import annotations

import asyncio
import json
import logging
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar

from gateway.stores.forwarding import ForwardedReads
from resolvers.cleanup import (
    Cleanups,
    apply_after_cleanups,
    artifacts_named_by,
    project_artifacts_of,
)
from resolvers.errors import DomainError, StoreUnavailableError
from resolvers.events import event_to_dict
from resolvers.store import CleanupLedger, SessionCleanups

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
    from datetime import datetime

    from resolvers.events import Event
    from resolvers.store import GraphStore, GraphTransaction

logger = logging.getLogger(__name__)

T = TypeVar("T")

BATCH_SECONDS: Final = 1.0
"""How long one transaction of a batch takes further events (it holds the session's lock)."""


class _BatchInterruptedError(Exception):
    """An event of the batch needs a transaction of its own (a retry after a conflict)."""


class _BatchStore(ForwardedReads):
    """``store`` for one event of a batch: its transaction is the batch's open one."""

    def __init__(self, store: GraphStore, tx: GraphTransaction) -> None:
        super().__init__(tx)
        self._tx = tx
        self._failed = False
        self.backend = store.backend
        self.ping = store.ping
        self.count_nodes = store.count_nodes
        self.aclose = store.aclose

    @asynccontextmanager
    async def transaction(self, session_id: str | None = None) -> AsyncIterator[GraphTransaction]:
        if self._failed:  # the batch's transaction is in doubt: never run on it again
            raise _BatchInterruptedError
        try:
            yield self._tx
        except BaseException:
            self._failed = True
            raise

    async def write(self, session_id: str, work: Callable[[GraphTransaction], Awaitable[T]]) -> T:
        async with self.transaction(session_id) as tx:
            return await work(tx)


async def apply_batch(store: GraphStore, events: Sequence[Event]) -> list[Dropped]:
    """Apply consecutive events of one session, in as few transactions as ``BATCH_SECONDS``
    allow; the events dropped (``apply_one``).

    ``StoreUnavailableError`` (other than a conflict worth a retry) propagates: the events stay
    journalled. An event rejected or failing alone is logged and dropped: it was validated
    before it was queued, so a retry cannot fix it."""
    start = 0
    while len(events) - start > 1:
        applied = await _apply_some(store, events[start:])
        if applied == 0:
            break  # rolled back: one transaction per event below
        start += applied
    dropped = [await apply_one(store, event) for event in events[start:]]
    return [one for one in dropped if one is not None]


async def _apply_some(store: GraphStore, events: Sequence[Event]) -> int:
    """Apply the first of ``events`` in one transaction, as many as ``BATCH_SECONDS`` allow
    (at least one); how many, or 0 when it was rolled back (a rejected event, a conflict)."""
    try:
        taken = await store.write(events[0].session_id, lambda tx: _take(store, tx, events))
    except StoreUnavailableError as exc:
        if not exc.transient:
            raise
    except Exception:  # rolled back: each event alone below, where one that fails is dropped
        pass
    else:
        taken.log()
        return taken.count
    return 0


@dataclass(frozen=True, slots=True)
class _Taken:
    """What one transaction took of a batch: how many events; those of them it left out, as
    their session was cleaned up after they were received; and the Artifacts it removed again,
    as a cleanup after them deleted them or their project (``CleanupLedger``)."""

    count: int
    left_out: list[Event]
    cleaned: SessionCleanups
    removed: list[tuple[str, datetime, datetime]]  # (artifact id, received at, cleaned at)

    def log(self) -> None:
        for event in self.left_out:
            logger.warning(
                "left out a queued %s event of session %s received at %s: the session was "
                "cleaned up at %s, which removed what it wrote%s",
                event.kind,
                event.session_id,
                event.received_at.isoformat(),
                self.cleaned.at.isoformat() if self.cleaned.at else "?",
                ""
                if self.cleaned.emptied and event.received_at <= self.cleaned.emptied
                else " (its Artifacts are kept, soft-marked, as the cleanup keeps them)",
            )
        for artifact, received, at in self.removed:
            logger.warning(
                "left out %s of a queued event received at %s: a cleanup at %s deleted it "
                "or its project",
                artifact,
                received.isoformat(),
                at.isoformat(),
            )


async def _take(store: GraphStore, tx: GraphTransaction, events: Sequence[Event]) -> _Taken:
    """Apply ``events`` (of one session) in order on ``tx``, until ``BATCH_SECONDS`` are spent
    (at least one), each as if before the cleanups made since it was received
    (``resolvers.cleanup.apply_after_cleanups``), read here under their locks."""
    loop = asyncio.get_running_loop()
    batch = _BatchStore(store, tx)  # a fresh one per run: the store may retry
    cleanups = await _cleanups(tx, events)
    left_out: list[Event] = []
    removed: list[tuple[str, datetime, datetime]] = []
    count = 0
    until = loop.time() + BATCH_SECONDS
    for event in events:
        gone = await apply_after_cleanups(batch, tx, event, cleanups)
        if gone is None:
            left_out.append(event)
        else:
            removed += [(artifact, event.received_at, at) for artifact, at in gone.items()]
        count += 1
        if loop.time() >= until:
            break
    return _Taken(count, left_out, cleanups.session, removed)


async def _cleanups(tx: GraphTransaction, events: Sequence[Event]) -> Cleanups:
    """The cleanups of what ``events`` (of one session) name, read under their locks: the
    session's; the projects' of the Artifacts named, those the events give them and those they
    are stored in; then the Artifacts' tombstones. A project cleanup locks its project before
    it deletes, so one that would delete a named Artifact either committed before these reads
    (its tombstones are seen) or waits for this transaction (and deletes what it wrote)."""
    if not isinstance(tx, CleanupLedger):
        return Cleanups()
    projects = {project for event in events for project in project_artifacts_of(event).values()}
    artifacts = sorted(set().union(*(artifacts_named_by(event) for event in events)))
    for node in await tx.get_nodes(artifacts) if artifacts else []:
        stored = node.get("project_id") if node is not None else None
        if isinstance(stored, str) and stored:
            projects.add(stored)
    return Cleanups(
        await tx.cleaned_at(events[0].session_id),
        await tx.projects_cleaned_at(sorted(projects)) if projects else {},
        await tx.artifacts_cleaned_at(artifacts) if artifacts else {},
    )


@dataclass(frozen=True, slots=True)
class Dropped:
    """An event refused or failing when applied alone, and why."""

    event: Event
    reason: str


async def apply_one(store: GraphStore, event: Event) -> Dropped | None:
    """Apply ``event`` in its own transaction; ``Dropped`` when it was refused or failed (it
    is logged whole), ``None`` when it was applied."""
    try:
        taken = await store.write(event.session_id, lambda tx: _take(store, tx, [event]))
    except StoreUnavailableError:
        raise
    except Exception as exc:
        # Refused (a domain rule) or failing (anything else) now, it would be at every replay,
        # and every event behind it would wait: it is dropped, logged whole to be sent again.
        if isinstance(exc, DomainError):
            reason, trace = exc.message, None
        else:
            reason, trace = f"{type(exc).__name__}: {exc}", exc
        logger.error(
            "dropping a queued %s event of session %s rejected on replay: %s; the event: %s",
            event.kind,
            event.session_id,
            reason,
            json.dumps(event_to_dict(event), ensure_ascii=False),
            exc_info=trace,
        )
        return Dropped(event, reason)
    taken.log()
    return None
