"""Every Cypher statement of the Neo4j adapter's primitives, parameters only (whole walks:
``gateway.stores.neo4j.walks``).

Labels and relationship types cannot be parameters. A statement for one label or type is a
constant per label or type (``DELETE_NODE[label]``); a statement over a set of labels matches a
label disjunction (``MATCH (n:Task|ToolCall {…})``, planned as a union of index seeks), and
one over a set of relationship types is a ``UNION ALL`` of one branch per type (a type
disjunction would not use the relationship indexes). Cached builders compose these from
constant fragments, given only the labels or types involved, so a statement carries no
label it does not need, the plan cache sees a small bounded set of texts, and planning (which
Neo4j repeats when the statistics drift) stays cheap.

A node is addressed by its global id, whose prefix is its label (``records.split_node_id``);
frontier statements take ``$rows`` of ``{i, id}`` over the labels present in the frontier.

Requires Neo4j 5.23 or later (``CALL () { … }`` subquery scope clauses).
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


def _labels(labels: Labels) -> tuple[LiteralString, ...]:
    return tuple(name for name in LABELS if Label(name) in labels)


def _types(types: Types) -> tuple[LiteralString, ...]:
    return tuple(name for name in EDGE_TYPES if EdgeType(name) in types)


def label_name(label: Label) -> LiteralString:
    (name,) = _labels(frozenset({label}))
    return name


def type_name(edge_type: EdgeType) -> LiteralString:
    (name,) = _types(frozenset({edge_type}))
    return name


def any_label(labels: Labels) -> LiteralString:
    """The label disjunction ``A|B|…`` of ``labels``."""
    return "|".join(_labels(labels))


def any_type(types: Types) -> LiteralString:
    """The relationship type disjunction ``a|b|…`` of ``types`` (to expand from bound nodes)."""
    return "|".join(_types(types))


ALL_LABELS: Final[Labels] = frozenset(Label)


_FIXED_AT: Final[LiteralString] = (
    "CASE WHEN n.created_at IS :: ZONED DATETIME THEN CASE "
    "WHEN n.created_at.timezone = 'Z' OR left(n.created_at.timezone, 1) IN ['+', '-'] "
    "THEN toString(n.created_at) ELSE n.created_at END ELSE n.created_at END"
)
"""``created_at`` of ``n`` as ISO text when it has a fixed offset (as the gateway makes
them), else as stored: the driver turns a ``DateTime`` into its own time types first, which
cost more CPU than the rest of a node (``records.to_node`` parses the text)."""

NODE: Final[LiteralString] = (
    "n {.*, _sm_tokens: null, _sm_ranks: null, _sm_text: null, _sm_label: labels(n)[0], "
    f"created_at: {_FIXED_AT}}}"
)
"""The projection of node ``n`` that ``records.to_node`` reads."""

_EDGE_ROW: Final[LiteralString] = (
    "type(r) AS type, startNode(r).id AS source, endNode(r).id AS target, properties(r) AS props"
)
EDGE_MAP: Final[LiteralString] = (
    "{type: type(r), source: startNode(r).id, target: endNode(r).id, props: properties(r)}"
)

# --- reads ------------------------------------------------------------------------------------


@cache
def get_nodes(labels: Labels) -> LiteralString:
    return (
        f"UNWIND $rows AS row MATCH (n:{any_label(labels)} {{id: row.id}}) "
        f"RETURN row.i AS i, {NODE} AS node"
    )


@cache
def nodes_by_key(labels: Labels) -> LiteralString:
    return (
        f"MATCH (n:{any_label(labels)} {{key: $key}}) "
        "WHERE $session IS NULL OR n.session_id = $session "
        f"RETURN {NODE} AS node ORDER BY n._sm_order"
    )


ARTIFACT_VERSIONS: Final[LiteralString] = (
    "MATCH (n:Artifact {artifact_id: $artifact_id}) "
    "WHERE $session IS NULL OR n.session_id = $session "
    f"RETURN {NODE} AS node ORDER BY n.version, n._sm_order"
)


@cache
def expand(labels: Labels, edge_type: EdgeType, direction: Direction) -> LiteralString:
    arrow: LiteralString = "-[r:_T_]->" if direction is Direction.OUT else "<-[r:_T_]-"
    return (
        f"UNWIND $rows AS row MATCH (n:{any_label(labels)} {{id: row.id}}) "
        f"MATCH (n){arrow.replace('_T_', type_name(edge_type))}() "
        f"RETURN {_EDGE_ROW} ORDER BY row.i, r._sm_order"
    )


@cache
def edges_among(labels: Labels) -> LiteralString:
    return (
        f"UNWIND $rows AS row MATCH (n:{any_label(labels)} {{id: row.id}}) "
        "WITH collect(n) AS found UNWIND found AS n MATCH (n)-[r]->(m) "
        "WHERE m IN found AND ($types IS NULL OR type(r) IN $types) "
        f"RETURN {_EDGE_ROW} ORDER BY r._sm_order"
    )


def _page(match: LiteralString) -> LiteralString:
    """Newest-first page of the live nodes ``match`` binds to ``n``, with their total."""
    return (
        f"{match} AND n._sm_live WITH n ORDER BY n._sm_order DESC SKIP $offset LIMIT $limit "
        f"WITH collect({NODE}) AS nodes "
        f"RETURN nodes, COUNT {{ {match} AND n._sm_live }} AS total"
    )


@cache
def list_session_nodes(labels: Labels) -> LiteralString:
    """Live nodes of a session, newest first, with the total count."""
    return _page(f"MATCH (n:{any_label(labels)} {{session_id: $session}}) WHERE true")


@cache
def list_label_nodes(labels: Labels) -> LiteralString:
    """Live nodes of labels across sessions, newest first (ordered ``_sm_order`` index scans;
    the total scans the labels)."""
    return _page(f"MATCH (n:{any_label(labels)}) WHERE n._sm_order IS NOT NULL")


_LIVE_ENDS: Final[LiteralString] = "startNode(r)._sm_live AND endNode(r)._sm_live"


def _union(branch: LiteralString, names: Iterable[LiteralString]) -> LiteralString:
    """``branch`` once per relationship type (``_T_`` replaced by it), ``UNION ALL``."""
    return " UNION ALL ".join(branch.replace("_T_", name) for name in names)


def _edge_page(match: LiteralString, types: Types) -> LiteralString:
    names = _types(types)
    return (
        "CALL () { "
        + _union(f"{match} AND {_LIVE_ENDS} RETURN r ORDER BY r._sm_order DESC LIMIT $end", names)
        + " } WITH r ORDER BY r._sm_order DESC SKIP $offset LIMIT $limit "
        f"WITH collect({EDGE_MAP}) AS edges CALL () {{ "
        + _union(f"{match} AND {_LIVE_ENDS} RETURN count(r) AS c", names)
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
    f"MATCH (n:{any_label(ALL_LABELS)} {{session_id: $session}}) "
    "RETURN n.id AS id ORDER BY n._sm_order"
)

PROJECT_ARTIFACTS: Final[LiteralString] = (
    f"MATCH (n:Artifact {{project_id: $project}}) RETURN {NODE} AS node ORDER BY n._sm_order"
)

# --- chains -----------------------------------------------------------------------------------


def _chain(session: LiteralString, scope: LiteralString) -> LiteralString:
    """A chain's steps of one label (``_L_``), through the chain index (hinted: a chain
    operation must cost O(log n) whatever the planner's statistics say)."""
    return (
        f"MATCH (n:_L_ {{session_id: {session}, _sm_scope: {scope}}}) "
        "USING INDEX SEEK n:_L_(session_id, _sm_scope, _sm_pos) "
    )


