"""The per-session write queue of ``Neo4jStore`` (``_SessionGate``): writers of one session go
one at a time, in arrival order; a writer gives up only when the queue stops moving, never
because it is long."""

from __future__ import annotations

import asyncio

import pytest

from gateway.stores.neo4j.store import _SessionGate
from resolvers.errors import StoreUnavailableError

BOUND = 0.5  # seconds a writer waits without any writer ahead of it finishing
HOLD = BOUND / 5  # each writer's turn: the queue moves well within the bound


async def test_a_long_queue_that_keeps_moving_never_times_out() -> None:
    gate = _SessionGate()
    order: list[int] = []

    async def writer(index: int) -> None:
        async with gate.hold("s1", BOUND):
            order.append(index)
            await asyncio.sleep(HOLD)

    # The last writer waits 3 bounds in all, but never one bound without progress.
    await asyncio.gather(*(writer(index) for index in range(16)))

    assert order == list(range(16))


async def test_a_writer_behind_a_stuck_one_gives_up_after_the_bound() -> None:
    gate = _SessionGate()
    release = asyncio.Event()
    entered = asyncio.Event()

    async def stuck() -> None:
        async with gate.hold("s1", BOUND):
            entered.set()
            await release.wait()

    holder = asyncio.create_task(stuck())
    await entered.wait()
    with pytest.raises(StoreUnavailableError, match="no progress"):
        async with gate.hold("s1", BOUND):
            pass
    release.set()
    await holder

    async with asyncio.timeout(BOUND), gate.hold("s1", BOUND):  # the lock was not kept
        pass


async def test_a_cancelled_waiter_leaves_the_queue_usable() -> None:
    gate = _SessionGate()
    release = asyncio.Event()
    entered = asyncio.Event()

    async def holding() -> None:
        async with gate.hold("s1", BOUND):
            entered.set()
            await release.wait()

    async def waiting() -> None:
        async with gate.hold("s1", BOUND):
            pass

    holder = asyncio.create_task(holding())
    await entered.wait()
    waiter = asyncio.create_task(waiting())
    await asyncio.sleep(0)
    waiter.cancel()
    release.set()
    await holder

    with pytest.raises(asyncio.CancelledError):
        await waiter
    async with asyncio.timeout(BOUND), gate.hold("s1", BOUND):
        pass
