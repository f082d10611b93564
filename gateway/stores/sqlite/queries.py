"""The read primitives as SQL over one connection (synchronous; run on its thread).

Every list argument is passed as one JSON array (``json_each``): any length, one statement.
A primitive of several statements (a page and its total, a chain position's two neighbours,
a search's token ranges) reads them in one read transaction (``_one_snapshot``): a write
committed in between cannot make its parts disagree.
"""

from __future__ import annotations

import heapq
import json
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from gateway.stores.file.codec import Captured
from gateway.stores.sqlite.schema import (
    EDGE_COLUMNS,
    NODE_COLUMNS,
    TAIL_VERSION,
    chain_of,
    edge_from,
    edge_of,
    node_of,
    prefix_end,
)
from resolvers.records import (
    Direction,
    EdgeRecord,
    EdgeType,
    Label,
    NodeRecord,
    Page,
    SearchHit,
)

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Iterable, Sequence

    from gateway.stores.sqlite.tail import Tail, TailHit
    from resolvers.store import ChainPosition

_NODE = f"SELECT {NODE_COLUMNS} FROM nodes"
# ``NODE_COLUMNS`` where an edge's columns are read too (both tables have ``props``).
_FAR_NODE_COLUMNS = ", ".join(
    f"nodes.{column.split('.')[-1]}" for column in NODE_COLUMNS.split(", ")
)
_PLACEHOLDERS = 64

P = ParamSpec("P")
T = TypeVar("T")


def _one_snapshot(
    read: Callable[Concatenate[sqlite3.Connection, P], T],
) -> Callable[Concatenate[sqlite3.Connection, P], T]:
    """``read``'s statements in one read transaction (inside a transaction already open, as a
    write's, they are in that one)."""

    def in_one(db: sqlite3.Connection, /, *args: P.args, **kwargs: P.kwargs) -> T:
        if db.in_transaction:
            return read(db, *args, **kwargs)
        begin_read(db)
        try:
            return read(db, *args, **kwargs)
        finally:
            end_read(db)

    return in_one


def begin_read(db: sqlite3.Connection) -> None:
    db.execute("BEGIN")  # the state is taken at its first read


def end_read(db: sqlite3.Connection) -> None:
    if db.in_transaction:
        db.execute("ROLLBACK")  # a read's end: nothing to keep or undo


def _json(values: Iterable[str]) -> str:
    return json.dumps(list(values))


def among_ids(column: str, values: Sequence[str]) -> tuple[str, Sequence[str]]:
    """``column IN (…)`` for ``values``: placeholders for a few (no JSON to build and parse),
    one JSON array for many (any length, one statement)."""
    if len(values) <= _PLACEHOLDERS:
        return f"{column} IN ({', '.join('?' * len(values))})", values
    return f"{column} IN (SELECT value FROM json_each(?))", [_json(values)]


def get_nodes(db: sqlite3.Connection, ids: Sequence[str]) -> list[NodeRecord | None]:
    among, arguments = among_ids("id", ids)
    rows = db.execute(f"{_NODE} WHERE {among}", arguments)
    found = {node.id: node for node in map(node_of, rows)}
    return [found.get(node_id) for node_id in ids]


def nodes_by_key(
    db: sqlite3.Connection, key: str, labels: Sequence[Label] | None, session_id: str | None
) -> list[NodeRecord]:
    rows = db.execute(f"{_NODE} WHERE key = ? ORDER BY rid", (key,))
    return [
        node
        for node in map(node_of, rows)
        if (labels is None or node.label in labels)
        and (session_id is None or node.session_id == session_id)
    ]


def artifact_versions(
    db: sqlite3.Connection, artifact_id: str, session_id: str | None
) -> list[NodeRecord]:
    rows = db.execute(
        f"{_NODE} WHERE artifact = ?1 AND (?2 IS NULL OR session = ?2) ORDER BY version, rid",
        (artifact_id, session_id),
    )
    by_version = {node.get("version", 0): node for node in map(node_of, rows)}
    return list(by_version.values())


