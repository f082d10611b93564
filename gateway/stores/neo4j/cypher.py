"""Every Cypher statement of the Neo4j adapter, parameters only.

Labels and relationship types cannot be parameters, so statements that must work for any
label are a ``UNION ALL`` of one branch per label, each an index seek on that label (a branch
whose label is not wanted is cut off by a guard on a parameter before it touches the store).
Nodes are looked up by global id through ``rows`` of ``{i, id, label}``: the label comes
from the id's prefix (``*`` when the id has none), so only one branch seeks per row.

Requires Neo4j 5.23 or later (``CALL (vars) { … }`` subquery scope clauses).
"""

from __future__ import annotations

from typing import Final, LiteralString

from resolvers.records import Direction, EdgeType, Label

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


def _each(
    branch: LiteralString, names: tuple[LiteralString, ...] = LABELS, mark: LiteralString = "_L_"
) -> LiteralString:
    """``branch`` once per name (``mark`` replaced by it), joined by ``UNION ALL``."""
    return " UNION ALL ".join(branch.replace(mark, name) for name in names)


def _per_label(template: LiteralString) -> dict[Label, LiteralString]:
    return {Label(name): template.replace("_L_", name) for name in LABELS}


def _per_type(template: LiteralString) -> dict[EdgeType, LiteralString]:
    return {EdgeType(name): template.replace("_T_", name) for name in EDGE_TYPES}


NODE: Final[LiteralString] = "n {.*, _sm_tokens: null, _sm_text: null, _sm_label: labels(n)[0]}"
"""The projection of node ``n`` that ``records.to_node`` reads."""

_FIND: Final[LiteralString] = (
    "CALL (row) { "
    + _each("WITH row WHERE row.label IN ['_L_', '*'] MATCH (n:_L_ {id: row.id}) RETURN n")
    + " }"
)
"""Binds ``n`` to the node of ``row`` (no row when it does not exist)."""

# --- reads ------------------------------------------------------------------------------------

GET_NODES: Final[LiteralString] = f"UNWIND $rows AS row {_FIND} RETURN row.i AS i, {NODE} AS node"

NODES_BY_KEY: Final[LiteralString] = (
    "CALL () { "
    + _each(
        "WITH 1 AS guard WHERE $labels IS NULL OR '_L_' IN $labels "
        "MATCH (n:_L_ {key: $key}) WHERE $session IS NULL OR n.session_id = $session RETURN n"
    )
    + f" }} RETURN {NODE} AS node ORDER BY n._sm_order"
)

ARTIFACT_VERSIONS: Final[LiteralString] = (
    "MATCH (n:Artifact {artifact_id: $artifact_id}) "
    "WHERE $session IS NULL OR n.session_id = $session "
    f"RETURN {NODE} AS node ORDER BY n.version, n._sm_order"
)

_EDGE_ROW: Final[LiteralString] = (
    "type(r) AS type, startNode(r).id AS source, endNode(r).id AS target, properties(r) AS props"
)

EXPAND: Final[dict[tuple[EdgeType, Direction], LiteralString]] = {
    **{
        (edge_type, Direction.OUT): query
        for edge_type, query in _per_type(
            f"UNWIND $rows AS row {_FIND} MATCH (n)-[r:_T_]->() "
            f"RETURN {_EDGE_ROW} ORDER BY row.i, r._sm_order"
        ).items()
    },
    **{
        (edge_type, Direction.IN): query
        for edge_type, query in _per_type(
            f"UNWIND $rows AS row {_FIND} MATCH (n)<-[r:_T_]-() "
            f"RETURN {_EDGE_ROW} ORDER BY row.i, r._sm_order"
        ).items()
    },
}

EDGES_AMONG: Final[LiteralString] = (
    f"UNWIND $rows AS row {_FIND} WITH collect(n) AS found "
    "UNWIND found AS n MATCH (n)-[r]->(m) "
    "WHERE m IN found AND ($types IS NULL OR type(r) IN $types) "
    f"RETURN {_EDGE_ROW} ORDER BY r._sm_order"
)

_LIST_PAGE_TAIL: Final[LiteralString] = (
    " } WITH n ORDER BY n._sm_order DESC SKIP $offset LIMIT $limit "
    f"WITH collect({NODE}) AS nodes CALL () {{ "
)

