"""Every Cypher statement of the Neo4j adapter, parameters only.

Labels and relationship types cannot be parameters. Statements for one label or type are
constants per label (``PUT_NODE[label]``); statements over several labels are a ``UNION ALL``
of one index-backed branch per label, composed here from constant fragments by cached
builders that take only the labels (or types) involved. Planning a union costs Neo4j about
10-30 ms per branch (and it replans when the statistics drift), so a statement only carries
the branches it needs, and the plan cache sees a small, bounded set of texts.

A node is addressed by its global id, whose prefix is its label (``records.split_node_id``);
frontier statements take ``$rows`` of ``{i, id, label}`` and each branch seeks only its rows.

Requires Neo4j 5.23 or later (``CALL (vars) { … }`` subquery scope clauses).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Final, LiteralString

from resolvers.records import Direction, EdgeType, Label

if TYPE_CHECKING:
    from collections.abc import Iterable

LABELS: Final[tuple[LiteralString, ...]] = (
    "ResearchGoal",
    "Task",
    "ToolCall",
    "Code",
    "Artifact",
    "Paper",
    "Evidence",
    "Claim",
    "SourceFile",
)
STEP_LABELS: Final[tuple[LiteralString, ...]] = ("Task", "ToolCall")
"""Only steps (ToolCall and Task) carry a ``seq`` and so belong to a chain."""

EDGE_TYPES: Final[tuple[LiteralString, ...]] = (
    "next",
    "produces",
    "extracts",
    "supports",
    "stated_in",
    "supersedes",
    "input",
    "contains",
    "feeds",
)

Labels = frozenset[Label]
Types = frozenset[EdgeType]


def _union(
    branch: LiteralString, names: Iterable[LiteralString], mark: LiteralString = "_L_"
) -> LiteralString:
    """``branch`` once per name (``mark`` replaced by it), joined by ``UNION ALL``."""
    return " UNION ALL ".join(branch.replace(mark, name) for name in names)


def _labels(labels: Labels) -> tuple[LiteralString, ...]:
    return tuple(name for name in LABELS if Label(name) in labels)


def _types(types: Types) -> tuple[LiteralString, ...]:
    return tuple(name for name in EDGE_TYPES if EdgeType(name) in types)


def _label(label: Label) -> LiteralString:
    (name,) = _labels(frozenset({label}))
    return name


def _type(edge_type: EdgeType) -> LiteralString:
    (name,) = _types(frozenset({edge_type}))
    return name


ALL_LABELS: Final[Labels] = frozenset(Label)

NODE: Final[LiteralString] = "n {.*, _sm_tokens: null, _sm_text: null, _sm_label: labels(n)[0]}"
"""The projection of node ``n`` that ``records.to_node`` reads."""

_EDGE_ROW: Final[LiteralString] = (
    "type(r) AS type, startNode(r).id AS source, endNode(r).id AS target, properties(r) AS props"
)
_EDGE_MAP: Final[LiteralString] = (
    "{type: type(r), source: startNode(r).id, target: endNode(r).id, props: properties(r)}"
)


def _find(labels: Labels) -> LiteralString:
    """Binds ``n`` to the node of ``row`` (no row when it does not exist)."""
    return (
        "CALL (row) { "
        + _union(
            "WITH row WHERE row.label = '_L_' MATCH (n:_L_ {id: row.id}) RETURN n", _labels(labels)
        )
        + " }"
    )


# --- reads ------------------------------------------------------------------------------------


@cache
def get_nodes(labels: Labels) -> LiteralString:
    return f"UNWIND $rows AS row {_find(labels)} RETURN row.i AS i, {NODE} AS node"


@cache
def nodes_by_key(labels: Labels) -> LiteralString:
    return (
        "CALL () { "
        + _union(
            "MATCH (n:_L_ {key: $key}) WHERE $session IS NULL OR n.session_id = $session RETURN n",
            _labels(labels),
        )
        + f" }} RETURN {NODE} AS node ORDER BY n._sm_order"
    )


ARTIFACT_VERSIONS: Final[LiteralString] = (
    "MATCH (n:Artifact {artifact_id: $artifact_id}) "
    "WHERE $session IS NULL OR n.session_id = $session "
    f"RETURN {NODE} AS node ORDER BY n.version, n._sm_order"
)


@cache
def expand(labels: Labels, edge_type: EdgeType, direction: Direction) -> LiteralString:
    name = _type(edge_type)
    pattern: LiteralString = "(n)-[r:_T_]->()" if direction is Direction.OUT else "(n)<-[r:_T_]-()"
    return (
        f"UNWIND $rows AS row {_find(labels)} MATCH {pattern.replace('_T_', name)} "
        f"RETURN {_EDGE_ROW} ORDER BY row.i, r._sm_order"
    )


@cache
def edges_among(labels: Labels) -> LiteralString:
    return (
        f"UNWIND $rows AS row {_find(labels)} WITH collect(n) AS found "
        "UNWIND found AS n MATCH (n)-[r]->(m) "
        "WHERE m IN found AND ($types IS NULL OR type(r) IN $types) "
        f"RETURN {_EDGE_ROW} ORDER BY r._sm_order"
    )


def _page(
    branch: LiteralString, count: LiteralString, names: Iterable[LiteralString]
) -> LiteralString:
    """Newest-first page of the union of ``branch`` plus the total of ``count``."""
    names = tuple(names)
    return (
        "CALL () { "
        + _union(branch + " RETURN n ORDER BY n._sm_order DESC LIMIT $end", names)
        + " } WITH n ORDER BY n._sm_order DESC SKIP $offset LIMIT $limit "
        f"WITH collect({NODE}) AS nodes CALL () {{ "
        + _union(count, names)
        + " } RETURN nodes, sum(c) AS total"
    )


@cache
def list_session_nodes(labels: Labels) -> LiteralString:
    """Live nodes of a session, newest first, with the total count."""
    match: LiteralString = "MATCH (n:_L_ {session_id: $session}) WHERE n._sm_live"
    return _page(match, match + " RETURN count(n) AS c", _labels(labels))


@cache
def list_label_nodes(labels: Labels) -> LiteralString:
    """Live nodes of labels across sessions, newest first (an ordered ``_sm_order`` index
    scan per label; the total scans the labels)."""
    return _page(
        "MATCH (n:_L_) WHERE n._sm_order IS NOT NULL AND n._sm_live",
        "MATCH (n:_L_) WHERE n._sm_live RETURN count(n) AS c",
        _labels(labels),
    )


_LIVE_ENDS: Final[LiteralString] = "startNode(r)._sm_live AND endNode(r)._sm_live"


def _edge_page(match: LiteralString, types: Types) -> LiteralString:
    names = _types(types)
    return (
        "CALL () { "
        + _union(
            f"{match} AND {_LIVE_ENDS} RETURN r ORDER BY r._sm_order DESC LIMIT $end", names, "_T_"
        )
        + " } WITH r ORDER BY r._sm_order DESC SKIP $offset LIMIT $limit "
        f"WITH collect({_EDGE_MAP}) AS edges CALL () {{ "
        + _union(f"{match} AND {_LIVE_ENDS} RETURN count(r) AS c", names, "_T_")
        + " } RETURN edges, sum(c) AS total"
    )


@cache
def list_session_edges(types: Types) -> LiteralString:
    """Edges created between two nodes of a session, with live ends, newest first."""
    return _edge_page("MATCH ()-[r:_T_]->() WHERE r._sm_session = $session", types)


@cache
def list_type_edges(types: Types) -> LiteralString:
    """Edges of types across sessions, with live ends, newest first."""
    return _edge_page("MATCH ()-[r:_T_]->() WHERE r._sm_order IS NOT NULL", types)


SESSION_NODE_IDS: Final[LiteralString] = (
    "CALL () { "
    + _union("MATCH (n:_L_ {session_id: $session}) RETURN n", LABELS)
    + " } RETURN n.id AS id ORDER BY n._sm_order"
)

PROJECT_ARTIFACTS: Final[LiteralString] = (
    f"MATCH (n:Artifact {{project_id: $project}}) RETURN {NODE} AS node ORDER BY n._sm_order"
)

# --- chains -----------------------------------------------------------------------------------

_CHAIN: Final[LiteralString] = "MATCH (n:_L_ {session_id: $session, _sm_scope: $scope}) "

CHAIN_MEMBERS: Final[LiteralString] = (
    "CALL () { "
    + _union(_CHAIN + "WHERE n._sm_pos IS NOT NULL RETURN n", STEP_LABELS)
    + f" }} RETURN {NODE} AS node ORDER BY n._sm_pos, n.id"
)

CHAIN_NEIGHBOURS: Final[LiteralString] = (
    "CALL () { "
    + _union(
        _CHAIN + "WHERE n._sm_pos < $pos RETURN n ORDER BY n._sm_pos DESC LIMIT 1", STEP_LABELS
    )
    + " } WITH n ORDER BY n._sm_pos DESC, n.id DESC LIMIT 1 "
    f"RETURN 'before' AS side, {NODE} AS node UNION ALL CALL () {{ "
    + _union(_CHAIN + "WHERE n._sm_pos > $pos RETURN n ORDER BY n._sm_pos LIMIT 1", STEP_LABELS)
    + f" }} WITH n ORDER BY n._sm_pos, n.id LIMIT 1 RETURN 'after' AS side, {NODE} AS node"
)
"""The chain members right before and right after ``$pos`` (``records.chain_pos``)."""

# --- search -----------------------------------------------------------------------------------

_MATCHED: Final[LiteralString] = (
    "WITH n, size([term IN $terms WHERE any(token IN n._sm_tokens "
    "WHERE token STARTS WITH term)]) AS hits WHERE hits >= $needed "
    f"RETURN {NODE} AS node"
)


@cache
def search_session(labels: Labels) -> LiteralString:
    """Session search: the session's live nodes (index seek), filtered by their tokens."""
    branch: LiteralString = (
        "MATCH (n:_L_ {session_id: $session}) WHERE n._sm_live AND n._sm_tokens IS NOT NULL "
        "RETURN n"
    )
    return "CALL () { " + _union(branch, _labels(labels)) + " } " + _MATCHED