# Ordering by every property of the chain index lets Neo4j read it in order (Limit, not Top).
_ASC: Final[LiteralString] = "n.session_id, n._sm_scope, n._sm_pos"
_DESC: Final[LiteralString] = "n.session_id DESC, n._sm_scope DESC, n._sm_pos DESC"


def _steps(branch: LiteralString) -> LiteralString:
    return " UNION ALL ".join(branch.replace("_L_", name) for name in STEP_LABELS)


_PARAM_CHAIN: Final[LiteralString] = _chain("$session", "$scope")

CHAIN_MEMBERS: Final[LiteralString] = (
    "CALL () { "
    + _steps(_PARAM_CHAIN + "WHERE n._sm_pos IS NOT NULL RETURN n")
    + f" }} RETURN {NODE} AS node ORDER BY n._sm_pos, n.id"
)


def chain_after(
    imports: LiteralString, session: LiteralString, scope: LiteralString
) -> LiteralString:
    """Binds ``n`` to the member right after ``$pos`` of the chain ``(session, scope)``,
    expressions over the variables ``imports``."""
    return (
        f"CALL ({imports}) {{ "
        + _steps(
            _chain(session, scope) + "WHERE n._sm_pos > $pos RETURN n ORDER BY " + _ASC + " LIMIT 1"
        )
        + " } WITH n ORDER BY n._sm_pos, n.id LIMIT 1"
    )


