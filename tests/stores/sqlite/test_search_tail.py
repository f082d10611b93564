"""Searches on SQLite answer the same whether a node's search rows are in ``terms`` or still
in the tail (``gateway.stores.sqlite.tail``): after any writes, merges and reopenings, every
ranked page and total equals the model's (SPEC §4 searchNodes: terms matched, field rank,
newest, id) and the log engine's; a read keeps its snapshot across a merge; a rolled-back
write leaves nothing in the tail."""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.stores.file.store import FileStore
from gateway.stores.sqlite import store as store_module
from gateway.stores.sqlite.store import SqliteStore
from resolvers.errors import StoreWriteError
from resolvers.records import Label, NodeRecord
from resolvers.search import MatchMode, search_nodes
from resolvers.text import match_rank, token_ranks
from tests.profiles import profile

if TYPE_CHECKING:
    from pathlib import Path

    from resolvers.store import GraphReader, GraphStore, GraphTransaction

TAIL = profile("search-tail", examples=30, long_examples=500)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
WORDS = ("tp53", "tp63", "tpx", "mtor", "apoptosis", "apex", "数据分析", "分析")
QUERIES = (["tp"], ["tp53"], ["ap"], ["tp53", "mtor"], ["分析"], ["apex", "tp"], ["zz"])
FIELDS = ("title", "abstract", "summary", "content")
SESSIONS = ("s1", "s2")
LABELS = (Label.PAPER, Label.CLAIM)
PAGE = 3


@dataclass(frozen=True)
class Put:
    number: int  # which node (a later Put of the same number updates it)
    props: dict[str, Any]
    minute: int  # created_at (ties included)
    deleted: bool  # soft-deleted


@dataclass(frozen=True)
class Delete:
    number: int


@dataclass(frozen=True)
class Merge:
    rows: int  # how many search rows the merge moves, about


@dataclass(frozen=True)
class Reopen:
    pass


Op = Put | Delete | Merge | Reopen

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
puts = st.builds(
    Put,
    number=st.integers(0, 11),
    props=st.dictionaries(st.sampled_from(FIELDS), texts, max_size=3),
    minute=st.integers(0, 4),
    deleted=st.booleans(),
)
ops = st.lists(
    st.one_of(
        puts,
        puts,
        puts,
        st.builds(Delete, number=st.integers(0, 11)),
        st.builds(Merge, rows=st.integers(1, 40)),
        st.just(Reopen()),
    ),
    max_size=30,
)


def node(number: int, put: Put, created: datetime) -> NodeRecord:
    props = dict(put.props)
    if put.deleted:
        props["deleted_session"] = "cleanup"
    return NodeRecord(
        f"n{number:02d}",
        LABELS[number % len(LABELS)],
        f"k{number}",
        SESSIONS[number % len(SESSIONS)],
        created,
        props,
    )


def model_search(
    nodes: dict[str, NodeRecord],
    terms: list[str],
    session_id: str | None,
    labels: list[Label] | None,
    require_all: bool,
) -> list[str]:
    """Every hit's id in search order (SPEC §4), from the live nodes themselves."""
    keyed = []
    for stored in nodes.values():
        if stored.deleted or (session_id is not None and stored.session_id != session_id):
            continue
        if labels is not None and stored.label not in labels:
            continue
        matched, rank = match_rank(terms, token_ranks(stored.props))
        if matched == 0 or (require_all and matched < len(terms)):
            continue
        age = (_EPOCH - stored.created_at) // timedelta(microseconds=1)
        keyed.append((-matched, rank, age, stored.id))
    return [key[3] for key in sorted(keyed)]