LIST_SESSION_NODES: Final[LiteralString] = (
    "CALL () { "
    + _each(
        "WITH 1 AS guard WHERE $labels IS NULL OR '_L_' IN $labels "
        "MATCH (n:_L_ {session_id: $session}) WHERE n._sm_live "
        "RETURN n ORDER BY n._sm_order DESC LIMIT $end"
    )
    + _LIST_PAGE_TAIL
    + _each(
        "WITH 1 AS guard WHERE $labels IS NULL OR '_L_' IN $labels "
        "MATCH (n:_L_ {session_id: $session}) WHERE n._sm_live RETURN count(n) AS c"
    )
    + " } RETURN nodes, sum(c) AS total"
)
"""Live nodes of a session (``$labels`` optional), newest first, with the total count."""

LIST_LABEL_NODES: Final[LiteralString] = (
    "CALL () { "
    + _each(
        "WITH 1 AS guard WHERE '_L_' IN $labels "
        "MATCH (n:_L_) WHERE n._sm_order IS NOT NULL AND n._sm_live "
        "RETURN n ORDER BY n._sm_order DESC LIMIT $end"
    )
    + _LIST_PAGE_TAIL
    + _each(
        "WITH 1 AS guard WHERE '_L_' IN $labels MATCH (n:_L_) WHERE n._sm_live RETURN count(n) AS c"
    )
    + " } RETURN nodes, sum(c) AS total"
)
"""Live nodes of ``$labels`` across sessions, newest first (an ordered ``_sm_order`` index
scan per label; the total is a scan of the labels)."""

_EDGE_MAP: Final[LiteralString] = (
    "{type: type(r), source: startNode(r).id, target: endNode(r).id, props: properties(r)}"
)
_LIVE_ENDS: Final[LiteralString] = "startNode(r)._sm_live AND endNode(r)._sm_live"
_TYPE_GUARD: Final[LiteralString] = "WITH 1 AS guard WHERE '_T_' IN $types "
_EDGE_PAGE_TAIL: Final[LiteralString] = (
    " } WITH r ORDER BY r._sm_order DESC SKIP $offset LIMIT $limit "
    f"WITH collect({_EDGE_MAP}) AS edges CALL () {{ "
)

LIST_SESSION_EDGES: Final[LiteralString] = (
    "CALL () { "
    + _each(
        _TYPE_GUARD + "MATCH ()-[r:_T_ {_sm_session: $session}]->() "
        f"WHERE {_LIVE_ENDS} RETURN r ORDER BY r._sm_order DESC LIMIT $end",
        EDGE_TYPES,
        "_T_",
    )
    + _EDGE_PAGE_TAIL
    + _each(
        _TYPE_GUARD + "MATCH ()-[r:_T_ {_sm_session: $session}]->() "
        f"WHERE {_LIVE_ENDS} RETURN count(r) AS c",
        EDGE_TYPES,
        "_T_",
    )
    + " } RETURN edges, sum(c) AS total"
)
"""Edges of ``$types`` created between two nodes of a session, live ends, newest first."""

LIST_TYPE_EDGES: Final[LiteralString] = (
    "CALL () { "
    + _each(
        _TYPE_GUARD + "MATCH ()-[r:_T_]->() WHERE r._sm_order IS NOT NULL AND "
        f"{_LIVE_ENDS} RETURN r ORDER BY r._sm_order DESC LIMIT $end",
        EDGE_TYPES,
        "_T_",
    )
    + _EDGE_PAGE_TAIL
    + _each(
        _TYPE_GUARD + f"MATCH ()-[r:_T_]->() WHERE {_LIVE_ENDS} RETURN count(r) AS c",
        EDGE_TYPES,
        "_T_",
    )
    + " } RETURN edges, sum(c) AS total"
)
"""Edges of ``$types`` across sessions with live ends, newest first."""

SESSION_NODE_IDS: Final[LiteralString] = (
    "CALL () { "
    + _each("MATCH (n:_L_ {session_id: $session}) RETURN n")
    + " } RETURN n.id AS id ORDER BY n._sm_order"
)

PROJECT_ARTIFACTS: Final[LiteralString] = (
    f"MATCH (n:Artifact {{project_id: $project}}) RETURN {NODE} AS node ORDER BY n._sm_order"
)

# --- chains -----------------------------------------------------------------------------------

_CHAIN: Final[LiteralString] = "MATCH (n:_L_ {session_id: $session, _sm_scope: $scope}) "

