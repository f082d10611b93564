"""A read whose caller gave up (its time budget ran out) does not hold the reader's thread.

The reads of many rows share one thread per connection: a statement left running after its
caller was cancelled would make every read queued behind it wait for an answer nobody reads.
The read below never ends on its own (an unbounded recursive count), so only aborting it lets
the next read through; the waits are generous and only bound a failure.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

import pytest

from gateway.stores.embedded import open_embedded_store
from gateway.stores.sqlite.connection import Readers
from gateway.stores.sqlite.store import SqliteStore

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
GENEROUS = 30.0


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = await SqliteStore.open(tmp_path, fsync=False)
    try:
        yield opened
    finally:
        # Should the store have let them run, stop the endless reads so the store can close.
        assert isinstance(opened._db, Readers)
        for worker in opened._db.workers:
            worker.connection.interrupt()
        await opened.aclose()


def endless() -> tuple[Callable[[sqlite3.Connection], object], threading.Event]:
    """A read that never ends, and the event it sets once it runs."""
    running = threading.Event()

    def read(db: sqlite3.Connection) -> object:
        running.set()
        return db.execute(ENDLESS).fetchone()

    return read, running


async def started(running: threading.Event, read: asyncio.Future[object]) -> None:
    async with asyncio.timeout(GENEROUS):
        while not running.is_set():
            assert not read.done()
            await asyncio.sleep(0.01)


async def test_a_read_given_up_while_running_is_aborted(store: SqliteStore) -> None:
    endless_read, running = endless()
    read = asyncio.ensure_future(store.read(endless_read))
    await started(running, read)

    read.cancel()
    with pytest.raises(asyncio.CancelledError):
        await read

    async with asyncio.timeout(GENEROUS):
        assert await store.count_nodes() == 0


async def test_a_read_given_up_before_it_ran_never_runs(store: SqliteStore) -> None:
    ran: list[str] = []

    def noted(db: sqlite3.Connection) -> int:
        ran.append("queued")
        return 0

    # Every reader busy with an endless read (a read goes to the least busy one), so the
    # next read waits in a thread's queue.
    assert isinstance(store._db, Readers)
    endless_reads = []
    for _ in store._db.workers:
        endless_read, running = endless()
        endless_reads.append(asyncio.ensure_future(store.read(endless_read)))
        await started(running, endless_reads[-1])
    queued = asyncio.ensure_future(store.read(noted))
    await asyncio.sleep(0)  # handed to a thread's queue, behind an endless read
    queued.cancel()
    for read in endless_reads:
        read.cancel()
    await asyncio.gather(*endless_reads, queued, return_exceptions=True)

    async with asyncio.timeout(GENEROUS):
        assert await store.count_nodes() == 0
    assert ran == []


async def test_as_many_long_reads_as_heavy_queries_do_not_hold_the_reads_after_them(
    tmp_path: Path,
) -> None:
    heavy = 6  # more than the store's default connections: the setting must reach it
    store = await open_embedded_store(tmp_path, engine="sqlite", fsync=False, heavy_readers=heavy)
    assert isinstance(store, SqliteStore)
    reads = []
    try:
        for _ in range(heavy):
            endless_read, running = endless()
            reads.append(asyncio.ensure_future(store.read(endless_read)))
            await started(running, reads[-1])
        async with asyncio.timeout(GENEROUS):
            assert await store.count_nodes() == 0
            assert (await store.list_nodes(session_id="s1", limit=10)).items == []
    finally:
        for read in reads:
            read.cancel()
        await asyncio.gather(*reads, return_exceptions=True)
        await store.aclose()


async def test_reads_nobody_gave_up_are_not_aborted(store: SqliteStore) -> None:
    counted = await asyncio.gather(
        *(
            store.read(
                lambda db: db.execute(
                    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
                    " WHERE x < 200000) SELECT count(*) FROM c"
                ).fetchone()[0]
            )
            for _ in range(4)
        )
    )

    assert counted == [200_000] * 4
