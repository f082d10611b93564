"""The write queue of ``Neo4jStore`` (``gateway.stores.neo4j.queue``): one session's writes in
arrival order, one turn at a time; writes that wait share the next transaction; a waiter gives up
only when the queue stops moving, never because it is long."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from gateway.stores.neo4j.queue import Request, WriteQueue
from resolvers.errors import StoreUnavailableError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from resolvers.store import GraphTransaction

BOUND = 0.5  # seconds a request waits without any turn ending
HOLD = BOUND / 5  # each transaction's time: the queue moves well within the bound


class Transactions:
    """A ``commit`` that runs each batch's works in order after ``HOLD`` seconds, and
    remembers the batches (as the sessions and numbers of their writes)."""

    def __init__(self, hold: float = HOLD) -> None:
        self.hold = hold
        self.batches: list[list[tuple[str, int]]] = []
        self.running: set[str] = set()
        self.overlaps: list[str] = []
        self.release: asyncio.Event | None = None  # what every batch waits for
        self.held: dict[str, asyncio.Event] = {}  # what a batch of these sessions waits for
        self.started: asyncio.Queue[None] = asyncio.Queue()  # one item per batch begun

    async def commit(self, requests: Sequence[Request[Any]]) -> None:
        sessions = {request.session_id for request in requests}
        self.overlaps += sorted(sessions & self.running)
        self.running |= sessions
        try:
            self.batches.append([])
            batch = self.batches[-1]
            self.started.put_nowait(None)
            if self.release is not None:
                await self.release.wait()
            for session in sessions & self.held.keys():
                await self.held[session].wait()
            await asyncio.sleep(self.hold)
            for request in requests:
                assert request.work is not None
                number = await request.work(None)  # type: ignore[arg-type]
                batch.append((request.session_id, number))
                if not request.outcome.done():
                    request.outcome.set_result(number)
        finally:
            self.running -= sessions


def queue(transactions: Transactions, concurrency: int = 1, batch: int = 16) -> WriteQueue:
    return WriteQueue(transactions.commit, backend="neo4j", concurrency=concurrency, batch=batch)


def work(number: int, ran: list[int] | None = None) -> Any:
    async def run(tx: GraphTransaction) -> int:
        if ran is not None:
            ran.append(number)
        return number

    return run


async def test_a_long_queue_of_one_session_keeps_its_order_and_never_times_out() -> None:
    transactions = Transactions()
    writes = queue(transactions, concurrency=4, batch=3)

    # The last write waits several bounds in all, but never one bound without progress.
    results = await asyncio.gather(
        *(writes.write("s1", work(number), BOUND) for number in range(16))
    )

    assert results == list(range(16))
    assert [number for batch in transactions.batches for _, number in batch] == list(range(16))
    assert transactions.overlaps == []  # never two batches of one session at once
    assert len(transactions.batches) > 1


async def test_writes_that_wait_share_the_next_transaction() -> None:
    transactions = Transactions()
    writes = queue(transactions, concurrency=1)

    first = asyncio.create_task(writes.write("s0", work(0), BOUND))
    await asyncio.sleep(0)  # the first finds the queue idle and runs alone
    rest = [writes.write(f"s{n % 3 + 1}", work(n), BOUND) for n in range(1, 10)]
    await asyncio.gather(first, *rest)

    assert transactions.batches[0] == [("s0", 0)]
    assert sorted(transactions.batches[1]) == sorted((f"s{n % 3 + 1}", n) for n in range(1, 10))
    assert len(transactions.batches) == 2


async def test_a_batch_holds_at_most_its_size_and_other_sessions_pass_a_busy_one() -> None:
    transactions = Transactions()
    transactions.held["slow"] = asyncio.Event()
    writes = queue(transactions, concurrency=2, batch=2)

    slow = asyncio.create_task(writes.write("slow", work(0), BOUND))
    await asyncio.sleep(0)
    later = [
        asyncio.create_task(writes.write(session, work(n), BOUND))
        for n, session in enumerate(("slow", "a", "b", "c", "d"), start=1)
    ]
    for _ in range(4):  # all but the slow session's second write begin
        await transactions.started.get()
    transactions.held["slow"].set()
    await asyncio.gather(slow, *later)

    assert transactions.batches == [
        [("slow", 0)],
        [("a", 2)],  # the second transaction: the queue was idle but for "slow"'s write
        [("b", 3), ("c", 4)],
        [("d", 5)],
        [("slow", 1)],
    ]


async def test_a_writer_behind_a_stuck_turn_gives_up_after_the_bound() -> None:
    writes = queue(Transactions())
    release = asyncio.Event()
    entered = asyncio.Event()
    ran: list[int] = []

    async def stuck() -> None:
        async with writes.turn("s1", BOUND):
            entered.set()
            await release.wait()

    holder = asyncio.create_task(stuck())
    await entered.wait()
    with pytest.raises(StoreUnavailableError, match="no progress"):
        await writes.write("s1", work(1, ran), BOUND)
    release.set()
    await holder

    async with asyncio.timeout(BOUND):  # the turn was given back, the write never ran
        assert await writes.write("s1", work(2, ran), BOUND) == 2
    assert ran == [2]


async def test_a_turn_waits_for_the_writes_before_it_and_holds_off_those_after() -> None:
    writes = queue(Transactions(), concurrency=4)
    log: list[str] = []

    async def explicit() -> None:
        async with writes.turn("s1", BOUND):
            log.append("s1 turn begins")
            await asyncio.sleep(3 * HOLD)
            log.append("s1 turn ends")

    def logged(session: str, number: int) -> Any:
        async def run(tx: GraphTransaction) -> int:
            log.append(f"{session} write {number}")
            return number

        return writes.write(session, run, BOUND)

    tasks = [asyncio.create_task(logged("s1", 1))]
    await asyncio.sleep(0)
    tasks.append(asyncio.create_task(explicit()))
    await asyncio.sleep(0)
    tasks += [asyncio.create_task(logged("s1", 2)), asyncio.create_task(logged("s2", 3))]
    await asyncio.gather(*tasks)

    own = [entry for entry in log if entry.startswith("s1")]
    assert own == ["s1 write 1", "s1 turn begins", "s1 turn ends", "s1 write 2"]
    assert log.index("s2 write 3") < log.index("s1 turn ends")  # another session passes


async def test_a_cancelled_waiter_leaves_the_queue_usable_and_its_write_never_runs() -> None:
    transactions = Transactions()
    writes = queue(transactions)
    release = asyncio.Event()
    entered = asyncio.Event()
    ran: list[int] = []

    async def holding() -> None:
        async with writes.turn("s1", BOUND):
            entered.set()
            await release.wait()

    holder = asyncio.create_task(holding())
    await entered.wait()
    waiter = asyncio.create_task(writes.write("s1", work(1, ran), BOUND))
    await asyncio.sleep(0)
    waiter.cancel()
    release.set()
    await holder

    with pytest.raises(asyncio.CancelledError):
        await waiter
    async with asyncio.timeout(BOUND):
        assert await writes.write("s1", work(2, ran), BOUND) == 2
    assert ran == [2]


async def test_closing_fails_what_waits_and_what_runs() -> None:
    transactions = Transactions()
    transactions.release = asyncio.Event()  # the running batch never finishes by itself
    writes = queue(transactions, concurrency=1)

    running = asyncio.create_task(writes.write("s1", work(1), BOUND))
    await asyncio.sleep(0)
    waiting = asyncio.create_task(writes.write("s2", work(2), BOUND))
    await asyncio.sleep(0)
    await writes.aclose()

    for task in (running, waiting):
        with pytest.raises(StoreUnavailableError):
            await task


async def test_writes_waiting_when_the_server_is_found_unreachable_fail_at_once() -> None:
    # Each would wait for a frozen server in vain: failed, the outbox journals them at once.
    transactions = Transactions()
    transactions.release = asyncio.Event()  # the running batch hangs on the server
    writes = queue(transactions, concurrency=1)
    running = asyncio.create_task(writes.write("s1", work(1), 60.0))
    await asyncio.sleep(0)
    waiting = [asyncio.create_task(writes.write(s, work(2), 60.0)) for s in ("s2", "s3")]
    await asyncio.sleep(0.01)
    lost = StoreUnavailableError("neo4j", detail="The server did not answer.")

    writes.fail_waiting(lost)
    async with asyncio.timeout(1):
        failed = await asyncio.gather(*waiting, return_exceptions=True)
    transactions.release.set()

    assert failed == [lost, lost]
    assert await running == 1  # the running batch ends as its server says
    assert transactions.batches == [[("s1", 1)]]


async def test_a_running_batch_takes_its_sessions_writes_that_came_meanwhile() -> None:
    release = asyncio.Event()
    joined: list[list[tuple[str, int]]] = []

    async def commit(requests: list[Request[Any]]) -> None:
        await release.wait()
        requests += writes.joining({"s1"}, 2)
        joined.append([(request.session_id, await run(request)) for request in requests])

    async def run(request: Request[Any]) -> int:
        assert request.work is not None
        number: int = await request.work(None)  # type: ignore[arg-type]
        request.outcome.set_result(number)
        return number

    async def explicit() -> None:
        async with writes.turn("s1", BOUND):
            joined.append([("s1", -1)])

    writes = WriteQueue(commit, backend="neo4j", concurrency=2, batch=16)
    tasks = [asyncio.create_task(writes.write("s1", work(0), BOUND))]
    await asyncio.sleep(0)
    tasks += [
        asyncio.create_task(writes.write(session, work(n), BOUND))
        for n, session in enumerate(("s1", "s2", "s1", "s1"), start=1)
    ]
    await asyncio.sleep(0)
    tasks.append(asyncio.create_task(explicit()))
    tasks.append(asyncio.create_task(writes.write("s1", work(5), BOUND)))
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(*tasks)

    assert joined[0] == [("s1", 0), ("s1", 1), ("s1", 3)]  # two joined: the limit
    assert [("s2", 2)] in joined
    s1_after = [batch for batch in joined[1:] if batch[0][0] == "s1"]
    assert s1_after == [[("s1", 4)], [("s1", -1)], [("s1", 5)]]  # none past the turn