def expand(
    db: sqlite3.Connection, ids: Sequence[str], edge_type: EdgeType, direction: Direction
) -> list[EdgeRecord]:
    near, index = ("source", "edges_out") if direction is Direction.OUT else ("target", "edges_in")
    distinct = list(dict.fromkeys(ids))
    if len(distinct) == 1:
        # The index is named: left to itself the planner reads ``edges_type`` in ``rid`` order
        # to spare the sort, i.e. every edge of the type in the store (100 ms at 1M nodes).
        rows = db.execute(
            f"SELECT {EDGE_COLUMNS} FROM edges INDEXED BY {index}"
            f" WHERE {near} = ? AND type = ? ORDER BY rid",
            (distinct[0], edge_type.value),
        )
        return [edge_of(row) for row in rows]
    rows = db.execute(
        f"SELECT {EDGE_COLUMNS} FROM json_each(?) AS wanted"
        f" JOIN edges ON edges.{near} = wanted.value AND edges.type = ? ORDER BY wanted.key, rid",
        (_json(distinct), edge_type.value),
    )
    return [edge_of(row) for row in rows]


def _walk_to(direction: Direction) -> tuple[str, str, str]:
    """``near``, ``far`` and the index of a walk in ``direction``."""
    if direction is Direction.OUT:
        return "source", "target", "edges_out"
    return "target", "source", "edges_in"


def reach(
    db: sqlite3.Connection,
    ids: Sequence[str],
    edge_type: EdgeType,
    direction: Direction,
    stop: Iterable[Label],
    session_id: str | None,
) -> tuple[list[EdgeRecord], list[NodeRecord]]:
    """``ReachReader.reach`` in one recursive statement: the nodes walked through (each once:
    ``UNION``), then their edges in insertion order and the nodes at the far ends."""
    near, far, index = _walk_to(direction)
    rows = db.execute(
        "WITH RECURSIVE walked(id) AS (SELECT value FROM json_each(?1) UNION"
        f" SELECT nodes.id FROM walked JOIN edges INDEXED BY {index}"
        f" ON edges.{near} = walked.id AND edges.type = ?2"
        f" JOIN nodes ON nodes.id = edges.{far}"
        " WHERE nodes.live AND (?3 IS NULL OR nodes.session = ?3)"
        " AND nodes.label NOT IN (SELECT value FROM json_each(?4)))"
        f" SELECT {EDGE_COLUMNS}, {_FAR_NODE_COLUMNS} FROM walked JOIN edges INDEXED BY {index}"
        f" ON edges.{near} = walked.id AND edges.type = ?2"
        f" LEFT JOIN nodes ON nodes.id = edges.{far} ORDER BY edges.rid",
        (_json(ids), edge_type.value, session_id, _json(label.value for label in stop)),
    )
    edges: list[EdgeRecord] = []
    nodes: dict[str, NodeRecord] = {}
    for row in rows:
        edges.append(edge_of(row[:5]))
        if row[6] is not None and row[6] not in nodes:
            nodes[row[6]] = node_of(row[5:])
    return edges, list(nodes.values())


def reaches(
    db: sqlite3.Connection,
    ids: Sequence[str],
    edge_type: EdgeType,
    direction: Direction,
    stop: Iterable[Label],
    session_id: str | None,
    avoid: Iterable[str],
    walk_on: bool,
) -> bool:
    """``ReachReader.reaches`` in one statement (recursive when it walks on): the walk, then
    whether an edge out of it comes to a node of ``stop``."""
    near, far, index = _walk_to(direction)
    scoped = (
        "nodes.live AND (?3 IS NULL OR nodes.session = ?3)"
        " AND nodes.id NOT IN (SELECT value FROM json_each(?5))"
    )
    # CROSS JOIN keeps the loops in this order: left to itself, the planner scans the whole
    # index for the ``EXISTS`` and looks each edge up in the walk (0.3 s at 1M nodes).
    step = (
        f" FROM walked CROSS JOIN edges INDEXED BY {index} ON edges.{near} = walked.id"
        f" AND edges.type = ?2 CROSS JOIN nodes ON nodes.id = edges.{far} WHERE {scoped}"
    )
    stops = "(SELECT value FROM json_each(?4))"
    walked = (
        "WITH RECURSIVE walked(id) AS (SELECT value FROM json_each(?1) UNION"
        f" SELECT nodes.id{step} AND nodes.label NOT IN {stops})"
        if walk_on
        else "WITH walked(id) AS (SELECT value FROM json_each(?1))"
    )
    (found,) = db.execute(
        f"{walked} SELECT EXISTS (SELECT 1{step} AND nodes.label IN {stops})",
        (
            _json(ids),
            edge_type.value,
            session_id,
            _json(label.value for label in stop),
            _json(avoid),
        ),
    ).fetchone()
    return bool(found)


