"""Live graph events: every committed node and edge change, fanned out to subscribers.

Writes reach the bus through ``gateway.live.publishing.PublishingStore``, which wraps each store the
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
not a durable offset (there is no replay of past events).

A store with a change feed (Neo4j: ``gateway.live.feed``) numbers each commit of a session in the
database; its commits reach the bus with that number, from this process's own transactions and
from the feed tailer (the commits of every replica), and the bus publishes them strictly in
feed order, each once: an own commit that overtakes a commit of another replica waits for the
tailer to bring it (``behind`` wakes the tailer), and the tailer skips what an own commit already
delivered. A session's feed cursor exists while it has subscribers here; it starts at the
session's head (read by the tailer while no own transaction of the session runs) or just before
the first own commit, whichever comes first.
"""

from __future__ import annotations

import asyncio
import dataclasses
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

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

    def lag(self) -> None:
        """End the stream with ``SubscriberLaggedError`` (events were missed)."""
        self._drop()

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
    settled: dict[int, tuple[Sequence[GraphChange], Mapping[str, int] | None]] = dataclasses.field(
        default_factory=dict
    )


@dataclass(slots=True)
class _Feed:
    """Feed-order release of one watched session: ``cursor`` is the last feed number published
    (``None`` until known), ``waiting`` holds the commits that arrived ahead of their turn."""

    cursor: int | None = None
    waiting: dict[int, Sequence[GraphChange]] = dataclasses.field(default_factory=dict)


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
        self._feeds: dict[str, _Feed] = {}
        self._watchers: list[Callable[[], None]] = []
        self.behind = asyncio.Event()
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
        self._feeds.setdefault(session_id, _Feed())
        for watcher in self._watchers:
            watcher()
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
            self._feeds.pop(subscription.session_id, None)

    def add_watcher(self, watcher: Callable[[], None]) -> None:
        """Call ``watcher`` whenever someone subscribes (a feed tailer starts polling)."""
        self._watchers.append(watcher)

    def remove_watcher(self, watcher: Callable[[], None]) -> None:
        self._watchers.remove(watcher)

    def feed_cursors(self) -> dict[str, int | None]:
        """The feed cursor of every watched session (``None``: not known yet)."""
        return {session_id: feed.cursor for session_id, feed in self._feeds.items()}

    def start_feed(self, session_id: str, head: int) -> None:
        """Start a watched session's cursor at its feed ``head`` unless it is known already.

        Not while an own transaction that may write the session is running: the head may
        already count its commit, which would then be skipped; its own number starts the cursor
        instead (or the next poll's head)."""
        feed = self._feeds.get(session_id)
        running = session_id in self._tickets or None in self._tickets
        if feed is not None and feed.cursor is None and not running:
            feed.cursor = head
            self._release(feed)

    def deliver(self, session_id: str, number: int, changes: Sequence[GraphChange]) -> None:
        """Feed entry ``number`` of a session: published after every earlier one, and once."""
        feed = self._feeds.get(session_id)
        if feed is None:
            return
        if feed.cursor is None:
            feed.cursor = number - 1
        if number > feed.cursor:
            feed.waiting[number] = changes
        self._release(feed)

    def lose(self, session_id: str) -> None:
        """Entries of the session's feed are gone (trimmed): its subscribers missed events, so
        they are dropped as lagging."""
        for subscription in list(self._subscribers.get(session_id, ())):
            subscription.lag()
            self.dropped += 1
            self._leave(subscription)

    def _release(self, feed: _Feed) -> None:
        assert feed.cursor is not None
        for number in [number for number in feed.waiting if number <= feed.cursor]:
            del feed.waiting[number]
        while feed.cursor + 1 in feed.waiting:
            feed.cursor += 1
            self._publish(feed.waiting.pop(feed.cursor))
        if feed.waiting:
            self.behind.set()

    def reserve(self, scope: str | None) -> int:
        """A ticket for a transaction of ``scope`` (a session id, or ``None``), taken while the
        transaction holds its session's write serialisation."""
        tickets = self._tickets.setdefault(scope, _Tickets())
        tickets.issued += 1
        return tickets.issued

    def settle(
        self,
        scope: str | None,
        ticket: int,
        changes: Sequence[GraphChange],
        numbers: Mapping[str, int] | None = None,
    ) -> None:
        """Report what the transaction with ``ticket`` committed (empty when it did not);
        changes are published once every earlier ticket of ``scope`` is settled. With
        ``numbers`` (the feed number of the commit per session), each session's changes are
        released in feed order instead (``deliver``)."""
        tickets = self._tickets[scope]
        tickets.settled[ticket] = (changes, numbers)
        while tickets.released + 1 in tickets.settled:
            tickets.released += 1
            released, numbered = tickets.settled.pop(tickets.released)
            if numbered is None:
                self._publish(released)
                continue
            for session_id, number in numbered.items():
                mine = [change for change in released if change.session_id == session_id]
                self.deliver(session_id, number, mine)
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
