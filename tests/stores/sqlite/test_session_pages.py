"""A session page read again is the one read before only while none of the session's rows
changed (``queries.SessionPages``, kept by the ``changes`` triggers).

Each case compares the store's ``session_page`` (which may answer from its pages) with the
same page read afresh on a reader connection, after every write: nodes and edges put,
rewritten, soft-deleted and deleted, edges across sessions, transactions rolled back after
writing, cleanups, and the generated sessions of the model suite delivered late, twice and
out of order. A page kept past a change of its session answers what the session no longer
holds, and fails them.
"""

from __future__ import annotations

import random
import sqlite3
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.stores.sqlite import queries
from gateway.stores.sqlite.migrate import DATABASE_NAME
from gateway.stores.sqlite.schema import TRIGGERS
from gateway.stores.sqlite.store import SqliteStore
from resolvers.cleanup import cleanup_session
from resolvers.errors import DomainError
from resolvers.records import EdgeRecord, EdgeType, NodeRecord, Page
from tests.model.streams import Applied, _send, streams
from tests.profiles import profile
from tests.stores.sqlite.test_session_page import node

if TYPE_CHECKING:
    from pathlib import Path

    from tests.model.streams import Op

LIMITS = (3, 500)
PAGES = profile("session_pages", examples=20, long_examples=300)


class RollBackError(Exception):
    pass


def answer(page: queries.SessionPage) -> tuple[object, ...]:
    nodes, edges = page
    return (
        [
            (n.id, n.label, n.key, n.session_id, n.created_at, dict(n.props), n.seq)
            for n in nodes.items
        ],
        nodes.total,
        nodes.truncated,
        sorted((e.type, e.source, e.target, sorted(e.props.items())) for e in edges),
    )


async def afresh(store: SqliteStore, session_id: str, limit: int) -> queries.SessionPage:
    def read(db: sqlite3.Connection) -> queries.SessionPage:
        return queries.session_page(db, session_id, limit)

    return await store.read(read)


async def check_pages(store: SqliteStore, sessions: set[str]) -> None:
    for session_id in sorted(sessions):
        for limit in LIMITS:
            kept = await store.session_page(session_id, limit=limit)
            assert answer(kept) == answer(await afresh(store, session_id, limit)), session_id
            async with store.consistent_view() as view:  # the subgraph's way in
                viewed = await view.session_page(session_id, limit=limit)  # type: ignore[attr-defined]
            assert answer(viewed) == answer(kept)


async def random_step(store: SqliteStore, rng: random.Random, nodes: list[NodeRecord]) -> None:
    """One transaction of a few writes; one in five is rolled back after writing, and so is
    one that puts an edge to a deleted node."""
    try:
        async with store.transaction() as tx:
            for _ in range(1 if rng.random() < 0.7 else 3):
                kind = rng.randrange(7)
                one, other = rng.choice(nodes), rng.choice(nodes)
                edge_type = rng.choice([EdgeType.SUPPORTS, EdgeType.NEXT])
                if kind == 0:
                    await tx.put_node(one)
                elif kind == 1:  # rewritten with other properties
                    await tx.put_node(node(int(one.key[1:]), one.session_id, n=rng.random()))
                elif kind == 2:  # soft-deleted
                    await tx.put_node(
                        node(int(one.key[1:]), one.session_id, deleted_session=one.session_id)
                    )
                elif kind == 3:
                    await tx.delete_node(one.id)
                elif kind == 4:
                    await tx.put_edge(EdgeRecord(edge_type, one.id, other.id, {}))
                elif kind == 5:
                    await tx.put_edge(EdgeRecord(edge_type, one.id, other.id, {"w": rng.random()}))
                else:
                    await tx.delete_edge(edge_type, one.id, other.id)
            if rng.random() < 0.2:
                raise RollBackError
    except (RollBackError, ValueError):
        pass


@pytest.mark.parametrize("seed", range(4))
async def test_a_page_read_again_is_the_page_of_the_session_as_it_is_now(
    sqlite_store: SqliteStore, seed: int
) -> None:
    rng = random.Random(seed)
    nodes = [node(n, rng.choice(["s1", "s1", "s2"])) for n in range(12)]
    async with sqlite_store.transaction() as tx:
        for each in nodes:
            await tx.put_node(each)
    for _ in range(80):
        await random_step(sqlite_store, rng, nodes)
        await check_pages(sqlite_store, {"s1", "s2"})


async def test_a_page_is_read_again_only_when_its_session_changed(
    sqlite_store: SqliteStore,
) -> None:
    async with sqlite_store.transaction() as tx:
        await tx.put_node(node(1, "s1"))
        await tx.put_node(node(2, "s2"))
    first = await sqlite_store.session_page("s1", limit=10)
    assert await sqlite_store.session_page("s1", limit=10) is first  # nothing read again
    async with sqlite_store.transaction() as tx:  # another session's write
        await tx.put_node(node(3, "s2"))
    assert await sqlite_store.session_page("s1", limit=10) is first
    try:
        async with sqlite_store.transaction() as tx:  # a write of s1 that is rolled back
            await tx.put_node(node(4, "s1"))
            raise RollBackError
    except RollBackError:
        pass
    assert await sqlite_store.session_page("s1", limit=10) is first
    async with sqlite_store.transaction() as tx:
        await tx.put_edge(EdgeRecord(EdgeType.NEXT, node(1, "s1").id, node(1, "s1").id, {}))
    again = await sqlite_store.session_page("s1", limit=10)

    async with sqlite_store.transaction() as tx:  # only the edge's properties
        await tx.put_edge(EdgeRecord(EdgeType.NEXT, "Claim:k1", "Claim:k1", {"w": 1}))
    rewritten = await sqlite_store.session_page("s1", limit=10)
    async with sqlite_store.transaction() as tx:  # only the edge, removed
        await tx.delete_edge(EdgeType.NEXT, "Claim:k1", "Claim:k1")
    removed = await sqlite_store.session_page("s1", limit=10)

    assert again is not first
    assert [e.identity for e in again[1]] == [(EdgeType.NEXT, "Claim:k1", "Claim:k1")]
    assert [dict(e.props) for e in rewritten[1]] == [{"w": 1}]
    assert removed[1] == ()


