"""A database of an older schema is upgraded on open, in place: schema 1 (a by-session copy of
the search index) answers every search as it did; text indexed before search folded it as it
does now is indexed again."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from gateway.stores.sqlite.migrate import DATABASE_NAME
from gateway.stores.sqlite.schema import SCHEMA_VERSION
from gateway.stores.sqlite.store import SqliteStore
from resolvers import text
from resolvers.records import Label, NodeRecord, SearchHit

if TYPE_CHECKING:
    from pathlib import Path

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = ("tp53 apoptosis", "tp53 mdm2 binding", "mtor signalling", "apoptosis of tumour cells")

# What schema 1 had: the session in every row, and the index by (session, token).
TO_SCHEMA_1 = """
CREATE TABLE old_terms (
    token TEXT NOT NULL, rank INTEGER NOT NULL, newer INTEGER NOT NULL, nid INTEGER NOT NULL,
    session TEXT NOT NULL, label TEXT NOT NULL, PRIMARY KEY (token, rank, newer, nid)
) WITHOUT ROWID;
INSERT INTO old_terms SELECT token, rank, newer, nid, nodes.session, terms.label
    FROM terms JOIN nodes ON nodes.rid = terms.nid;
DROP TABLE terms;
ALTER TABLE old_terms RENAME TO terms;
CREATE INDEX terms_session ON terms (session, token);
UPDATE meta SET value = '1' WHERE name = 'schema';
"""
# What schema 2 lacked: the tail of the search index (every row was in ``terms``).
TO_SCHEMA_2 = """
DROP TABLE pending;
DELETE FROM meta WHERE name = 'tail';
UPDATE meta SET value = '2' WHERE name = 'schema';
"""


def paper(number: int) -> NodeRecord:
    return NodeRecord(
        f"Paper:p{number}",
        Label.PAPER,
        f"p{number}",
        f"s{number % 3}",
        T0 + timedelta(minutes=number),
        {"title": WORDS[number % len(WORDS)], "abstract": WORDS[(number + 1) % len(WORDS)]},
    )


async def answers(store: SqliteStore) -> list[object]:
    found: list[object] = []
    for terms in (["tp53"], ["apo"], ["tp53", "mdm2"], ["signal", "tumour"]):
        for session in (None, "s1"):
            for require_all in (False, True):
                hits = await store.search(terms, session_id=session, require_all=require_all)
                found.append(sorted(hits, key=_hit_key))
                page = await store.search_ranked(
                    terms, session_id=session, require_all=require_all, limit=5, offset=2
                )
                found.append((page.items, page.total, page.truncated))
    return found


def _hit_key(hit: SearchHit) -> str:
    return hit.node.id


def schema_of(directory: Path) -> tuple[str, set[str], list[str]]:
    db = sqlite3.connect(directory / DATABASE_NAME)
    try:
        (version,) = db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        indexes = {row[1] for row in db.execute("PRAGMA index_list(terms)")}
        columns = [row[1] for row in db.execute("PRAGMA table_info(terms)")]
    finally:
        db.close()
    return version, indexes, columns


async def test_a_schema_1_database_is_upgraded_and_searches_as_before(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path, fsync=False)
    try:
        async with store.transaction() as tx:
            for number in range(30):
                await tx.put_node(paper(number))
        async with store.transaction() as tx:
            await tx.delete_node("Paper:p4")
        expected = await answers(store)
        await store.merge_search_tail()  # older schemas held every search row in ``terms``
    finally:
        await store.aclose()
    db = sqlite3.connect(tmp_path / DATABASE_NAME)
    db.executescript(TO_SCHEMA_2 + TO_SCHEMA_1)
    db.close()
    assert schema_of(tmp_path)[1] >= {"terms_session"}

    upgraded = await SqliteStore.open(tmp_path, fsync=False)
    try:
        found = await answers(upgraded)
        async with upgraded.transaction() as tx:  # and it is written as any other
            await tx.put_node(paper(100))
        after_write = await upgraded.search(["tp53"], session_id="s1")
    finally:
        await upgraded.aclose()
    version, indexes, columns = schema_of(tmp_path)

    assert found == expected
    assert any(hit.node.id == "Paper:p100" for hit in after_write)
    assert version == str(SCHEMA_VERSION)
    assert "terms_session" not in indexes
    assert "terms_node" in indexes
    assert "session" not in columns


async def test_a_schema_2_database_gets_a_search_tail_and_searches_as_before(
    tmp_path: Path,
) -> None:
    store = await SqliteStore.open(tmp_path, fsync=False)
    try:
        async with store.transaction() as tx:
            for number in range(30):
                await tx.put_node(paper(number))
        async with store.transaction() as tx:
            await tx.delete_node("Paper:p7")
        await store.merge_search_tail()
        expected = await answers(store)
    finally:
        await store.aclose()
    db = sqlite3.connect(tmp_path / DATABASE_NAME)
    db.executescript(TO_SCHEMA_2)
    db.close()

    upgraded = await SqliteStore.open(tmp_path, fsync=False)
    try:
        found = await answers(upgraded)
        async with upgraded.transaction() as tx:  # written to the tail, found with the rest
            await tx.put_node(paper(101))
        after_write = await upgraded.search(["tp53"], session_id="s2")
    finally:
        await upgraded.aclose()
    reopened = await SqliteStore.open(tmp_path, fsync=False)
    try:
        after_reopen = await reopened.search(["tp53"], session_id="s2")
    finally:
        await reopened.aclose()

    assert found == expected
    assert any(hit.node.id == "Paper:p101" for hit in after_write)
    assert sorted(after_reopen, key=_hit_key) == sorted(after_write, key=_hit_key)
    assert schema_of(tmp_path)[0] == str(SCHEMA_VERSION)


# How text was indexed before each schema that indexes some nodes again: the attribute of
# ``resolvers.text`` patched, the schema, the nodes' texts and a term finding each once
# re-indexed (the last one, ASCII, was found before too).
FOLDS_BEFORE = {
    # Schema 4 lower-cased the text it indexed; schema 5 folds it (NFKC, full case folding).
    "schema 4": (
        ("fold", str.lower),
        "4",
        {"Straße names": "strasse", "e\u0301clair study": "éclair", "tp53": "tp53"},
    ),
    # Schema 5 kept the dot a folded "İ" leaves ("i" + U+0307); schema 6 drops it.
    "schema 5": (
        ("_DOTTED_I", "\N{NULL}never"),
        "5",
        {"İstanbul cohort": "istanbul", "ki\u0307t data": "kit", "tp53": "tp53"},
    ),
}


@pytest.mark.parametrize("schema", FOLDS_BEFORE)
async def test_a_database_indexed_before_search_folded_text_as_now_finds_it_folded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schema: str
) -> None:
    (name, value), version, texts = FOLDS_BEFORE[schema]
    ids = [f"Paper:p{number}" for number in range(len(texts))]
    with monkeypatch.context() as earlier:
        earlier.setattr(text, name, value)
        store = await SqliteStore.open(tmp_path, fsync=False)
        try:
            async with store.transaction() as tx:
                for number, (node_id, title) in enumerate(zip(ids, texts, strict=True)):
                    node = NodeRecord(node_id, Label.PAPER, node_id, "s", T0, {"title": title})
                    await tx.put_node(replace(node, created_at=T0 + timedelta(minutes=number)))
            await store.merge_search_tail()
            before = [await store.search([term]) for term in texts.values()]
        finally:
            await store.aclose()
    db = sqlite3.connect(tmp_path / DATABASE_NAME)
    db.execute("UPDATE meta SET value = ? WHERE name = 'schema'", (version,))
    db.commit()
    db.close()

    upgraded = await SqliteStore.open(tmp_path, fsync=False)
    try:
        found = [await upgraded.search([term]) for term in texts.values()]
        await upgraded.merge_search_tail()
        merged = [await upgraded.search([term]) for term in texts.values()]
    finally:
        await upgraded.aclose()

    assert [[hit.node.id for hit in hits] for hits in before] == [[]] * (len(ids) - 1) + [ids[-1:]]
    assert [[hit.node.id for hit in hits] for hits in found] == [[i] for i in ids]
    assert [[hit.node.id for hit in hits] for hits in merged] == [[i] for i in ids]
    assert schema_of(tmp_path)[0] == str(SCHEMA_VERSION)
