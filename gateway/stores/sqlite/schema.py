"""The SQLite store's tables and how records map to rows.

One database file, ``<dataDir>/graph.sqlite3``, in WAL mode:

* ``nodes``: one row a node; ``rid`` (insertion order) orders listings newest first; the
  columns after ``props`` are derived from the record and exist to be indexed;
* ``edges``: one row an ``(type, source, target)``; ``session`` is the endpoints' common
  session (``None`` when they differ), for per-session listings;
* ``terms``: the search index, one row per (token, node) with the best field rank of a field
  holding the token and the node's age (``newer``: minus microseconds since the epoch), so one
  token's matches are read in search order from the key alone; only live nodes are indexed.
  Its second index is by node (``terms_node``): a new node's rows are appended at its end, and
  a search in one session reads the session's nodes (``nodes_session``) and their rows there
  (schema 1 had a by-session copy of the index instead, whose rows went to a different place
  of a large B-tree in every commit). A recently written node's rows are not there yet: the
  node is in ``pending`` and its rows in memory (``gateway.stores.sqlite.tail``), until they
  are merged in a large sorted batch (schema 3);
* ``seqs`` (per-session arrival counters), ``parked`` (edges waiting for an endpoint),
  ``meta`` (schema version, migration state);
* ``changes``: per session, a number that grows whenever one of its ``nodes`` rows or of its
  ``edges`` rows (those with the session in their ``session`` column) is written or removed,
  by triggers, so whatever path writes the row. A read that finds the same number in its
  snapshot as an earlier read of the session knows neither table changed for it in between
  (``gateway.stores.sqlite.queries.SessionPages``). A session none of whose rows was ever
  written since schema 4 has no row: 0 (schema 4).
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from gateway.stores.file.codec import decode, encode
from resolvers.records import EdgeRecord, EdgeType, Label, NodeRecord
from resolvers.text import token_ranks

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

SCHEMA_VERSION: Final = 6

TABLES: Final = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS nodes (
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    key TEXT NOT NULL,
    session TEXT NOT NULL,
    created TEXT NOT NULL,
    props TEXT NOT NULL,
    seq INTEGER NOT NULL,
    live INTEGER NOT NULL,
    artifact TEXT,
    version INTEGER,
    project TEXT,
    chain TEXT,
    chain_at TEXT
);
CREATE TABLE IF NOT EXISTS edges (
    rid INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    props TEXT NOT NULL,
    session TEXT
);
CREATE TABLE IF NOT EXISTS terms (
    token TEXT NOT NULL,
    rank INTEGER NOT NULL,
    newer INTEGER NOT NULL,
    nid INTEGER NOT NULL,
    label TEXT NOT NULL,
    PRIMARY KEY (token, rank, newer, nid)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending (nid INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS seqs (session TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes (session TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS parked (
    rid INTEGER PRIMARY KEY,
    waiting_for TEXT NOT NULL,
    type TEXT NOT NULL,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    props TEXT NOT NULL
);
"""
# Created after the tables are filled when a directory is migrated (a sorted build).
INDEXES: Final = """
CREATE INDEX IF NOT EXISTS nodes_key ON nodes (key);
CREATE INDEX IF NOT EXISTS nodes_session ON nodes (session, live);
CREATE INDEX IF NOT EXISTS nodes_label ON nodes (label) WHERE live;
CREATE INDEX IF NOT EXISTS nodes_session_label ON nodes (session, label) WHERE live;
CREATE INDEX IF NOT EXISTS nodes_artifact ON nodes (artifact, version) WHERE artifact IS NOT NULL;
CREATE INDEX IF NOT EXISTS nodes_project ON nodes (project) WHERE project IS NOT NULL;
CREATE INDEX IF NOT EXISTS nodes_chain
    ON nodes (session, chain, chain_at, seq, id) WHERE chain IS NOT NULL;
CREATE INDEX IF NOT EXISTS nodes_chain_label
    ON nodes (session, chain, label, chain_at, seq, id) WHERE chain IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS edges_out ON edges (source, type, target);
CREATE INDEX IF NOT EXISTS edges_in ON edges (target, type);
CREATE INDEX IF NOT EXISTS edges_type ON edges (type);
CREATE INDEX IF NOT EXISTS edges_session ON edges (session, type) WHERE session IS NOT NULL;
CREATE INDEX IF NOT EXISTS terms_node ON terms (nid, token);
CREATE UNIQUE INDEX IF NOT EXISTS parked_edge ON parked (waiting_for, type, source, target);
"""
# The number of the last commit that changed the search index's tail (``tail``): a read
# sees the tail's entries of its snapshot by it.
META_ROWS: Final = "INSERT OR IGNORE INTO meta VALUES ('tail', '0')"
SCHEMA: Final = TABLES + INDEXES + META_ROWS
_CHANGED = (
    "INSERT INTO changes VALUES ({row}.session, 1) "
    "ON CONFLICT (session) DO UPDATE SET value = value + 1"
)