def long_page(session: str, characters: int) -> queries.SessionPage:
    nodes = [node(n, session, summary="x" * characters, tags=["y" * characters]) for n in (1, 2)]
    return Page(nodes, len(nodes), False), ()


def test_pages_go_when_their_text_passes_the_bound() -> None:
    # Each page weighs 4,000 characters (two nodes, a string and a list of one each): two
    # are held within 10,000; the third pushes the oldest out, however few their records.
    pages = queries.SessionPages(records=100, text=10_000)
    for session in ("s1", "s2", "s3"):
        pages.put(session, 10, 1, long_page(session, 1_000))

    assert pages.get("s1", 10, 1) is None
    assert pages.get("s2", 10, 1) is not None
    assert pages.get("s3", 10, 1) is not None


def test_a_page_over_the_text_bound_alone_is_not_kept() -> None:
    pages = queries.SessionPages(records=100, text=10_000)
    pages.put("small", 10, 1, long_page("small", 10))
    pages.put("long", 10, 1, long_page("long", 3_000))  # 12,000 characters

    assert pages.get("long", 10, 1) is None
    assert pages.get("small", 10, 1) is not None  # nothing pushed out for it


def shell(directory: Path, statement: str) -> None:
    db = sqlite3.connect(directory / DATABASE_NAME)
    try:
        db.execute(statement)
        db.commit()
    finally:
        db.close()


async def test_a_row_written_by_another_connection_is_seen(tmp_path: Path) -> None:
    """The triggers are the database's: a row changed by a SQLite shell counts as well, and
    a row moved to another session changes both sessions' pages."""
    store = await SqliteStore.open(tmp_path, fsync=False)
    try:
        async with store.transaction() as tx:
            await tx.put_node(node(1, "s1", text="before"))
            await tx.put_node(node(2, "s1"))
            await tx.put_node(node(3, "s2"))
            await tx.put_edge(EdgeRecord(EdgeType.NEXT, "Claim:k1", "Claim:k2", {}))
        before = await store.session_page("s1", limit=10)
        shell(tmp_path, """UPDATE nodes SET props = '{"text":"after"}' WHERE key = 'k1'""")
        after = await store.session_page("s1", limit=10)
        await store.session_page("s2", limit=10)
        shell(tmp_path, "UPDATE edges SET session = 's2'")
        edge_moved = [await store.session_page(s, limit=10) for s in ("s1", "s2")]
        shell(tmp_path, "UPDATE nodes SET session = 's2' WHERE key = 'k2'")
        node_moved = [await store.session_page(s, limit=10) for s in ("s1", "s2")]
    finally:
        await store.aclose()

    assert [dict(n.props) for n in before[0].items] == [{}, {"text": "before"}]
    assert [dict(n.props) for n in after[0].items] == [{}, {"text": "after"}]
    assert [len(edges) for _, edges in (before, after)] == [1, 1]
    assert [len(edges) for _, edges in edge_moved] == [0, 0]  # s2 holds one end only
    assert [[n.key for n in page.items] for page, _ in node_moved] == [["k1"], ["k3", "k2"]]


async def test_every_trigger_is_there_after_an_upgrade(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path, fsync=False)
    await store.aclose()
    db = sqlite3.connect(tmp_path / DATABASE_NAME)
    try:  # as schema 3 was: no ``changes``, no triggers
        for (name,) in db.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'trigger'"
        ).fetchall():
            db.execute(f"DROP TRIGGER {name}")
        db.execute("DROP TABLE changes")
        db.execute("UPDATE meta SET value = '3' WHERE name = 'schema'")
        db.commit()
    finally:
        db.close()
    upgraded = await SqliteStore.open(tmp_path, fsync=False)
    try:
        async with upgraded.transaction() as tx:
            await tx.put_node(node(1, "s1"))
        first = await upgraded.session_page("s1", limit=10)
        async with upgraded.transaction() as tx:
            await tx.delete_node(node(1, "s1").id)
        after = await upgraded.session_page("s1", limit=10)
    finally:
        await upgraded.aclose()
    db = sqlite3.connect(tmp_path / DATABASE_NAME)
    try:
        triggers = db.execute("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'")
        (count,) = triggers.fetchone()
    finally:
        db.close()

    assert count == len(TRIGGERS)
    assert [n.id for n in first[0].items] == ["Claim:k1"]
    assert list(after[0].items) == []


@PAGES
@given(ops=streams(), cleanup_at=st.integers(min_value=0, max_value=40))
async def test_generated_sessions_read_between_every_event(
    tmp_path_factory: pytest.TempPathFactory, ops: tuple[Op, ...], cleanup_at: int
) -> None:
    store = await SqliteStore.open(tmp_path_factory.mktemp("pages"), fsync=False)
    try:
        applied = Applied()
        for index, op in enumerate(ops):
            applied.sessions.add(op.session_id)
            try:
                await _send(store, op, applied)
            except DomainError:
                applied.rejected += 1
            if index == cleanup_at:
                await cleanup_session(store, op.session_id)
            await check_pages(store, applied.sessions)
    finally:
        await store.aclose()
