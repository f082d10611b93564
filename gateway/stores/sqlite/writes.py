"""The write primitives as SQL over the writer's connection (synchronous; run on its thread),
inside the transaction ``SqliteStore.transaction`` began."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.stores.sqlite.queries import among_ids
from gateway.stores.sqlite.schema import (
    EDGE_COLUMNS,
    NODE_COLUMNS,
    TAIL_VERSION,
    edge_from,
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
_INSERT_NEW_TERM = "INSERT INTO terms VALUES (?, ?, ?, ?, ?)"
_INSERT_PENDING = "INSERT OR IGNORE INTO pending VALUES (?)"


def stored_nodes(db: sqlite3.Connection, ids: Sequence[str]) -> dict[str, Stored]:
    """The stored nodes among ``ids`` with their ``rid``s (absent ids are left out)."""
    among, arguments = among_ids("id", ids)
    rows = db.execute(f"SELECT {NODE_COLUMNS} FROM nodes WHERE {among}", arguments)
    return {row[1]: (row[0], node_of(row)) for row in rows}


def put_node(
    db: sqlite3.Connection, node: NodeRecord, stored: Stored | None, pending: bool
) -> tuple[int, list[tuple[Any, ...]] | None]:
    """Store ``node`` over ``stored`` (what the database holds under its id: the caller read
    it in this transaction; ``pending``: its search rows are in the tail, not ``terms``). Its
    ``rid``, and its search rows when they are to be (or stay) in the tail (``None``: the
    search index is as it was, or the node has no rows any more and none is pending)."""
    if stored is None:
        rid = db.execute(_INSERT_NODE, node_values(node)).lastrowid
        assert rid is not None
        rows = term_rows(node, rid)
        if not rows:
            return rid, None
        # Not into ``terms``: each row would land on its own page of a large B-tree.
        db.execute(_INSERT_PENDING, (rid,))
        return rid, rows
    rid, old = stored
    if old.session_id != node.session_id:
        # Atomic with the write: the writer's transaction holds the database's write lock.
        raise KeyOwnedByOtherSessionError(node.id, node.key, old.session_id, node.session_id)
    if old == node:
        return rid, None
    db.execute(_UPDATE_NODE, (*node_values(node), rid))
    rows = term_rows(node, rid)
    if pending:
        return rid, rows
    if set(rows) == set(term_rows(old, rid)):
        return rid, None
    # A node whose rows are in ``terms`` moves to the tail whole: a node's rows are in one
    # place, so a search counts and ranks it from one of them.
    db.execute("DELETE FROM terms WHERE nid = ?", (rid,))
    if not rows:
        return rid, None
    db.execute(_INSERT_PENDING, (rid,))
    return rid, rows


def delete_node(db: sqlite3.Connection, node_id: str, rid: int) -> None:
    db.execute("DELETE FROM edges WHERE source = ?1 OR target = ?1", (node_id,))
    db.execute("DELETE FROM terms WHERE nid = ?", (rid,))
    db.execute("DELETE FROM pending WHERE nid = ?", (rid,))
    db.execute("DELETE FROM nodes WHERE rid = ?", (rid,))


def merge_rows(db: sqlite3.Connection, rows: list[tuple[Any, ...]], rids: list[int]) -> None:
    """Move pending nodes' search rows into ``terms`` (sorted: neighbouring rows share pages)
    and the nodes out of ``pending``, inside the caller's transaction."""
    rows.sort()
    db.executemany(_INSERT_NEW_TERM, rows)
    db.executemany("DELETE FROM pending WHERE nid = ?", [(rid,) for rid in rids])


def pending_nodes(db: sqlite3.Connection) -> list[Stored]:
    """The pending nodes, with their ``rid``s."""
    # ``pending`` outermost: ordered by ``rid`` the planner would rather read every node in
    # the store and look each up in ``pending`` (on every open).
    rows = db.execute(
        f"SELECT {NODE_COLUMNS} FROM pending CROSS JOIN nodes ON nodes.rid = pending.nid"
        " ORDER BY pending.nid"
    )
    return [(row[0], node_of(row)) for row in rows]


def tail_version(db: sqlite3.Connection) -> int:
    (value,) = db.execute(TAIL_VERSION).fetchone()
    return int(value)


def set_tail_version(db: sqlite3.Connection, version: int) -> None:
    db.execute("UPDATE meta SET value = ? WHERE name = 'tail'", (str(version),))


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
    return [edge_from(*row[1:]) for row in sorted(rows)], any_parked(db)


def any_parked(db: sqlite3.Connection) -> bool:
    (found,) = db.execute("SELECT EXISTS (SELECT 1 FROM parked)").fetchone()
    return bool(found)
