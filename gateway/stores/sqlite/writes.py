"""The write primitives as SQL over the writer's connection (synchronous; run on its thread),
inside the transaction ``SqliteStore.transaction`` began."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.stores.sqlite.queries import get_node
from gateway.stores.sqlite.schema import (
    EDGE_COLUMNS,
    edge_of,
    node_values,
    props_text,
    term_rows,
)
from resolvers.errors import KeyOwnedByOtherSessionError

if TYPE_CHECKING:
    import sqlite3

    from resolvers.records import EdgeRecord, EdgeType, NodeRecord

_INSERT_NODE = (
    "INSERT INTO nodes (id, label, key, session, created, props, seq, live, artifact, version,"
    " project, chain, chain_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE_NODE = (
    "UPDATE nodes SET id = ?, label = ?, key = ?, session = ?, created = ?, props = ?, seq = ?,"
    " live = ?, artifact = ?, version = ?, project = ?, chain = ?, chain_at = ? WHERE rid = ?"
)
_INSERT_TERM = "INSERT OR REPLACE INTO terms VALUES (?, ?, ?, ?, ?)"
_DELETE_TERM = "DELETE FROM terms WHERE token = ? AND rank = ? AND newer = ? AND nid = ?"


def put_node(db: sqlite3.Connection, node: NodeRecord) -> None:
    stored = get_node(db, node.id)
    if stored is None:
        rid = db.execute(_INSERT_NODE, node_values(node)).lastrowid
        assert rid is not None
        db.executemany(_INSERT_TERM, term_rows(node, rid))
        return
    rid, old = stored
    if old.session_id != node.session_id:
        # Atomic with the write: the writer's transaction holds the database's write lock.
        raise KeyOwnedByOtherSessionError(node.id, node.key, old.session_id, node.session_id)
    if old == node:
        return
    db.execute(_UPDATE_NODE, (*node_values(node), rid))
    old_terms, new_terms = set(term_rows(old, rid)), set(term_rows(node, rid))
    db.executemany(_DELETE_TERM, [row[:4] for row in old_terms - new_terms])
    db.executemany(_INSERT_TERM, new_terms - old_terms)


def delete_node(db: sqlite3.Connection, node_id: str) -> bool:
    stored = get_node(db, node_id)
    if stored is None:
        return False
    rid, _ = stored
    db.execute("DELETE FROM edges WHERE source = ?1 OR target = ?1", (node_id,))
    db.execute("DELETE FROM terms WHERE nid = ?", (rid,))
    db.execute("DELETE FROM nodes WHERE rid = ?", (rid,))
    return True


def put_edge(db: sqlite3.Connection, edge: EdgeRecord) -> bool:
    sessions = dict(
        db.execute(
            "SELECT id, session FROM nodes WHERE id IN (?, ?)", (edge.source, edge.target)
        ).fetchall()
    )
    if edge.source not in sessions or edge.target not in sessions:
        raise ValueError(f"edge endpoint missing: {edge.identity}")
    row = db.execute(
        f"SELECT {EDGE_COLUMNS} FROM edges WHERE source = ? AND type = ? AND target = ?",
        (edge.source, edge.type.value, edge.target),
    ).fetchone()
    if row is not None:
        if edge_of(row) != edge:
            db.execute(
                "UPDATE edges SET props = ? WHERE source = ? AND type = ? AND target = ?",
                (props_text(edge.props), edge.source, edge.type.value, edge.target),
            )
        return False
    common = sessions[edge.source] if sessions[edge.source] == sessions[edge.target] else None
    db.execute(
        "INSERT INTO edges (type, source, target, props, session) VALUES (?, ?, ?, ?, ?)",
        (edge.type.value, edge.source, edge.target, props_text(edge.props), common),
    )
    return True


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


def take_parked(db: sqlite3.Connection, node_id: str) -> list[EdgeRecord]:
    rows = db.execute(
        "DELETE FROM parked WHERE waiting_for = ? RETURNING rid, type, source, target, props",
        (node_id,),
    ).fetchall()
    return [edge_of(row[1:]) for row in sorted(rows)]
