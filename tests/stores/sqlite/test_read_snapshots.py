"""A SQLite read primitive of several statements sees one state of the store.

A page and its total are two statements, a search reads a count and then the page: a write
committed between them would make the answer disagree with itself (a total that is not the
number of nodes listed). Each test commits a write, through a connection of its own, just
before the primitive's second statement runs, and checks that the answer is still one state.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from gateway.stores.sqlite import queries, writes
from gateway.stores.sqlite.migrate import DATABASE_NAME
from gateway.stores.sqlite.store import SqliteStore
from resolvers.records import Label, NodeRecord, node_id

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

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
                writes.put_node(writer, claim(f"late-{len(statements)}"))
                writer.execute("COMMIT")

    try:
        with writer:
            writes.put_node(writer, claim("first"))
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
        path, lambda db: queries.search_ranked(db, ["tp53"], "s1", None, False, 10, 0)
    )

    assert statements >= 2
    assert page.total == len(page.items) == 1  # type: ignore[attr-defined]


def test_a_search_across_sessions_and_its_total_are_one_state(path: Path) -> None:
    page, statements = write_between_statements(
        path, lambda db: queries.search_ranked(db, ["tp53"], None, None, False, 10, 0)
    )

    assert statements >= 2
    assert page.total == len(page.items) == 1  # type: ignore[attr-defined]
