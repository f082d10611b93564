"""What can still be read of a damaged database: the rescue ``export-graph`` falls back to.

A damaged page fails every statement that reads it, and a table read whole (``capture``) fails
with it. Here each table is read by ``rid`` ranges: a range whose read fails is halved until
the ranges that read are read and the rows left out are the single ``rid``s on damaged pages.
Edges that lose an end with them are left out too (an import refuses them). The database is
opened read-only: nothing is written into a damaged file. It holds the directory's lock (the
caller's) and runs on a thread of its own (blocking).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from gateway.stores.file.codec import Captured
from gateway.stores.sqlite.schema import (
    DAMAGED,
    EDGE_COLUMNS,
    NODE_COLUMNS,
    decoded_node,
    edge_from,
    result_code,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

T = TypeVar("T")


@dataclass
class Salvaged:
    """What a salvage left out: per table the ``rid`` ranges on damaged pages, the edges that
    lost an end, the tables that could not be read at all."""

    lost: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    dangling: int = 0
    unreadable: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = [
            f"{table} rows {', '.join(f'{lo}-{hi}' if lo != hi else str(lo) for lo, hi in ranges)}"
            for table, ranges in self.lost.items()
            if ranges
        ]
        if self.dangling:
            parts.append(f"{self.dangling} edge(s) whose end was lost")
        parts.extend(f"the whole {table} table" for table in self.unreadable)
        return "; ".join(parts) or "nothing"


def salvage(path: Path) -> tuple[Captured, Salvaged]:
    """Every record of the database at ``path`` that can still be read (``capture``'s)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    salvaged = Salvaged()
    try:
        db.execute("BEGIN")  # one snapshot
        nodes = _rows(db, "nodes", NODE_COLUMNS, decoded_node, salvaged)
        edges = _rows(db, "edges", EDGE_COLUMNS, lambda row: edge_from(*row[1:]), salvaged)
        seq: dict[str, int] = dict(_whole(db, "SELECT session, value FROM seqs", "seqs", salvaged))
        parked = [
            (row[0], edge_from(*row[1:]))
            for row in _whole(
                db,
                "SELECT waiting_for, type, source, target, props FROM parked ORDER BY rid",
                "parked",
                salvaged,
            )
        ]
    finally:
        db.close()
    if {"nodes", "edges"} <= set(salvaged.unreadable):
        raise ValueError(f"nothing of {path} can be read as a graph")
    ids = {node.id for node in nodes}
    kept = [edge for edge in edges if edge.source in ids and edge.target in ids]
    salvaged.dangling = len(edges) - len(kept)
    return Captured(nodes, kept, seq, parked), salvaged


def _rows(
    db: sqlite3.Connection,
    table: str,
    columns: str,
    decode: Callable[[Any], T],
    salvaged: Salvaged,
) -> list[T]:
    found: list[T] = []
    last = _last_rid(db, table)
    if last is None:
        salvaged.unreadable.append(table)
        return found
    lost = salvaged.lost.setdefault(table, [])
    statement = f"SELECT {columns} FROM {table} WHERE {table}.rid BETWEEN ? AND ? ORDER BY rid"
    pending = [(1, last)]  # ranges still to read, the lowest last
    while pending:
        lo, hi = pending.pop()
        try:
            rows = db.execute(statement, (lo, hi)).fetchall()
        except sqlite3.DatabaseError as exc:
            if result_code(exc) not in DAMAGED:
                raise
            if lo == hi:
                if lost and lost[-1][1] == lo - 1:
                    lost[-1] = (lost[-1][0], lo)
                else:
                    lost.append((lo, lo))
                continue
            middle = (lo + hi) // 2
            pending += [(middle + 1, hi), (lo, middle)]
            continue
        found.extend(decode(row) for row in rows)
    return found


def _last_rid(db: sqlite3.Connection, table: str) -> int | None:
    """The table's largest ``rid``, read from the table or, past a damaged page of it, from any
    of its indexes (each holds every row's ``rid``); ``None`` when none can be read."""
    attempts = [f"SELECT max(rid) FROM {table}"]
    try:
        indexes = db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?"
            " AND sql IS NOT NULL AND sql NOT LIKE '% WHERE %'",  # whole, not partial
            (table,),
        ).fetchall()
    except sqlite3.DatabaseError as exc:
        if result_code(exc) not in DAMAGED:
            raise
        return None  # not even the schema can be read
    attempts += [f"SELECT max(rid) FROM {table} INDEXED BY {name}" for (name,) in indexes]
    for statement in attempts:
        try:
            (last,) = db.execute(statement).fetchone()
        except sqlite3.DatabaseError as exc:
            if result_code(exc) not in DAMAGED:
                raise
            continue
        return int(last or 0)
    return None


def _whole(db: sqlite3.Connection, statement: str, table: str, salvaged: Salvaged) -> list[Any]:
    try:
        return db.execute(statement).fetchall()
    except sqlite3.DatabaseError as exc:
        if result_code(exc) not in DAMAGED:
            raise
        salvaged.unreadable.append(table)
        return []