def edges_among(
    db: sqlite3.Connection, ids: Sequence[str], types: Sequence[EdgeType] | None
) -> list[EdgeRecord]:
    wanted = _json(dict.fromkeys(ids))
    rows = db.execute(
        f"SELECT {EDGE_COLUMNS} FROM json_each(?1) AS wanted"
        " JOIN edges ON edges.source = wanted.value"
        " WHERE edges.target IN (SELECT value FROM json_each(?1))"
        " AND (?2 IS NULL OR edges.type IN (SELECT value FROM json_each(?2)))"
        " ORDER BY wanted.key, rid",
        (wanted, None if types is None else _json([t.value for t in types])),
    )
    return [edge_of(row) for row in rows]


@_one_snapshot
def list_nodes(
    db: sqlite3.Connection,
    labels: Sequence[Label] | None,
    session_id: str | None,
    limit: int,
    offset: int,
) -> Page[NodeRecord]:
    if labels is None and session_id is None:
        return Page([], 0, False)
    # ``live = 1`` (live is 0 or 1) lets ``nodes_session (session, live)`` hand a session's
    # rows over newest first, so a page of a large session is not a sort of all its rows;
    # the bare ``live`` keeps the partial indexes (``WHERE live``) usable for labels.
    where, arguments = ("live" if labels is not None else "live = 1"), []
    if session_id is not None:
        where += " AND session = ?"
        arguments.append(session_id)
    if labels is not None:
        where += " AND label IN (SELECT value FROM json_each(?))"
        arguments.append(_json([label.value for label in labels]))
    (total,) = db.execute(f"SELECT count(*) FROM nodes WHERE {where}", arguments).fetchone()
    rows = db.execute(
        f"{_NODE} WHERE {where} ORDER BY rid DESC LIMIT ? OFFSET ?", (*arguments, limit, offset)
    )
    items = [node_of(row) for row in rows]
    return Page(items, total, offset + len(items) < total)


@_one_snapshot
def list_edges(
    db: sqlite3.Connection,
    types: Sequence[EdgeType],
    session_id: str | None,
    limit: int,
    offset: int,
) -> Page[EdgeRecord]:
    # Newest first (``rid``: creation order, kept when an edge's props are replaced), whatever
    # the order the types are given in. In one session the index by session is named: with
    # ``?2 IS NULL OR …`` the planner read every edge of the type in the store (1 s at 1M
    # nodes).
    arguments = [_json([t.value for t in dict.fromkeys(types)])]
    edges = "edges ON edges.type = wanted.value"
    if session_id is not None:
        edges = "edges INDEXED BY edges_session ON edges.type = wanted.value AND edges.session = ?"
        arguments.append(session_id)
    where = (
        f" FROM json_each(?) AS wanted JOIN {edges}"
        " JOIN nodes AS s ON s.id = edges.source AND s.live"
        " JOIN nodes AS t ON t.id = edges.target AND t.live"
    )
    (total,) = db.execute(f"SELECT count(*){where}", arguments).fetchone()
    rows = db.execute(
        f"SELECT {EDGE_COLUMNS}{where} ORDER BY edges.rid DESC LIMIT ? OFFSET ?",
        (*arguments, limit, offset),
    )
    items = [edge_of(row) for row in rows]
    return Page(items, total, offset + len(items) < total)


# A page holding at least 1 / SESSION_EDGES_SHARE of its session's live nodes reads the
# session's edges (see ``session_page``).
SESSION_EDGES_SHARE = 2


SessionPage = tuple[Page[NodeRecord], tuple[EdgeRecord, ...]]


