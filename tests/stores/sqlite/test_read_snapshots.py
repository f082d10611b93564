"""A SQLite read primitive of several statements, and a snapshot's reads, see one state.

A page and its total are two statements, a search reads a count and then the page: a write
committed between them would make the answer disagree with itself (a total that is not the
number of nodes listed). Each test commits a write, through a connection of its own, just
before the primitive's second statement runs, and checks that the answer is still one state.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from gateway.live.bus import EventBus
from gateway.live.publishing import PublishingStore
from gateway.stores.sqlite import queries, writes
from gateway.stores.sqlite.migrate import DATABASE_NAME
from gateway.stores.sqlite.store import SqliteStore
from gateway.stores.sqlite.tail import Tail
from resolvers.records import Label, NodeRecord, node_id
from resolvers.store import one_state

WAIT = 10.0  # bounds a failure only

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from resolvers.store import GraphStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def claim(key: str) -> NodeRecord:
    return NodeRecord(
        node_id(Label.CLAIM, key), Label.CLAIM, key, "s1", T0, {"content": f"tp53 {key}"}
    )


@pytest.fixture
async def path(tmp_path: Path) -> Path:
    store = await SqliteStore.open(tmp_path, fsync=False)
    await store.aclose()
    return tmp_path / DATABASE_NAME


def put_merged(db: sqlite3.Connection, node: NodeRecord) -> None:
    """Store a new node with its search rows in ``terms`` (as a merge of the tail leaves it)."""
    rid, rows = writes.put_node(db, node, None, pending=False)
    writes.merge_rows(db, rows or [], [rid])


def write_between_statements(
    path: Path, read: Callable[[sqlite3.Connection], object]
) -> tuple[object, int]:
    """``read`` on a reader connection, a new node committed by another connection just
    before its second statement; the answer and the number of statements it ran."""
    reader = sqlite3.connect(path, isolation_level=None)
    writer = sqlite3.connect(path, isolation_level=None)
    statements: list[str] = []

    def traced(sql: str) -> None:
        if not sql.startswith(("BEGIN", "ROLLBACK", "COMMIT")):
            statements.append(sql)
            if len(statements) == 2:
                writer.execute("BEGIN IMMEDIATE")
                put_merged(writer, claim(f"late-{len(statements)}"))
                writer.execute("COMMIT")

    try:
        with writer:
            put_merged(writer, claim("first"))
        reader.set_trace_callback(traced)
        return read(reader), len(statements)
    finally:
        reader.close()
        writer.close()


def test_a_page_and_its_total_are_one_state(path: Path) -> None:
    page, statements = write_between_statements(
        path, lambda db: queries.list_nodes(db, None, "s1", 10, 0)
    )

    assert statements >= 2
    assert page.total == len(page.items) == 1  # type: ignore[attr-defined]


def test_a_ranked_search_and_its_total_are_one_state(path: Path) -> None:
    page, statements = write_between_statements(
        path,
        lambda db: queries.search_ranked(db, Tail(0), None, ["tp53"], "s1", None, False, 10, 0),
    )

    assert statements >= 2
    assert page.total == len(page.items) == 1  # type: ignore[attr-defined]


def test_a_search_across_sessions_and_its_total_are_one_state(path: Path) -> None:
    page, statements = write_between_statements(
        path,
        lambda db: queries.search_ranked(db, Tail(0), None, ["tp53"], None, None, False, 10, 0),
    )

    assert statements >= 2
    assert page.total == len(page.items) == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("published", [False, True], ids=["store", "as-the-gateway-wraps-it"])
async def test_a_snapshot_reads_one_state_while_writes_commit(
    tmp_path: Path, published: bool
) -> None:
    opened = await SqliteStore.open(tmp_path, fsync=False)
    store: GraphStore = PublishingStore(opened, EventBus()) if published else opened
    try:
        await store.write("s1", lambda tx: tx.put_node(claim("first")))
        async with one_state(store) as view:
            before = await view.list_nodes(session_id="s1", limit=10)
            await store.write("s1", lambda tx: tx.put_node(claim("late")))
            again = await view.list_nodes(session_id="s1", limit=10)
            found = await view.get_nodes([claim("late").id])
        after = await store.list_nodes(session_id="s1", limit=10)
    finally:
        await opened.aclose()

    assert [n.key for n in before.items] == [n.key for n in again.items] == ["first"]
    assert found == [None]
    assert [n.key for n in after.items] == ["late", "first"]


async def test_a_cancelled_snapshot_leaves_no_old_state_behind(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path, fsync=False, readers=1)
    try:

        async def read_then_wait() -> None:
            async with one_state(store) as view:
                await view.list_nodes(session_id="s1", limit=10)
                await asyncio.Event().wait()

        reading = asyncio.ensure_future(read_then_wait())
        await asyncio.sleep(0.1)
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
        await store.write("s1", lambda tx: tx.put_node(claim("late")))
        after = await store.list_nodes(session_id="s1", limit=10)
    finally:
        await store.aclose()

    assert [n.key for n in after.items] == ["late"]


async def test_more_views_at_once_than_connections_wait_their_turn(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path, fsync=False, readers=3)
    try:
        await store.write("s1", lambda tx: tx.put_node(claim("first")))

        async def view_twice() -> list[str]:
            async with one_state(store) as view:
                page = await view.list_nodes(session_id="s1", limit=10)
                await asyncio.sleep(0.01)
                (found,) = await view.get_nodes([page.items[0].id])
                assert found is not None
                return [node.key for node in page.items]

        async def plain_read() -> list[str]:
            return [node.key for node in (await store.list_nodes(session_id="s1", limit=10)).items]

        answers = await asyncio.gather(*(view_twice() for _ in range(8)), plain_read())
    finally:
        await store.aclose()

    assert answers == [["first"]] * 9


async def test_a_read_transaction_is_begun_and_ended_on_the_loop_only_when_its_thread_is_idle(
    tmp_path: Path,
) -> None:
    """``Worker.run_after``: on the event loop when nothing is handed to the connection's
    thread; behind the job still running there otherwise, even when that job's caller gave
    up (its statement would otherwise share the connection with the loop's)."""
    store = await SqliteStore.open(tmp_path, fsync=False, readers=1)
    (worker,) = store._db.workers
    threads: list[int] = []
    release = threading.Event()

    def where(db: sqlite3.Connection) -> None:
        threads.append(threading.get_ident())

    def held(db: sqlite3.Connection) -> None:
        release.wait(WAIT)
        threads.append(threading.get_ident())

    try:
        await worker.run_after(where)
        holding = asyncio.ensure_future(worker.run(held))
        await asyncio.sleep(0.05)
        holding.cancel()  # its caller gives up; the job runs on
        await asyncio.gather(holding, return_exceptions=True)
        after = asyncio.ensure_future(worker.run_after(where))
        await asyncio.sleep(0.05)
        waited = not after.done()
        release.set()
        await asyncio.wait_for(after, WAIT)
        await worker.run_after(where)
    finally:
        release.set()
        await store.aclose()

    loop_thread = threading.get_ident()
    assert waited
    assert threads[0] == loop_thread
    assert threads[1] == threads[2] != loop_thread  # behind the held job, on its thread
    assert threads[3] == loop_thread