def _trigger(name: str, event: str, table: str, row: str, when: str) -> str:
    condition = f" WHEN {when}" if when else ""
    head = f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON {table}{condition}"
    return f"{head} BEGIN {_CHANGED.format(row=row)}; END"


# ``changes``, kept by the database itself: created on every open (after a migration's build,
# so its bulk load does not pay for them). One statement each (a body holds a ``;``).
TRIGGERS: Final = (
    _trigger("nodes_added", "INSERT", "nodes", "NEW", ""),
    _trigger("nodes_changed", "UPDATE", "nodes", "NEW", ""),
    _trigger("nodes_moved", "UPDATE", "nodes", "OLD", "OLD.session IS NOT NEW.session"),
    _trigger("nodes_removed", "DELETE", "nodes", "OLD", ""),
    _trigger("edges_added", "INSERT", "edges", "NEW", "NEW.session IS NOT NULL"),
    _trigger("edges_changed", "UPDATE", "edges", "NEW", "NEW.session IS NOT NULL"),
    _trigger(
        "edges_moved",
        "UPDATE",
        "edges",
        "OLD",
        "OLD.session IS NOT NULL AND OLD.session IS NOT NEW.session",
    ),
    _trigger("edges_removed", "DELETE", "edges", "OLD", "OLD.session IS NOT NULL"),
)
TAIL_VERSION: Final = "SELECT value FROM meta WHERE name = 'tail'"
# From schema 1: the by-session copy of the search index and its column go (the table is
# rewritten: ~11 s per 100k nodes on a busy machine), the by-node index is built (``INDEXES``).
UPGRADE_FROM_1: Final = (
    "DROP INDEX IF EXISTS terms_session",
    "ALTER TABLE terms DROP COLUMN session",
)


def _index_again(where: str) -> tuple[str, ...]:
    """The statements that send the live nodes ``where`` selects back to the search index's
    tail (``tail``: their rows are rebuilt from the nodes on open, merged later)."""
    return (
        f"CREATE TEMP TABLE refold AS SELECT rid FROM nodes WHERE live AND ({where})",
        "DELETE FROM terms WHERE nid IN (SELECT rid FROM refold)",
        "INSERT OR IGNORE INTO pending SELECT rid FROM refold",
        "DROP TABLE refold",
    )


# Before schema 5 search lower-cased text where it now folds it (``resolvers.text.fold``),
# which gives other tokens to non-ASCII text only: the nodes whose properties hold any.
UPGRADE_TO_5: Final = _index_again("props GLOB '*[^' || char(1) || '-' || char(127) || ']*'")
# Schema 6 drops the dot a folded "İ" leaves on its "i": the nodes whose properties hold an
# "İ" (U+0130) or a combining dot above (U+0307).
UPGRADE_TO_6: Final = _index_again("instr(props, char(304)) OR instr(props, char(775))")