CHAIN_NEIGHBOURS: Final[LiteralString] = (
    "CALL () { "
    + _steps(_PARAM_CHAIN + "WHERE n._sm_pos < $pos RETURN n ORDER BY " + _DESC + " LIMIT 1")
    + " } WITH n ORDER BY n._sm_pos DESC, n.id DESC LIMIT 1 "
    f"RETURN 'before' AS side, {NODE} AS node UNION ALL "
    + chain_after("", "$session", "$scope")
    + f" RETURN 'after' AS side, {NODE} AS node"
)
"""The chain members right before and right after ``$pos`` (``records.chain_pos``)."""


@cache
def chain_before(label: Label | None) -> LiteralString:
    """The chain members between ``$after`` (the start when null) and ``$pos``, of ``label``
    (any step label when ``None``), nearest first, at most ``$limit``."""
    branch = (
        _PARAM_CHAIN + "WHERE n._sm_pos < $pos AND ($after IS NULL OR n._sm_pos > $after) "
        "RETURN n ORDER BY " + _DESC + " LIMIT $limit"
    )
    names = STEP_LABELS if label is None else (label_name(label),)
    return (
        "CALL () { "
        + " UNION ALL ".join(branch.replace("_L_", name) for name in names)
        + f" }} WITH n ORDER BY n._sm_pos DESC LIMIT $limit RETURN {NODE} AS node"
    )


# --- search -----------------------------------------------------------------------------------

_RANKED: Final[LiteralString] = (
    "WITH n, [term IN $terms | reduce(best = 6, i IN range(0, size(n._sm_tokens) - 1) | "
    "CASE WHEN n._sm_tokens[i] STARTS WITH term AND coalesce(n._sm_ranks[i], 5) < best "
    "THEN coalesce(n._sm_ranks[i], 5) ELSE best END)] AS found "
    "WITH n, size([rank IN found WHERE rank < 6]) AS hits, "
    "reduce(best = 5, rank IN found | CASE WHEN rank < best THEN rank ELSE best END) AS rank "
    "WHERE hits >= $needed "
)
"""Per candidate, ``resolvers.text.match_rank`` exactly: the terms that prefix one of its tokens
and the best field rank (``_sm_ranks``) among the tokens they prefix."""

_HITS: Final[LiteralString] = f"RETURN {NODE} AS node, hits, rank"

_PAGE: Final[LiteralString] = (
    "WITH n, hits, rank ORDER BY hits DESC, rank, n.created_at DESC, n.id "
    "WITH collect(n) AS ranked "
    f"RETURN size(ranked) AS total, [n IN ranked[$offset..$end] | {NODE}] AS nodes"
)
"""The order of ``resolvers.search``: more terms, a better field, newer, then by id."""

_FULLTEXT: Final[LiteralString] = (
    "CALL db.index.fulltext.queryNodes('sm_fulltext', $lucene) YIELD node AS n "
    "WHERE n._sm_live AND labels(n)[0] IN $labels "
    "AND ($session IS NULL OR n.session_id = $session) "
)
"""Candidates from the fulltext index: every node with a token each term (or, for all terms,
every term) is a prefix of; the session digest token narrows an in-session search."""


def _scan(labels: Labels, in_session: bool) -> LiteralString:
    session: LiteralString = " {session_id: $session}" if in_session else ""
    return f"MATCH (n:{any_label(labels)}{session}) WHERE n._sm_live AND n._sm_tokens IS NOT NULL "


SEARCH_HITS: Final[LiteralString] = _FULLTEXT + _RANKED + _HITS
SEARCH_PAGE: Final[LiteralString] = _FULLTEXT + _RANKED + _PAGE


@cache
def search_scan(labels: Labels, in_session: bool, page: bool) -> LiteralString:
    """Search for terms Lucene cannot take as prefixes (longer than its longest token): a
    label scan (or a session index seek), ranked the same way."""
    return _scan(labels, in_session) + _RANKED + (_PAGE if page else _HITS)


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