class SessionPages:
    """The session pages read last (``session_page``), each with the session's ``changes``
    number of the snapshot it was read in. A snapshot that finds the same number holds the
    same rows for the session (the number grows with every write of one of them, and only
    committed numbers are seen by a reader), so the page read then is its page: the explorer
    asking for the same session again reads one row instead of ~1,200. Only for reads outside
    a write (a write's own uncommitted number can be rolled back and reused). Bounded by the
    records it holds and by the text of their properties (``text_weight``: a few sessions of
    long summaries weigh as much as many common ones); the oldest page goes first, and a page
    over either bound alone is not kept."""

    def __init__(self, records: int, text: int) -> None:
        self._bounds = (records, text)
        self._held = [0, 0]  # records, text
        self._pages: OrderedDict[tuple[str, int], tuple[int, SessionPage, tuple[int, int]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()  # readers run on several threads

    def get(self, session_id: str, limit: int, changes: int) -> SessionPage | None:
        found = self._pages.get((session_id, limit))
        return found[1] if found is not None and found[0] == changes else None

    def put(self, session_id: str, limit: int, changes: int, page: SessionPage) -> None:
        nodes, edges = page
        records, text = self._bounds
        size = len(nodes.items) + len(edges)
        if size > records:
            return
        weight = (size, sum(map(text_weight, nodes.items)) + sum(map(text_weight, edges)))
        if weight[1] > text:
            return
        held = self._held
        with self._lock:
            old = self._pages.pop((session_id, limit), None)
            if old is not None:
                held[0] -= old[2][0]
                held[1] -= old[2][1]
            self._pages[(session_id, limit)] = (changes, page, weight)
            held[0] += weight[0]
            held[1] += weight[1]
            while held[0] > records or held[1] > text:
                _, (_, _, gone) = self._pages.popitem(last=False)
                held[0] -= gone[0]
                held[1] -= gone[1]


def text_weight(record: NodeRecord | EdgeRecord) -> int:
    """The characters of a record's text properties (its strings, and those of its lists)."""
    weight = 0
    for value in record.props.values():
        if isinstance(value, str):
            weight += len(value)
        elif isinstance(value, list | tuple):
            weight += sum(len(item) for item in value if isinstance(item, str))
    return weight


def session_changes(db: sqlite3.Connection, session_id: str) -> int:
    """The session's ``changes`` number in this snapshot (0: none of its rows ever written)."""
    row = db.execute("SELECT value FROM changes WHERE session = ?", (session_id,)).fetchone()
    return 0 if row is None else int(row[0])


@_one_snapshot
def session_page(
    db: sqlite3.Connection, session_id: str, limit: int, pages: SessionPages | None = None
) -> SessionPage:
    """``SessionPageReader.session_page``; ``pages``: a reader's pages read before. A page that
    holds most of the session's live nodes (a whole session, usually) takes the edges of the
    session (``edges_session``: every edge between two of its nodes, and only those, has the
    session in its ``session`` column) and keeps those between two of the page's: a few more
    rows than it keeps, read in index order, where ``edges_among`` seeks each id's edges and
    checks each far end against the list (2.5 times the time for 500 nodes). A page of a much
    larger session asks ``edges_among``."""
    if pages is None:
        return _session_page(db, session_id, limit)
    changes = session_changes(db, session_id)
    found = pages.get(session_id, limit, changes)
    if found is None:
        found = _session_page(db, session_id, limit)
        pages.put(session_id, limit, changes, found)
    return found


def _session_page(db: sqlite3.Connection, session_id: str, limit: int) -> SessionPage:
    page = list_nodes(db, None, session_id, limit, 0)
    ids = [node.id for node in page.items]
    if page.total > SESSION_EDGES_SHARE * len(ids):
        return page, tuple(edges_among(db, ids, None))
    among = set(ids)
    rows = db.execute(
        f"SELECT {EDGE_COLUMNS} FROM edges INDEXED BY edges_session WHERE session = ?",
        (session_id,),
    ).fetchall()
    return page, tuple(edge_of(row) for row in rows if row[2] in among and row[3] in among)


def session_node_ids(db: sqlite3.Connection, session_id: str) -> list[str]:
    rows = db.execute("SELECT id FROM nodes WHERE session = ? ORDER BY rid", (session_id,))
    return [node_id for (node_id,) in rows]


def project_artifacts(db: sqlite3.Connection, project_id: str) -> list[NodeRecord]:
    rows = db.execute(f"{_NODE} WHERE project = ? ORDER BY rid", (project_id,))
    return [node_of(row) for row in rows]


_CHAIN = f"{_NODE} INDEXED BY nodes_chain WHERE session = ? AND chain = ?"


def chain_members(
    db: sqlite3.Connection, session_id: str, scope_key: str | None
) -> list[NodeRecord]:
    rows = db.execute(f"{_CHAIN} ORDER BY chain_at, seq, id", (session_id, chain_of(scope_key)))
    return [node_of(row) for row in rows]


@_one_snapshot
def chains_members(
    db: sqlite3.Connection, session_id: str, scope_keys: Sequence[str | None]
) -> list[list[NodeRecord]]:
    return [chain_members(db, session_id, key) for key in scope_keys]


@_one_snapshot
def chain_neighbours(
    db: sqlite3.Connection, session_id: str, scope_key: str | None, position: ChainPosition
) -> tuple[NodeRecord | None, NodeRecord | None]:
    chain = (session_id, chain_of(scope_key), *position)
    before = db.execute(
        f"{_CHAIN} AND (chain_at, seq) < (?, ?) ORDER BY chain_at DESC, seq DESC, id DESC LIMIT 1",
        chain,
    ).fetchone()
    after = db.execute(
        f"{_CHAIN} AND (chain_at, seq) > (?, ?) ORDER BY chain_at, seq, id LIMIT 1", chain
    ).fetchone()
    return (
        None if before is None else node_of(before),
        None if after is None else node_of(after),
    )


def chain_before(
    db: sqlite3.Connection,
    session_id: str,
    scope_key: str | None,
    position: ChainPosition,
    after: ChainPosition | None,
    label: Label | None,
    limit: int | None,
) -> list[NodeRecord]:
    sql = f"{_NODE} WHERE session = ? AND chain = ?"
    arguments: list[Any] = [session_id, chain_of(scope_key)]
    if label is not None:
        sql = f"{_NODE} INDEXED BY nodes_chain_label WHERE session = ? AND chain = ? AND label = ?"
        arguments.append(label.value)
    sql += " AND (chain_at, seq) < (?, ?)"
    arguments.extend(position)
    if after is not None:
        sql += " AND (chain_at, seq) > (?, ?)"
        arguments.extend(after)
    sql += " ORDER BY chain_at DESC, seq DESC, id DESC LIMIT ?"
    arguments.append(-1 if limit is None else limit)
    return [node_of(row) for row in db.execute(sql, arguments)]


def _matches(
    terms: Sequence[str], session_id: str | None, labels: Sequence[Label] | None
) -> tuple[str, list[Any]]:
    """SQL of ``(nid, term number, best rank, newer)`` for every (node, term) that matches.

    Across sessions, a term's rows are one range of the index by token; in one session, the
    session's live nodes are read from ``nodes_session`` and each one's rows that match from
    the index by node (``terms_node``), so the cost is the session's size, not the store's."""
    parts, arguments = [], []
    for number, term in enumerate(dict.fromkeys(terms)):
        end = prefix_end(term)
        where = "terms.token >= ?" + ("" if end is None else " AND terms.token < ?")
        if labels is not None:
            where += " AND terms.label IN (SELECT value FROM json_each(?))"
        source = "terms"
        if session_id is not None:
            source = (
                "nodes INDEXED BY nodes_session JOIN terms INDEXED BY terms_node"
                " ON terms.nid = nodes.rid"
            )
            where += " AND nodes.session = ? AND nodes.live"
        parts.append(
            f"SELECT terms.nid AS nid, {number} AS term, min(terms.rank) AS rank,"
            f" min(terms.newer) AS newer FROM {source} WHERE {where} GROUP BY terms.nid"
        )
        arguments.append(term)
        if end is not None:
            arguments.append(end)
        if labels is not None:
            arguments.append(_json([label.value for label in labels]))
        if session_id is not None:
            arguments.append(session_id)
    return " UNION ALL ".join(parts), arguments


def search(
    db: sqlite3.Connection,
    tail: Tail,
    version: int | None,
    terms: Sequence[str],
    session_id: str | None,
    labels: Sequence[Label] | None,
    require_all: bool,
) -> list[SearchHit]:
    """Every hit, from ``terms`` and the tail (``version``: the tail's version to read, the
    snapshot's when ``None``)."""
    if not terms:
        return []
    with tail.hold():
        return _search(db, tail, version, terms, session_id, labels, require_all)


@_one_snapshot
def _search(
    db: sqlite3.Connection,
    tail: Tail,
    version: int | None,
    terms: Sequence[str],
    session_id: str | None,
    labels: Sequence[Label] | None,
    require_all: bool,
) -> list[SearchHit]:
    distinct = list(dict.fromkeys(terms))
    in_tail = _tail_hits(db, tail, version, distinct, session_id, labels, require_all)
    matches, arguments = _matches(distinct, session_id, labels)
    having = f" HAVING count(*) = {len(distinct)}" if require_all else ""
    rows = db.execute(
        f"WITH hits AS (SELECT nid, count(*) AS matched, min(rank) AS rank"
        f" FROM ({matches}) GROUP BY nid{having})"
        f" SELECT {NODE_COLUMNS}, matched, hits.rank FROM hits JOIN nodes ON nodes.rid = hits.nid",
        arguments,
    )
    hits = [SearchHit(node_of(row[:8]), row[8], row[9]) for row in rows]
    nodes = _nodes_by_rid(db, list(in_tail))
    hits.extend(
        SearchHit(nodes[rid], hit[0], hit[1]) for rid, hit in in_tail.items() if rid in nodes
    )
    return hits


def search_ranked(
    db: sqlite3.Connection,
    tail: Tail,
    version: int | None,
    terms: Sequence[str],
    session_id: str | None,
    labels: Sequence[Label] | None,
    require_all: bool,
    limit: int,
    offset: int,
) -> Page[NodeRecord]:
    """The page of hits, ranked over ``terms`` and the tail together (``version`` as for
    ``search``)."""
    distinct = list(dict.fromkeys(terms))
    if not distinct:
        return Page([], 0, False)
    with tail.hold():
        return _search_ranked(
            db, tail, version, distinct, session_id, labels, require_all, limit, offset
        )


# A hit as search order sorts it: (-terms matched, best rank, newer, node id, rid).
Keyed = tuple[int, int, int, str, int]


@_one_snapshot
def _search_ranked(
    db: sqlite3.Connection,
    tail: Tail,
    version: int | None,
    distinct: list[str],
    session_id: str | None,
    labels: Sequence[Label] | None,
    require_all: bool,
    limit: int,
    offset: int,
) -> Page[NodeRecord]:
    in_tail = _tail_hits(db, tail, version, distinct, session_id, labels, require_all)
    wanted = offset + limit
    found: tuple[list[Keyed], int] | None = None
    if len(distinct) == 1 and session_id is None:
        tokens = _tokens_of(db, distinct[0])
        if tokens is not None:
            found = _search_tokens(db, tokens, labels, wanted)
    if found is None:
        matches, arguments = _matches(distinct, session_id, labels)
        having = f" HAVING count(*) = {len(distinct)}" if require_all else ""
        hits = (
            "SELECT nid, count(*) AS matched, min(rank) AS rank, min(newer) AS newer"
            f" FROM ({matches}) GROUP BY nid{having}"
        )
        (total,) = db.execute(f"SELECT count(*) FROM ({hits})", arguments).fetchone()
        rows = db.execute(
            f"WITH hits AS ({hits}) SELECT -matched, hits.rank, hits.newer, nodes.id, nodes.rid"
            " FROM hits JOIN nodes ON nodes.rid = hits.nid"
            " ORDER BY matched DESC, hits.rank, hits.newer, nodes.id LIMIT ?",
            [*arguments, wanted],
        )
        found = (list(rows), total)
    keyed, total = found
    # The two sets of nodes are disjoint: a node's rows are in ``terms`` or in the tail.
    keyed.extend((-hit[0], hit[1], hit[2], hit[3], rid) for rid, hit in in_tail.items())
    page = heapq.nsmallest(wanted, keyed)[offset:]
    nodes = _nodes_by_rid(db, [hit[4] for hit in page])
    items = [nodes[hit[4]] for hit in page if hit[4] in nodes]
    total += len(in_tail)
    return Page(items, total, offset + len(items) < total)


def _tail_hits(
    db: sqlite3.Connection,
    tail: Tail,
    version: int | None,
    distinct: Sequence[str],
    session_id: str | None,
    labels: Sequence[Label] | None,
    require_all: bool,
) -> dict[int, TailHit]:
    """The tail's hits in the state this read sees: a transaction's own (``version``), or the
    snapshot's (the number its last commit stored: read first, it takes the snapshot)."""
    if version is None:
        (value,) = db.execute(TAIL_VERSION).fetchone()
        version = int(value)
    wanted = None if labels is None else [label.value for label in labels]
    hits = tail.hits(distinct, version, session_id, wanted)
    if require_all:
        return {rid: hit for rid, hit in hits.items() if hit[0] == len(distinct)}
    return hits


def _nodes_by_rid(db: sqlite3.Connection, rids: Sequence[int]) -> dict[int, NodeRecord]:
    if not rids:
        return {}
    rows = db.execute(f"{_NODE} WHERE rid IN (SELECT value FROM json_each(?))", (json.dumps(rids),))
    return {row[0]: node_of(row) for row in rows}


# A term that is the prefix of more distinct tokens than this is ranked by one SQL sort.
MAX_MERGED_TOKENS = 64


def _tokens_of(db: sqlite3.Connection, term: str) -> list[str] | None:
    """The distinct tokens ``term`` is a prefix of in ``terms``, each found in O(log n);
    ``None`` when there are more than ``MAX_MERGED_TOKENS``."""
    end = prefix_end(term)
    found: list[str] = []
    (token,) = db.execute("SELECT min(token) FROM terms WHERE token >= ?", (term,)).fetchone()
    while token is not None and (end is None or token < end):
        if len(found) == MAX_MERGED_TOKENS:
            return None
        found.append(token)
        (token,) = db.execute("SELECT min(token) FROM terms WHERE token > ?", (token,)).fetchone()
    return found


def _search_tokens(
    db: sqlite3.Connection, tokens: Sequence[str], labels: Sequence[Label] | None, wanted: int
) -> tuple[list[Keyed], int]:
    """One term over every session in ``terms``: each token's matches are read in search
    order from the front of the index (rank, then newer) and merged, so the first ``wanted``
    hits cost O(tokens · wanted · log n), not a sort of every match. Nodes tied on (rank,
    newer) with the last of them are all read, to order them by id. Those hits (a superset
    of the first ``wanted``) and the number of every hit."""
    label_filter = "" if labels is None else " AND label IN (SELECT value FROM json_each(?))"
    extra: list[Any] = [] if labels is None else [_json([label.value for label in labels])]
    keyed: list[tuple[int, int, int]] = []  # (rank, newer, nid)
    for token in tokens:
        keyed.extend(
            db.execute(
                f"SELECT rank, newer, nid FROM terms WHERE token = ?{label_filter}"
                " ORDER BY rank, newer LIMIT ?",
                [token, *extra, wanted],
            )
        )
    keyed.sort()
    best: dict[int, tuple[int, int]] = {}
    for rank, age, nid in keyed:
        best.setdefault(nid, (rank, age))
        if len(best) == wanted:
            break
    if not best:
        return [], 0
    if len(tokens) == 1:
        (total,) = db.execute(
            f"SELECT count(*) FROM terms WHERE token = ?{label_filter}", [tokens[0], *extra]
        ).fetchone()
    else:
        (total,) = db.execute(
            "SELECT count(DISTINCT nid) FROM terms WHERE token IN"
            f" (SELECT value FROM json_each(?)){label_filter}",
            [_json(tokens), *extra],
        ).fetchone()
    if len(best) == wanted:
        # Everything tied with the last key kept competes for the page's last places by id.
        boundary = max(best.values())
        for token in tokens:
            for (nid,) in db.execute(
                f"SELECT nid FROM terms WHERE token = ? AND rank = ? AND newer = ?{label_filter}",
                [token, *boundary, *extra],
            ):
                best.setdefault(nid, boundary)
    ids = db.execute(
        "SELECT rid, id FROM nodes WHERE rid IN (SELECT value FROM json_each(?))",
        (json.dumps(list(best)),),
    )
    return [(-1, *best[rid], node_id, rid) for rid, node_id in ids], total


def capture(db: sqlite3.Connection) -> Captured:
    """Every record, in one read transaction (a consistent copy)."""
    db.execute("BEGIN")
    try:
        nodes = [node_of(row) for row in db.execute(f"{_NODE} ORDER BY rid")]
        edges = [
            edge_of(row) for row in db.execute(f"SELECT {EDGE_COLUMNS} FROM edges ORDER BY rid")
        ]
        seq = dict(db.execute("SELECT session, value FROM seqs"))
        parked = [
            (row[0], edge_from(*row[1:]))
            for row in db.execute(
                "SELECT waiting_for, type, source, target, props FROM parked ORDER BY rid"
            )
        ]
    finally:
        db.execute("COMMIT")
    return Captured(nodes, edges, seq, parked)


def count_nodes(db: sqlite3.Connection) -> int:
    (count,) = db.execute("SELECT count(*) FROM nodes").fetchone()
    return int(count)
