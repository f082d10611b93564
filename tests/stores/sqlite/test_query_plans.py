"""The SQLite reads of one node's neighbourhood use the index that bounds them.

Without statistics, SQLite's planner may read a large index in the order a query asks for
rather than seek a small one and sort: ``expand`` of one node once read every edge of the type
in the store (``edges_type`` in ``rid`` order, 100 ms at 1M nodes), and a session listing
sorted all of the session's rows to return a page. The plans are SQLite's own answer for the
statements the queries really run (traced with their values), on an empty database: the
choice depends on the schema, not on the rows. A session's listing of edges, asked with
``session IS NULL OR …``, read every edge of the types in the store (1 s at 1M nodes).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import pytest

from gateway.stores.sqlite import queries, writes
from gateway.stores.sqlite.migrate import DATABASE_NAME
from gateway.stores.sqlite.store import SqliteStore
from resolvers.records import Direction, EdgeType, Label

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[sqlite3.Connection]:
    store = await SqliteStore.open(tmp_path, fsync=False)
    await store.aclose()
    connection = sqlite3.connect(tmp_path / DATABASE_NAME)
    yield connection
    connection.close()


def plans_of(db: sqlite3.Connection, read: Callable[[sqlite3.Connection], object]) -> list[str]:
    """Every step of SQLite's plan for each statement ``read`` runs."""
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    try:
        read(db)
    finally:
        db.set_trace_callback(None)
    assert statements, "the read ran no statement"
    return [step[3] for sql in statements for step in db.execute(f"EXPLAIN QUERY PLAN {sql}")]


@pytest.mark.parametrize(
    ("direction", "index"), [(Direction.OUT, "edges_out"), (Direction.IN, "edges_in")]
)
@pytest.mark.parametrize("ids", [["Task:a"], ["Task:a", "Task:b"]])
def test_expanding_nodes_seeks_their_edges(
    db: sqlite3.Connection, direction: Direction, index: str, ids: list[str]
) -> None:
    plan = plans_of(db, lambda c: queries.expand(c, ids, EdgeType.PRODUCES, direction))

    assert any(f"USING INDEX {index} (" in step for step in plan), plan
    assert not any("edges_type" in step for step in plan), plan


def test_a_session_page_is_read_in_index_order(db: sqlite3.Connection) -> None:
    plan = plans_of(db, lambda c: queries.list_nodes(c, None, "s1", 500, 0))

    assert any("USING INDEX nodes_session (session=? AND live=?)" in s for s in plan), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan


def test_a_session_page_of_labels_uses_the_partial_index(db: sqlite3.Connection) -> None:
    plan = plans_of(db, lambda c: queries.list_nodes(c, [Label.ARTIFACT], "s1", 500, 0))

    assert any("nodes_session_label" in step for step in plan), plan


def test_a_session_listing_of_edges_reads_the_session_only(db: sqlite3.Connection) -> None:
    types = [EdgeType.PRODUCES, EdgeType.NEXT]
    plan = plans_of(db, lambda c: queries.list_edges(c, types, "s1", 50, 0))

    assert any("USING INDEX edges_session (session=?" in step for step in plan), plan
    assert not any("edges_type" in step for step in plan), plan


@pytest.mark.parametrize(
    ("direction", "index"), [(Direction.OUT, "edges_out"), (Direction.IN, "edges_in")]
)
def test_a_walk_to_the_nearest_target_seeks_each_step(
    db: sqlite3.Connection, direction: Direction, index: str
) -> None:
    stop = frozenset({Label.RESEARCH_GOAL})

    plan = plans_of(
        db, lambda c: queries.reach(c, ["Task:a"], EdgeType.NEXT, direction, stop, None)
    )

    edge_steps = [step for step in plan if "edges" in step and "json_each" not in step]
    assert len(edge_steps) == 2, plan  # the recursive step and the edges read at the end
    assert all(
        f"USING INDEX {index} (" in s or f"COVERING INDEX {index} (" in s for s in edge_steps
    )
    assert not any(step.startswith("SCAN nodes") for step in plan), plan
    assert sum("sqlite_autoindex_nodes_1 (id=?)" in step for step in plan) == 2, plan


def test_opening_reads_only_the_pending_nodes(db: sqlite3.Connection) -> None:
    plan = plans_of(db, writes.pending_nodes)

    assert plan[0].startswith("SCAN pending"), plan
    assert any("SEARCH nodes USING INTEGER PRIMARY KEY" in step for step in plan), plan
    assert not any(step.startswith("SCAN nodes") for step in plan), plan