NOTE_CLEANUP: Final[LiteralString] = (
    "MERGE (c:SessionCounter {session_id: $session}) ON CREATE SET c.seq = 0 "
    "SET c.cleaned_at = CASE WHEN coalesce(c.cleaned_at, '') < $at THEN $at "
    "ELSE c.cleaned_at END, "
    "c.emptied_at = CASE WHEN $emptied AND coalesce(c.emptied_at, '') < $at THEN $at "
    "ELSE c.emptied_at END"
)
"""Notes a cleanup of the session (``resolvers.store.CleanupLedger``), and whether it emptied
it: its time as fixed-width ISO text, so text order is time order and the latest noted wins."""

CLEANED_AT: Final[LiteralString] = (
    "MERGE (c:SessionCounter {session_id: $session}) ON CREATE SET c.seq = 0 "
    "SET c._sm_lock = true REMOVE c._sm_lock RETURN c.cleaned_at AS at, c.emptied_at AS emptied"
)
"""The session's last cleanup, read under its counter's lock: a cleanup of the session (which
writes the counter) waits for this transaction."""

NOTE_PROJECT_CLEANUP: Final[LiteralString] = (
    "MERGE (p:ProjectCleanup {project_id: $project}) "
    "SET p.cleaned_at = CASE WHEN coalesce(p.cleaned_at, '') < $at THEN $at "
    "ELSE p.cleaned_at END"
)
"""Notes a cleanup of the project's Artifacts, as ``NOTE_CLEANUP`` a session's."""

PROJECTS_CLEANED_AT: Final[LiteralString] = (
    "UNWIND $projects AS project MERGE (p:ProjectCleanup {project_id: project}) "
    "SET p._sm_lock = true REMOVE p._sm_lock "
    "RETURN p.project_id AS project, p.cleaned_at AS at"
)
"""The projects' last cleanups, read under their locks (taken in the order given: sorted)."""

NOTE_ARTIFACTS_CLEANED: Final[LiteralString] = (
    "UNWIND $ids AS id MERGE (t:CleanedArtifact {id: id}) "
    "SET t.cleaned_at = CASE WHEN coalesce(t.cleaned_at, '') < $at THEN $at "
    "ELSE t.cleaned_at END"
)
"""A tombstone for each Artifact a cleanup deleted, with its time (the latest noted wins)."""

ARTIFACTS_CLEANED_AT: Final[LiteralString] = (
    "UNWIND $ids AS id MATCH (t:CleanedArtifact {id: id}) RETURN t.id AS id, t.cleaned_at AS at"
)
"""The tombstones of the Artifacts named: when a cleanup last deleted each."""

NEXT_ORDER: Final[LiteralString] = (
    "MERGE (c:SessionCounter {session_id: $scope}) ON CREATE SET c.seq = 0 "
    "SET c._sm_lock = true REMOVE c._sm_lock "  # locked before it is read
    "WITH c, timestamp() * 1000000 + $spread AS now "
    "SET c.ord = CASE WHEN coalesce(c.ord, 0) < now THEN now ELSE c.ord + 1 END "
    "WITH c.ord AS ord "
)
"""Binds ``ord`` to the next insertion order of the transaction's session: server time or one
past the session's last, whichever is larger (``plans.ORDER``). The transaction holds that
session's counter lock already (``LOCK_SESSION``), so this waits for no one."""

FREE_ORDER: Final[LiteralString] = "WITH timestamp() * 1000000 + $spread + $tick AS ord "
"""Binds ``ord`` for a transaction of no session (a migration, a cleanup), without any lock:
server time plus the transaction's own tick, which grows with each of its statements. Two
such transactions share no counter, so they never queue on one another."""


def _order(scoped: bool) -> LiteralString:
    return NEXT_ORDER if scoped else FREE_ORDER


@cache
def put_node(label: Label, scoped: bool) -> LiteralString:
    """Create or replace a node whole, unless it belongs to another session: then nothing is
    set and ``owner`` names that session. The MERGE holds the ``id`` constraint's lock, so a
    concurrent creator from another session waits for this commit and then sees its owner;
    concurrent identical writes converge."""
    return (
        _order(scoped) + f"MERGE (n:{label_name(label)} {{id: $id}}) "
        "WITH n, ord, n._sm_order AS kept, n.session_id AS owner "
        "FOREACH (_ IN CASE WHEN owner IS NULL OR owner = $props.session_id THEN [1] ELSE [] END | "
        "SET n = $props SET n._sm_order = coalesce(kept, ord)) "
        "RETURN owner"
    )