SEARCH_FULLTEXT: Final[LiteralString] = (
    "CALL db.index.fulltext.queryNodes('sm_search', $lucene) YIELD node AS n "
    "WHERE n._sm_live AND labels(n)[0] IN $labels " + _MATCHED
)
"""Cross-session search: prefix candidates from the fulltext index, then exact filtering."""


@cache
def search_scan(labels: Labels) -> LiteralString:
    """Cross-session search for terms Lucene cannot take as prefixes (scans the labels)."""
    branch: LiteralString = "MATCH (n:_L_) WHERE n._sm_tokens IS NOT NULL AND n._sm_live RETURN n"
    return "CALL () { " + _union(branch, _labels(labels)) + " } " + _MATCHED


# --- writes -----------------------------------------------------------------------------------

LOCK_SESSION: Final[LiteralString] = (
    "MERGE (c:SessionCounter {session_id: $session}) ON CREATE SET c.seq = 0 "
    "SET c._sm_lock = true REMOVE c._sm_lock"
)
"""Takes the write lock of the session's counter node: writers of one session queue here."""

NEXT_SEQ: Final[LiteralString] = (
    "MERGE (c:SessionCounter {session_id: $session}) ON CREATE SET c.seq = 0 "
    "SET c.seq = c.seq + 1 RETURN c.seq AS seq"
)