CHAIN_MEMBERS: Final[LiteralString] = (
    "CALL () { "
    + _each(_CHAIN + "WHERE n._sm_pos IS NOT NULL RETURN n", STEP_LABELS)
    + f" }} RETURN {NODE} AS node ORDER BY n._sm_pos, n.id"
)

CHAIN_NEIGHBOURS: Final[LiteralString] = (
    "CALL () { "
    + _each(_CHAIN + "WHERE n._sm_pos < $pos RETURN n ORDER BY n._sm_pos DESC LIMIT 1", STEP_LABELS)
    + " } WITH n ORDER BY n._sm_pos DESC, n.id DESC LIMIT 1 "
    + f"RETURN 'before' AS side, {NODE} AS node"
    + " UNION ALL CALL () { "
    + _each(_CHAIN + "WHERE n._sm_pos > $pos RETURN n ORDER BY n._sm_pos LIMIT 1", STEP_LABELS)
    + f" }} WITH n ORDER BY n._sm_pos, n.id LIMIT 1 RETURN 'after' AS side, {NODE} AS node"
)
"""The chain members right before and right after ``$pos`` (``records.chain_pos``)."""

# --- search -----------------------------------------------------------------------------------

_MATCHED: Final[LiteralString] = (
    "WITH n, size([term IN $terms WHERE any(token IN n._sm_tokens "
    "WHERE token STARTS WITH term)]) AS hits WHERE hits >= $needed "
    f"RETURN {NODE} AS node"
)

SEARCH_SESSION: Final[LiteralString] = (
    "CALL () { "
    + _each(
        "WITH 1 AS guard WHERE $labels IS NULL OR '_L_' IN $labels "
        "MATCH (n:_L_ {session_id: $session}) WHERE n._sm_live AND n._sm_tokens IS NOT NULL "
        "RETURN n"
    )
    + " } "
    + _MATCHED
)
"""Session search: every live node of the session (index seek) filtered by its tokens."""

SEARCH_FULLTEXT: Final[LiteralString] = (
    "CALL db.index.fulltext.queryNodes('sm_search', $lucene) YIELD node AS n "
    "WHERE n._sm_live AND ($labels IS NULL OR labels(n)[0] IN $labels) " + _MATCHED
)
"""Cross-session search: prefix candidates from the fulltext index, then exact filtering."""

SEARCH_SCAN: Final[LiteralString] = (
    "CALL () { "
    + _each(
        "WITH 1 AS guard WHERE $labels IS NULL OR '_L_' IN $labels "
        "MATCH (n:_L_) WHERE n._sm_tokens IS NOT NULL AND n._sm_live RETURN n"
    )
    + " } "
    + _MATCHED
)
"""Cross-session search for terms Lucene cannot express as prefixes (a scan of the labels)."""

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

PUT_NODE: Final[dict[Label, LiteralString]] = _per_label(
    "MERGE (n:_L_ {id: $id}) WITH n, n._sm_order AS kept "
    "SET n = $props SET n._sm_order = coalesce(kept, $order)"
)
"""Create or replace a node whole; concurrent identical writes converge on the constraint."""

DELETE_NODE: Final[LiteralString] = (
    f"WITH $row AS row {_FIND} DETACH DELETE n RETURN count(*) AS deleted"
)

_ENDPOINTS: Final[LiteralString] = (
    f"WITH $source AS row {_FIND} WITH n AS a WITH a, $target AS row {_FIND} WITH a, n AS b "
)

PUT_EDGE: Final[dict[EdgeType, LiteralString]] = _per_type(
    _ENDPOINTS + "MERGE (a)-[r:_T_]->(b) "
    "ON CREATE SET r._sm_new = true, r._sm_order = $order, "
    "r._sm_session = CASE WHEN a.session_id = b.session_id THEN a.session_id END "
    "WITH r, r._sm_new IS NOT NULL AS created, r._sm_order AS kept, r._sm_session AS session "
    "SET r = $props SET r._sm_order = kept, r._sm_session = session "
    "RETURN created"
)
"""Create or replace one edge; no row when an endpoint is missing."""

DELETE_EDGE: Final[dict[EdgeType, LiteralString]] = _per_type(
    _ENDPOINTS + "MATCH (a)-[r:_T_]->(b) DELETE r RETURN count(*) AS deleted"
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
    "CALL () { " + _each("MATCH (n:_L_) RETURN count(n) AS c") + " } RETURN sum(c) AS total"
)

WIPE: Final[LiteralString] = "MATCH (n) DETACH DELETE n"