async def pages(
    store: GraphStore,
    terms: list[str],
    session_id: str | None,
    labels: list[Label] | None,
    require_all: bool,
) -> tuple[list[str], list[int]]:
    """Every page of ``searchNodes``, walked with its cursors, and each page's total."""
    found: list[str] = []
    totals: list[int] = []
    cursor = None
    while True:
        page = await search_nodes(
            store,
            " ".join(terms),
            mode=MatchMode.ALL_TERMS if require_all else MatchMode.ANY_TERM,
            session_id=session_id,
            labels=labels,
            first=PAGE,
            after=cursor,
        )
        found.extend(item.id for item in page.items)
        totals.append(page.total)
        cursor = page.end_cursor
        if cursor is None:
            return found, totals


async def check(sqlite: SqliteStore, log: FileStore, nodes: dict[str, NodeRecord]) -> None:
    for terms in QUERIES:
        for session_id in (None, "s1"):
            for labels in (None, [Label.PAPER]):
                for require_all in (False, True):
                    expected = model_search(nodes, terms, session_id, labels, require_all)
                    walked, totals = await pages(sqlite, terms, session_id, labels, require_all)
                    assert walked == expected, (terms, session_id, labels, require_all)
                    assert set(totals) == {len(expected)}
                    assert await pages(log, terms, session_id, labels, require_all) == (
                        walked,
                        totals,
                    )
                    hits = await sqlite.search(
                        terms, session_id=session_id, labels=labels, require_all=require_all
                    )
                    logged = await log.search(
                        terms, session_id=session_id, labels=labels, require_all=require_all
                    )
                    assert sorted((h.node.id, h.matched, h.rank) for h in hits) == sorted(
                        (h.node.id, h.matched, h.rank) for h in logged
                    )


async def apply_write(store: GraphStore, op: Put | Delete, nodes: dict[str, NodeRecord]) -> None:
    number = f"n{op.number:02d}"

    async def work(tx: GraphTransaction) -> None:
        if isinstance(op, Delete):
            await tx.delete_node(number)
            return
        stored = nodes.get(number)
        created = stored.created_at if stored else T0 + timedelta(minutes=op.minute)
        await tx.put_node(node(op.number, op, created))

    await store.write("s1", work)


@TAIL
@given(script=ops)
async def test_search_answers_as_the_model_with_rows_in_the_tail_and_in_terms(
    tmp_path_factory: pytest.TempPathFactory, script: list[Op]
) -> None:
    directory = tmp_path_factory.mktemp("tail")
    sqlite = await SqliteStore.open(directory / "sqlite", fsync=False, tail_rows=10**9)
    log = await FileStore.open(directory / "log", fsync=False)
    nodes: dict[str, NodeRecord] = {}
    try:
        for op in script:
            if isinstance(op, Merge):
                async with sqlite._write_lock:
                    await sqlite._merge(op.rows)
            elif isinstance(op, Reopen):
                await sqlite.aclose()
                sqlite = await SqliteStore.open(directory / "sqlite", fsync=False, tail_rows=10**9)
            else:
                await apply_write(sqlite, op, nodes)
                await apply_write(log, op, nodes)
                (stored,) = await log.get_nodes([f"n{op.number:02d}"])
                if stored is None:
                    nodes.pop(f"n{op.number:02d}", None)
                else:
                    nodes[stored.id] = stored
        await check(sqlite, log, nodes)
        await sqlite.merge_search_tail()
        await check(sqlite, log, nodes)
    finally:
        await sqlite.aclose()
        await log.aclose()


def paper(number: int, text: str, minute: int = 0) -> NodeRecord:
    return NodeRecord(
        f"p{number}",
        Label.PAPER,
        f"k{number}",
        "s1",
        T0 + timedelta(minutes=minute),
        {"title": text},
    )


async def ids(store: GraphReader, term: str) -> list[str]:
    page = await store.search_ranked([term], limit=50)  # type: ignore[attr-defined]
    return [item.id for item in page.items]


