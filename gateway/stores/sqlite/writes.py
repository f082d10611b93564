"""The write primitives as SQL over the writer's connection (synchronous; run on its thread),
inside the transaction ``SqliteStore.transaction`` began."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.stores.sqlite.queries import among_ids
from gateway.stores.sqlite.schema import (
    EDGE_COLUMNS,
    NODE_COLUMNS,
    edge_of,
    node_of,
    node_values,
    props_text,
    term_rows,
)
from resolvers.errors import KeyOwnedByOtherSessionError

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence

    from resolvers.records import EdgeRecord, EdgeType, NodeRecord

    Stored = tuple[int, NodeRecord]  # a stored node and its ``rid``

_INSERT_NODE = (
    "INSERT INTO nodes (id, label, key, session, created, props, seq, live, artifact, version,"
    " project, chain, chain_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE_NODE = (
    "UPDATE nodes SET id = ?, label = ?, key = ?, session = ?, created = ?, props = ?, seq = ?,"
    " live = ?, artifact = ?, version = ?, project = ?, chain = ?, chain_at = ? WHERE rid = ?"
)
_INSERT_TERM = "INSERT OR REPLACE INTO terms VALUES (?, ?, ?, ?, ?)"
_INSERT_NEW_TERM = "INSERT INTO terms VALUES (?, ?, ?, ?, ?)"
_DELETE_TERM = "DELETE FROM terms WHERE token = ? AND rank = ? AND newer = ? AND nid = ?"


def stored_nodes(db: sqlite3.Connection, ids: Sequence[str]) -> dict[str, Stored]:
    """The stored nodes among ``ids`` with their ``rid``s (absent ids are left out)."""
    among, arguments = among_ids("id", ids)
    rows = db.execute(f"SELECT {NODE_COLUMNS} FROM nodes WHERE {among}", arguments)
    return {row[1]: (row[0], node_of(row)) for row in rows}


def put_node(db: sqlite3.Connection, node: NodeRecord, stored: Stored | None) -> int:
    """Store ``node`` over ``stored`` (what the database holds under its id: the caller read
    it in this transaction); its ``rid``."""
    if stored is None:
        rid = db.execute(_INSERT_NODE, node_values(node)).lastrowid
        assert rid is not None
        # A new rid: none of its rows can be there already.
        db.executemany(_INSERT_NEW_TERM, term_rows(node, rid))
        return rid
    rid, old = stored
    if old.session_id != node.session_id:
        # Atomic with the write: the writer's transaction holds the database's write lock.
        raise KeyOwnedByOtherSessionError(node.id, node.key, old.session_id, node.session_id)
    if old == node:
        return rid
    db.execute(_UPDATE_NODE, (*node_values(node), rid))
    old_terms, new_terms = set(term_rows(old, rid)), set(term_rows(node, rid))
    db.executemany(_DELETE_TERM, [row[:4] for row in old_terms - new_terms])
    db.executemany(_INSERT_TERM, new_terms - old_terms)
    return rid


def delete_node(db: sqlite3.Connection, node_id: str, rid: int) -> None:
    db.execute("DELETE FROM edges WHERE source = ?1 OR target = ?1", (node_id,))
    db.execute("DELETE FROM terms WHERE nid = ?", (rid,))
    db.execute("DELETE FROM nodes WHERE rid = ?", (rid,))


def put_edge(db: sqlite3.Connection, edge: EdgeRecord, sessions: tuple[str, str]) -> bool:
    """Create or update ``edge`` between nodes of these ``sessions`` (the caller checked that
    both exist)."""
    props = props_text(edge.props)
    common = sessions[0] if sessions[0] == sessions[1] else None
    created = db.execute(
        "INSERT INTO edges (type, source, target, props, session) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (source, type, target) DO NOTHING",
        (edge.type.value, edge.source, edge.target, props, common),
    ).rowcount
    if created:
        return True
    row = db.execute(
        f"SELECT {EDGE_COLUMNS} FROM edges WHERE source = ? AND type = ? AND target = ?",
        (edge.source, edge.type.value, edge.target),
    ).fetchone()
    if edge_of(row) != edge:
        db.execute(
            "UPDATE edges SET props = ? WHERE source = ? AND type = ? AND target = ?",
            (props, edge.source, edge.type.value, edge.target),
        )
    return False


def delete_edge(db: sqlite3.Connection, edge_type: EdgeType, source: str, target: str) -> bool:
    cursor = db.execute(
        "DELETE FROM edges WHERE source = ? AND type = ? AND target = ?",
        (source, edge_type.value, target),
    )
    return cursor.rowcount > 0


def next_seq(db: sqlite3.Connection, session_id: str) -> int:
    (value,) = db.execute(
        "INSERT INTO seqs VALUES (?, 1) ON CONFLICT (session) DO UPDATE SET value = value + 1"
        " RETURNING value",
        (session_id,),
    ).fetchone()
    return int(value)


def park_edge(db: sqlite3.Connection, edge: EdgeRecord, waiting_for: str) -> None:
    db.execute(
        "INSERT OR IGNORE INTO parked (waiting_for, type, source, target, props)"
        " VALUES (?, ?, ?, ?, ?)",
        (waiting_for, edge.type.value, edge.source, edge.target, props_text(edge.props)),
    )


def take_parked(db: sqlite3.Connection, node_id: str) -> tuple[list[EdgeRecord], bool]:
    """The edges parked for ``node_id``, removed; and whether any edge is still parked."""
    rows = db.execute(
        "DELETE FROM parked WHERE waiting_for = ? RETURNING rid, type, source, target, props",
        (node_id,),
    ).fetchall()
    return [edge_of(row[1:]) for row in sorted(rows)], any_parked(db)


def any_parked(db: sqlite3.Connection) -> bool:
    (found,) = db.execute("SELECT EXISTS (SELECT 1 FROM parked)").fetchone()
    return bool(found)