DELETE_NODE: Final[dict[Label, LiteralString]] = {
    Label(name): f"OPTIONAL MATCH (n:{name} {{id: $id}}) DETACH DELETE n RETURN count(n) AS deleted"
    for name in LABELS
}


@cache
def put_edge(source: Label, edge_type: EdgeType, target: Label, scoped: bool) -> LiteralString:
    """Create or replace one edge; no row when an endpoint is missing."""
    return (
        _order(scoped) + f"MATCH (a:{label_name(source)} {{id: $source}}) "
        f"MATCH (b:{label_name(target)} {{id: $target}}) "
        f"MERGE (a)-[r:{type_name(edge_type)}]->(b) "
        "ON CREATE SET r._sm_new = true, r._sm_order = ord, "
        "r._sm_session = CASE WHEN a.session_id = b.session_id THEN a.session_id END "
        "WITH r, r._sm_new IS NOT NULL AS created, r._sm_order AS kept, r._sm_session AS session "
        "SET r = $props SET r._sm_order = kept, r._sm_session = session "
        "RETURN created"
    )


@cache
def delete_edge(source: Label, edge_type: EdgeType, target: Label) -> LiteralString:
    return (
        f"OPTIONAL MATCH (:{label_name(source)} {{id: $source}})-[r:{type_name(edge_type)}]->"
        f"(:{label_name(target)} {{id: $target}}) DELETE r RETURN count(r) AS deleted"
    )


@cache
def park_edge(scoped: bool) -> LiteralString:
    return (
        _order(scoped)
        + "MERGE (p:ParkedEdge {waiting_for: $waiting_for, type: $type, source: $source, "
        "target: $target}) ON CREATE SET p.props = $props, p._sm_order = ord"
    )


TAKE_PARKED: Final[LiteralString] = (
    "MATCH (p:ParkedEdge {waiting_for: $waiting_for}) "
    "WITH p, p.type AS type, p.source AS source, p.target AS target, p.props AS props, "
    "p._sm_order AS ord DELETE p RETURN type, source, target, props, ord ORDER BY ord"
)

# --- change feed (``gateway.live.feed``) ----------------------------------------------------------

APPEND_FEED: Final[LiteralString] = (
    "UNWIND $entries AS entry "
    "MERGE (h:FeedHead {session_id: entry.session}) ON CREATE SET h.seq = 0 "
    "SET h.seq = h.seq + 1 "
    "CREATE (:ChangeFeed {session_id: entry.session, seq: h.seq, changes: entry.changes, "
    "at: datetime()}) "
    "RETURN entry.session AS session, h.seq AS seq"
)
"""One entry per session; the write lock on the session's ``FeedHead`` is held to the commit,
so a session's numbers follow its commit order whichever replica wrote."""

FEED_HEADS: Final[LiteralString] = (
    "UNWIND $sessions AS session OPTIONAL MATCH (h:FeedHead {session_id: session}) "
    "RETURN session, coalesce(h.seq, 0) AS seq"
)

FEED_AFTER: Final[LiteralString] = (
    "UNWIND $cursors AS cursor CALL (cursor) { "
    "MATCH (f:ChangeFeed {session_id: cursor.session}) WHERE f.seq > cursor.after "
    "RETURN f ORDER BY f.seq LIMIT $limit } "
    "RETURN f.session_id AS session, f.seq AS seq, f.changes AS changes"
)

TRIM_FEED: Final[LiteralString] = (
    "MATCH (f:ChangeFeed) WHERE f.at < datetime() - duration({seconds: $seconds}) "
    "WITH f LIMIT $limit DELETE f RETURN count(*) AS trimmed"
)

# --- administration ---------------------------------------------------------------------------

PING: Final[LiteralString] = "RETURN 1 AS ok"

COUNT_NODES: Final[LiteralString] = (
    "RETURN " + " + ".join(f"COUNT {{ (:{name}) }}" for name in LABELS) + " AS total"
)

WIPE: Final[LiteralString] = "MATCH (n) DETACH DELETE n"