async def test_a_read_keeps_its_snapshot_while_rows_are_merged_and_changed(
    tmp_path: Path,
) -> None:
    store = await SqliteStore.open(tmp_path, fsync=False, tail_rows=10**9)
    try:
        async with store.transaction() as tx:
            for number in range(6):
                await tx.put_node(paper(number, "tp53 apoptosis", minute=number))
        before = await ids(store, "tp53")
        async with store.consistent_view() as view:
            assert await ids(view, "tp53") == before
            await store.merge_search_tail()  # the rows move from the tail into ``terms``
            assert await ids(view, "tp53") == before
            async with store.transaction() as tx:
                await tx.delete_node("p2")
                await tx.put_node(paper(3, "mtor only", minute=3))
                await tx.put_node(paper(9, "tp53 again", minute=9))
            assert await ids(view, "tp53") == before
            assert await ids(view, "mtor") == []
        after = await ids(store, "tp53")
        mtor = await ids(store, "mtor")
    finally:
        await store.aclose()

    assert before == ["p5", "p4", "p3", "p2", "p1", "p0"]
    assert after == ["p9", "p5", "p4", "p1", "p0"]
    assert mtor == ["p3"]


async def test_a_transaction_sees_its_own_rows_and_a_rollback_leaves_none(
    tmp_path: Path,
) -> None:
    store = await SqliteStore.open(tmp_path, fsync=False)
    try:
        async with store.transaction() as tx:
            await tx.put_node(paper(1, "tp53"))
        inside: list[str] = []

        async def given_up(tx: GraphTransaction) -> None:
            await tx.put_node(paper(2, "tp53 mtor"))
            await tx.delete_node("p1")
            page = await tx.search_ranked(["tp53"], limit=10)  # type: ignore[attr-defined]
            inside.extend(item.id for item in page.items)
            raise RuntimeError("given up")

        with pytest.raises(RuntimeError, match="given up"):
            await store.write("s1", given_up)
        async with store.transaction() as tx:  # the next commit stores the version again
            await tx.put_node(paper(3, "other"))
        kept = await ids(store, "tp53")
        mtor = await ids(store, "mtor")
    finally:
        await store.aclose()

    assert inside == ["p2"]
    assert kept == ["p1"]
    assert mtor == []


async def test_a_refused_commit_leaves_nothing_in_the_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await SqliteStore.open(tmp_path, fsync=False)

    def full(db: sqlite3.Connection, tail_version: int | None) -> None:
        error = sqlite3.OperationalError("database or disk is full")
        error.sqlite_errorcode = sqlite3.SQLITE_FULL
        raise error

    try:
        async with store.transaction() as tx:
            await tx.put_node(paper(1, "tp53"))
        monkeypatch.setattr(store_module, "_commit_sql", full)

        async def refused(tx: GraphTransaction) -> None:
            await tx.put_node(paper(2, "tp53"))
            await tx.put_node(paper(1, "mtor"))

        with pytest.raises(StoreWriteError, match="disk is full"):
            await store.write("s1", refused)
        monkeypatch.undo()
        kept, mtor = await ids(store, "tp53"), await ids(store, "mtor")
        async with store.transaction() as tx:  # the next commit reuses the version
            await tx.put_node(paper(3, "tp53"))
        later = await ids(store, "tp53")
    finally:
        await store.aclose()

    assert kept == ["p1"]
    assert mtor == []
    assert later == ["p1", "p3"]  # created at the same time: by id


async def test_the_tail_is_merged_past_its_bound_and_when_writes_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "MERGE_ROWS", 4)
    monkeypatch.setattr(store_module, "IDLE_SECONDS", 0.05)
    store = await SqliteStore.open(tmp_path, fsync=False, tail_rows=6)
    try:
        for number in range(5):
            async with store.transaction() as tx:  # two rows each
                await tx.put_node(paper(number, f"tp53 word{number}", minute=number))
            assert store._tail.rows <= 6
        assert store._tail.rows > 0
        for _ in range(100):
            if not store._tail.rows:
                break
            await asyncio.sleep(0.02)
        idle = store._tail.rows
        found = await ids(store, "tp53")
    finally:
        await store.aclose()

    assert idle == 0
    assert found == ["p4", "p3", "p2", "p1", "p0"]