# SQLite's primary result codes for a database file it cannot read as one (a damaged page).
DAMAGED: Final = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


def result_code(exc: sqlite3.Error) -> int:
    """The primary result code of a SQLite error (the extended code's low byte)."""
    return int(getattr(exc, "sqlite_errorcode", 0)) & 0xFF


NODE_COLUMNS: Final = "nodes.rid, nodes.id, label, key, nodes.session, created, props, seq"
EDGE_COLUMNS: Final = "edges.rid, edges.type, edges.source, edges.target, edges.props"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_NO_PROPS: Mapping[str, Any] = MappingProxyType({})
_LABELS = {label.value: label for label in Label}
_EDGE_TYPES = {edge_type.value: edge_type for edge_type in EdgeType}
# The chain column of a main-chain step; a subtask's steps hold "/" + the subtask id.
MAIN_CHAIN: Final = ""

NodeRow = tuple[int, str, str, str, str, str, str, int]
R = TypeVar("R", bound=tuple[Any, ...])
T = TypeVar("T")
EdgeRow = tuple[int, str, str, str, str]


def chain_of(scope_key: str | None) -> str:
    return MAIN_CHAIN if scope_key is None else "/" + scope_key


def node_values(node: NodeRecord) -> tuple[Any, ...]:
    """The ``nodes`` columns after ``rid``, in table order."""
    artifact = node.get("artifact_id") if node.label is Label.ARTIFACT else None
    project = node.get("project_id") if node.label is Label.ARTIFACT else None
    parent = node.get("parent_subtask_id")
    chain = None
    if node.seq > 0:
        chain = chain_of(str(parent) if parent is not None else None)
    return (
        node.id,
        node.label.value,
        node.key,
        node.session_id,
        node.created_at.isoformat(),
        props_text(node.props),
        node.seq,
        0 if node.deleted else 1,
        None if artifact is None else str(artifact),
        int(node.get("version", 0)) if artifact is not None else None,
        None if project is None else str(project),
        chain,
        str(node.get("chain_at", "")) if chain is not None else None,
    )


# A record built field by field through its slots: a frozen dataclass's ``__init__`` sets each
# field with a looked-up ``object.__setattr__`` (1.9 µs a node, 1.2 µs an edge; a third of that
# this way), and a 500-node subgraph builds ~1,300 of them. The result is the same record.
_NEW = object.__new__


def _setters(record: type, names: tuple[str, ...]) -> tuple[Callable[[Any, Any], None], ...]:
    """Each named field's slot setter; a record with other fields fails here, at import."""
    if names != tuple(field.name for field in fields(record)):
        raise TypeError(f"{record.__name__} has fields other than {names}")
    return tuple(getattr(record, name).__set__ for name in names)


_SET_NODE = _setters(NodeRecord, ("id", "label", "key", "session_id", "created_at", "props", "seq"))
_SET_EDGE = _setters(EdgeRecord, ("type", "source", "target", "props"))


class Decoded(Generic[R, T]):
    """The records of the rows read last, by ``rid`` (a row's first column), each with its row:
    a row read again unchanged (a session's subgraph asked again, the steps of its chains) is
    not decoded again, and the same record object is given for it (what the schema makes of
    a record is kept per record object: ``gateway.schema.identity``). Exact whatever the
    connection or transaction: a record is only ever given for the very row it was built
    from (the whole row is compared, ~1 % of decoding it), so a row changed, rolled back or
    of another database is decoded afresh. Bounded: the oldest entries go when ``capacity``
    are held, or when their properties' text (``weight`` of a row) passes ``max_weight``
    characters (a few nodes of long texts weigh as much as thousands of common ones)."""

    def __init__(
        self,
        capacity: int,
        decode: Callable[[R], T],
        weight: Callable[[R], int],
        max_weight: int,
    ) -> None:
        self._capacity = capacity
        self._decode = decode
        self._weight = weight
        self._max_weight = max_weight
        self._held = 0  # the weight of the rows held
        self._by_rid: OrderedDict[int, tuple[R, T]] = OrderedDict()
        self._lock = threading.Lock()  # readers decode on several threads

    def record_of(self, row: R) -> T:
        rid = row[0]
        found = self._by_rid.get(rid)
        if found is not None and found[0] == row:
            return found[1]
        record = self._decode(row)
        weight = self._weight
        with self._lock:
            by_rid = self._by_rid
            old = by_rid.pop(rid, None)
            if old is not None:
                self._held -= weight(old[0])
            by_rid[rid] = (row, record)  # the newest, last
            self._held += weight(row)
            while by_rid and (len(by_rid) > self._capacity or self._held > self._max_weight):
                _, (gone, _) = by_rid.popitem(last=False)
                self._held -= weight(gone)
        return record


