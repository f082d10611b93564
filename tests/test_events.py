"""The event bus: commit-order release per session, bounded subscriber queues, numbering."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gateway.live.bus import EventBus, GraphChange, SubscriberLaggedError, Subscription
from resolvers.records import Label, NodeRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def change(session: str, key: str) -> GraphChange:
    node = NodeRecord(f"Code:{key}", Label.CODE, key, session, T0)
    return GraphChange(session, node=node)


async def keys(subscription: Subscription) -> list[tuple[str, int]]:
    """What is queued, without waiting: ``(node key, seq)`` pairs."""
    queued: list[tuple[str, int]] = []
    while subscription.pending:
        item = await anext(subscription)
        assert item.node is not None
        queued.append((item.node.key, item.seq))
    return queued


async def test_a_later_commit_waits_for_an_earlier_ticket_of_its_session() -> None:
    bus = EventBus()
    with bus.subscribe("s1") as subscription:
        first, second = bus.reserve("s1"), bus.reserve("s1")

        bus.settle("s1", second, [change("s1", "b")])
        held = await keys(subscription)
        bus.settle("s1", first, [change("s1", "a")])

        assert held == []
        assert await keys(subscription) == [("a", 1), ("b", 2)]


async def test_a_rolled_back_transaction_releases_the_ones_after_it() -> None:
    bus = EventBus()
    with bus.subscribe("s1") as subscription:
        failed, committed = bus.reserve("s1"), bus.reserve("s1")

        bus.settle("s1", committed, [change("s1", "b")])
        bus.settle("s1", failed, [])

        assert await keys(subscription) == [("b", 1)]


async def test_sessions_are_ordered_independently() -> None:
    bus = EventBus()
    with bus.subscribe("s2") as subscription:
        bus.reserve("s1")  # an s1 transaction still running
        ticket = bus.reserve("s2")

        bus.settle("s2", ticket, [change("s2", "x")])

        assert await keys(subscription) == [("x", 1)]


async def test_a_subscriber_only_receives_its_session() -> None:
    bus = EventBus()
    with bus.subscribe("s1") as mine, bus.subscribe("s2") as other:
        ticket = bus.reserve(None)

        bus.settle(None, ticket, [change("s1", "a"), change("s2", "b"), change("s1", "c")])

        assert await keys(mine) == [("a", 1), ("c", 2)]
        assert await keys(other) == [("b", 1)]


async def test_every_subscriber_of_a_session_gets_every_change() -> None:
    bus = EventBus()
    with bus.subscribe("s1") as one, bus.subscribe("s1") as two:
        ticket = bus.reserve("s1")

        bus.settle("s1", ticket, [change("s1", "a"), change("s1", "b")])

        assert (await keys(one), await keys(two)) == ([("a", 1), ("b", 2)], [("a", 1), ("b", 2)])


async def test_numbering_restarts_once_nobody_subscribes() -> None:
    bus = EventBus()
    with bus.subscribe("s1"):
        bus.settle("s1", bus.reserve("s1"), [change("s1", "a")])

    with bus.subscribe("s1") as again:
        bus.settle("s1", bus.reserve("s1"), [change("s1", "b")])

        assert await keys(again) == [("b", 1)]


async def test_a_slow_subscriber_is_dropped_with_a_bounded_queue() -> None:
    bus = EventBus(capacity=2)
    with bus.subscribe("s1") as slow, bus.subscribe("s1") as fast:
        bus.settle("s1", bus.reserve("s1"), [change("s1", "a"), change("s1", "b")])
        assert [(await anext(fast)).seq for _ in range(2)] == [1, 2]

        bus.settle("s1", bus.reserve("s1"), [change("s1", "c")])

        assert slow.pending == 1  # the queued changes were freed; only the error is left
        with pytest.raises(SubscriberLaggedError):
            await anext(slow)
        assert (await anext(fast)).seq == 3
        assert (bus.subscriber_count, bus.dropped, bus.published) == (1, 1, 5)


async def test_a_subscription_yields_changes_in_order() -> None:
    bus = EventBus()
    with bus.subscribe("s1") as subscription:
        bus.settle("s1", bus.reserve("s1"), [change("s1", "a"), change("s1", "b")])

        received = [await anext(subscription), await anext(subscription)]

        assert [(c.node.key if c.node else None, c.seq) for c in received] == [("a", 1), ("b", 2)]


async def test_leaving_forgets_the_session() -> None:
    bus = EventBus()

    with bus.subscribe("s1"):
        watching = bus.watching()

    assert watching is True
    assert bus.watching() is False
    assert bus.subscriber_count == 0


async def test_feed_entries_are_published_in_feed_order_once() -> None:
    bus = EventBus()
    with bus.subscribe("s1") as subscription:
        bus.start_feed("s1", 4)

        bus.deliver("s1", 6, [change("s1", "f")])  # another replica's 5 is not here yet
        held = await keys(subscription)
        behind = bus.behind.is_set()
        bus.deliver("s1", 5, [change("s1", "e")])
        bus.deliver("s1", 6, [change("s1", "f")])  # the tailer brings it again
        bus.deliver("s1", 4, [change("s1", "d")])  # before the cursor started

        assert (held, behind) == ([], True)
        assert await keys(subscription) == [("e", 1), ("f", 2)]


async def test_a_feed_cursor_starts_before_the_first_own_commit() -> None:
    bus = EventBus()
    with bus.subscribe("s1") as subscription:
        bus.settle("s1", bus.reserve("s1"), [change("s1", "a")], {"s1": 9})
        bus.start_feed("s1", 12)  # a head read that raced the commit is ignored
        bus.deliver("s1", 10, [change("s1", "b")])

        assert await keys(subscription) == [("a", 1), ("b", 2)]


async def test_a_head_read_during_an_own_transaction_does_not_start_the_cursor() -> None:
    bus = EventBus()
    with bus.subscribe("s1") as subscription:
        ticket = bus.reserve("s1")
        bus.start_feed("s1", 3)  # may already count the running transaction's commit

        bus.settle("s1", ticket, [change("s1", "a")], {"s1": 3})

        assert await keys(subscription) == [("a", 1)]


async def test_a_lost_feed_entry_drops_the_sessions_subscribers() -> None:
    bus = EventBus()
    with bus.subscribe("s1") as subscription:
        bus.start_feed("s1", 0)

        bus.lose("s1")

        with pytest.raises(SubscriberLaggedError):
            await anext(subscription)
        assert bus.feed_cursors() == {}
