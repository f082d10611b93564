"""Live graph events: every committed node and edge change, fanned out to subscribers.

Writes reach the bus through ``gateway.publishing.PublishingStore``, which wraps each store the
``Runtime`` opens: a transaction takes a *ticket* from the bus while it holds the store's write
serialisation for its session (the file store's write lock, Neo4j's session lock) and settles it
after the commit with what it changed (nothing, when it rolled back). Tickets of one session are
released in the order they were taken, which is commit order, however the committing tasks are
scheduled afterwards.

Backpressure: each subscription has a bounded queue (``capacity`` events). A subscriber that
falls that far behind is dropped: its queue is emptied and its stream ends with
``SubscriberLaggedError`` (clients refetch the session and subscribe again). Memory per
subscriber is therefore bounded, and a slow client never slows down writers or other clients.

``seq`` numbers a session's events from 1 while anyone in this process is subscribed to it; the
counter is forgotten when the last subscriber leaves. It orders events and reveals gaps; it is
not a durable offset (there is no replay of past events). This bus only sees the writes of its
own process: see ``docs/live-updates.md`` for several replicas.
"""

from __future__ import annotations

import asyncio
import dataclasses
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from resolvers.records import EdgeRecord, NodeRecord

DEFAULT_CAPACITY = 1024


@dataclass(frozen=True, slots=True)
class GraphChange:
    """One node or edge written to (``removed``: deleted from) a session."""

    session_id: str
    node: NodeRecord | None = None
    edge: EdgeRecord | None = None
    removed: bool = False
    seq: int = 0


class SubscriberLaggedError(Exception):
    """The subscriber fell ``capacity`` events behind and was dropped."""

    def __init__(self, session_id: str, capacity: int) -> None:
        super().__init__(
            f"This subscription fell more than {capacity} events behind session {session_id} "
            "and was dropped; fetch the session again, then subscribe again."
        )
        self.session_id = session_id
        self.capacity = capacity


class Subscription:
    """One subscriber's bounded queue; iterate it to receive the session's changes."""

    def __init__(self, session_id: str, capacity: int) -> None:
        self.session_id = session_id
        self.capacity = capacity
        # One extra slot, so the lag error always fits.
        self._queue: asyncio.Queue[GraphChange | SubscriberLaggedError] = asyncio.Queue(
            capacity + 1
        )
        self.lagged = False

    @property
    def pending(self) -> int:
        """Changes queued and not yet received."""
        return self._queue.qsize()

    def offer(self, change: GraphChange) -> bool:
        """Queue ``change``; ``False`` (and the subscription is dropped) when it is full."""
        if self.pending >= self.capacity:
            self._drop()
            return False
        self._queue.put_nowait(change)
        return True

    def _drop(self) -> None:
        self.lagged = True
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queue.put_nowait(SubscriberLaggedError(self.session_id, self.capacity))

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> GraphChange:
        change = await self._queue.get()
        if isinstance(change, SubscriberLaggedError):
            raise change
        return change


@dataclass(slots=True)
class _Tickets:
    """Commit-order release of one session's transactions."""

    issued: int = 0
    released: int = 0
    settled: dict[int, Sequence[GraphChange]] = dataclasses.field(default_factory=dict)


class EventBus:
    """Orders committed changes per session and hands them to that session's subscribers.

    Used from the event loop only (no locking): ``reserve``/``settle`` by the publishing
    store, ``subscribe`` by the GraphQL subscription.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._subscribers: dict[str, set[Subscription]] = {}
        self._seq: dict[str, int] = {}
        self._tickets: dict[str | None, _Tickets] = {}
        self.published = 0
        self.dropped = 0

    @property
    def subscriber_count(self) -> int:
        return sum(len(subscribers) for subscribers in self._subscribers.values())

    def watching(self) -> bool:
        """Whether anyone subscribes to anything (cheap; lets writers skip extra reads)."""
        return bool(self._subscribers)

    @contextmanager
    def subscribe(self, session_id: str) -> Iterator[Subscription]:
        """A subscription to ``session_id`` for the duration of the block."""
        subscription = Subscription(session_id, self.capacity)
        self._subscribers.setdefault(session_id, set()).add(subscription)
        try:
            yield subscription
        finally:
            self._leave(subscription)

    def _leave(self, subscription: Subscription) -> None:
        subscribers = self._subscribers.get(subscription.session_id)
        if subscribers is None:
            return
        subscribers.discard(subscription)
        if not subscribers:
            del self._subscribers[subscription.session_id]
            self._seq.pop(subscription.session_id, None)

    def reserve(self, scope: str | None) -> int:
        """A ticket for a transaction of ``scope`` (a session id, or ``None``), taken while the
        transaction holds its session's write serialisation."""
        tickets = self._tickets.setdefault(scope, _Tickets())
        tickets.issued += 1
        return tickets.issued

    def settle(self, scope: str | None, ticket: int, changes: Sequence[GraphChange]) -> None:
        """Report what the transaction with ``ticket`` committed (empty when it did not);
        changes are published once every earlier ticket of ``scope`` is settled."""
        tickets = self._tickets[scope]
        tickets.settled[ticket] = changes
        while tickets.released + 1 in tickets.settled:
            tickets.released += 1
            self._publish(tickets.settled.pop(tickets.released))
        if tickets.released == tickets.issued:
            del self._tickets[scope]

    def _publish(self, changes: Sequence[GraphChange]) -> None:
        for change in changes:
            subscribers = self._subscribers.get(change.session_id)
            if not subscribers:
                continue
            seq = self._seq.get(change.session_id, 0) + 1
            self._seq[change.session_id] = seq
            numbered = dataclasses.replace(change, seq=seq)
            for subscription in list(subscribers):
                if subscription.offer(numbered):
                    self.published += 1
                else:
                    self.dropped += 1
                    self._leave(subscription)