def node_of(row: NodeRow) -> NodeRecord:
    """The record of a ``NODE_COLUMNS`` row (``rid`` first)."""
    return DECODED_NODES.record_of(row)


def edge_of(row: EdgeRow) -> EdgeRecord:
    """The record of an ``EDGE_COLUMNS`` row (``rid`` first)."""
    return DECODED_EDGES.record_of(row)


def decoded_node(row: NodeRow) -> NodeRecord:
    _, node_id, label, key, session, created, props, seq = row
    node = _NEW(NodeRecord)
    set_id, set_label, set_key, set_session, set_created, set_props, set_seq = _SET_NODE
    set_id(node, node_id)
    set_label(node, _LABELS[label])
    set_key(node, key)
    set_session(node, session)
    set_created(node, datetime.fromisoformat(created))
    set_props(node, decode(props))  # the text as it is: encoding it to bytes first cost as much
    set_seq(node, seq)
    return node


def edge_from(edge_type: str, source: str, target: str, props: str) -> EdgeRecord:
    """The record of an edge's column values (an ``edges`` or a ``parked`` row's)."""
    edge = _NEW(EdgeRecord)
    set_type, set_source, set_target, set_props = _SET_EDGE
    set_type(edge, _EDGE_TYPES[edge_type])
    set_source(edge, source)
    set_target(edge, target)
    # Most edges have no properties: one read-only empty mapping serves them all.
    set_props(edge, _NO_PROPS if props == "{}" else decode(props))
    return edge


def _decoded_edge(row: EdgeRow) -> EdgeRecord:
    return edge_from(*row[1:])


# Twice the largest subgraph page (the sessions a user has open stay decoded), and as many
# edges.
# And at most 32 Mi characters of properties each (~100 MB with their decoded records).
DECODED_TEXT: Final = 32 * 2**20
DECODED_NODES: Final = Decoded(10_000, decoded_node, lambda row: len(row[6]), DECODED_TEXT)
DECODED_EDGES: Final = Decoded(10_000, _decoded_edge, lambda row: len(row[4]), DECODED_TEXT)


def props_text(props: Mapping[str, Any]) -> str:
    # Most edges have no properties: their text needs no encoder.
    return encode(dict(props)).decode() if props else "{}"


def newer(node: NodeRecord) -> int:
    """Minus the node's age in whole microseconds: ascending = newest first (exact)."""
    return (_EPOCH - node.created_at) // _MICROSECOND


def term_rows(node: NodeRecord, rid: int) -> list[tuple[Any, ...]]:
    """The ``terms`` rows of a node (none when it is soft-deleted)."""
    if node.deleted:
        return []
    age = newer(node)
    return [
        (token, rank, age, rid, node.label.value) for token, rank in token_ranks(node.props).items()
    ]


def prefix_end(term: str) -> str | None:
    """The least text greater than every text starting with ``term`` (``None``: no bound)."""
    while term:
        following = ord(term[-1]) + 1
        if following <= 0x10FFFF:
            # Surrogates never reach the database (they are not UTF-8): skip past them.
            return term[:-1] + chr(0xE000 if 0xD800 <= following < 0xE000 else following)
        term = term[:-1]
    return None