RAISE_SEQ: Final[LiteralString] = (
    "MERGE (c:SessionCounter {session_id: $session}) ON CREATE SET c.seq = 0 "
    "SET c.seq = CASE WHEN c.seq < $value THEN $value ELSE c.seq END"
)

PUT_NODE: Final[dict[Label, LiteralString]] = {
    Label(name): f"MERGE (n:{name} {{id: $id}}) WITH n, n._sm_order AS kept "
    "SET n = $props SET n._sm_order = coalesce(kept, $order)"
    for name in LABELS
}
"""Create or replace a node whole; concurrent identical writes converge on the constraint."""

DELETE_NODE: Final[dict[Label, LiteralString]] = {
    Label(name): f"OPTIONAL MATCH (n:{name} {{id: $id}}) DETACH DELETE n RETURN count(n) AS deleted"
    for name in LABELS
}


@cache
def put_edge(source: Label, edge_type: EdgeType, target: Label) -> LiteralString:
    """Create or replace one edge; no row when an endpoint is missing."""
    return (
        f"MATCH (a:{_label(source)} {{id: $source}}) MATCH (b:{_label(target)} {{id: $target}}) "
        f"MERGE (a)-[r:{_type(edge_type)}]->(b) "
        "ON CREATE SET r._sm_new = true, r._sm_order = $order, "
        "r._sm_session = CASE WHEN a.session_id = b.session_id THEN a.session_id END "
        "WITH r, r._sm_new IS NOT NULL AS created, r._sm_order AS kept, r._sm_session AS session "
        "SET r = $props SET r._sm_order = kept, r._sm_session = session "
        "RETURN created"
    )


@cache
def delete_edge(source: Label, edge_type: EdgeType, target: Label) -> LiteralString:
    return (
        f"OPTIONAL MATCH (:{_label(source)} {{id: $source}})-[r:{_type(edge_type)}]->"
        f"(:{_label(target)} {{id: $target}}) DELETE r RETURN count(r) AS deleted"
    )


PARK_EDGE: Final[LiteralString] = (
    "MERGE (p:ParkedEdge {waiting_for: $waiting_for, type: $type, source: $source, "
    "target: $target}) ON CREATE SET p.props = $props, p._sm_order = $order"
)

TAKE_PARKED: Final[LiteralString] = (
    "MATCH (p:ParkedEdge {waiting_for: $waiting_for}) "
    "WITH p, p.type AS type, p.source AS source, p.target AS target, p.props AS props, "
    "p._sm_order AS ord DELETE p RETURN type, source, target, props, ord ORDER BY ord"
)

# --- administration ---------------------------------------------------------------------------

PING: Final[LiteralString] = "RETURN 1 AS ok"

COUNT_NODES: Final[LiteralString] = (
    "RETURN " + " + ".join(f"COUNT {{ (:{name}) }}" for name in LABELS) + " AS total"
)

WIPE: Final[LiteralString] = "MATCH (n) DETACH DELETE n"
