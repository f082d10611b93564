"""The two statements of a planned write (``gateway.stores.neo4j.planned``): ``PREFETCH`` loads
what a ``resolvers.plan.ReadPlan`` names, ``APPLY`` applies the changes the rules made.

Each is ONE constant text with ONE list parameter, ``$rows``, whose rows are tagged by block
(``row.k``), and ONE map of its strings, ``$args`` (``arguments``): Neo4j caches a plan per
statement text and per bucketed size of each top-level list *and string* parameter (0, 1-10,
11-100 and so on, measured on 5.26), and a map by its type alone, so one list padded to the
second bucket (``padded``) keeps the number of plans to one per statement for nearly every
event, and one map keeps the length of a session id out of it (the plans made for the
warm-up's id, ``Neo4jStore._warm_plans``, then serve every session).

Planning is the cost to watch: a ``FOREACH`` or subquery per label or edge shape took Neo4j
seconds to plan each time a plan is made (a cold cache, a new size bucket, drifted
statistics), so labels and types are dynamic (``$(row.label)``, ``$(row.type)``) wherever no
index is needed (``CREATE``, a relationship between bound endpoints) and nodes are matched by
id through the label disjunction of the id indexes: a few blocks per statement.

Ordering: ``PREFETCH`` takes the session's counter (``SessionCounter``) first, so writers of one
session queue on it, in whichever process, for as long as the transaction lasts (two statements
and a commit), and it hands the next ``seq`` values to the event's new steps. Insertion order
(``_sm_order``) is drawn by ``APPLY`` from the same counter (``ORDER``): ``max(counter + 1,
server time)``, so it is strictly increasing in commit order within a session, and follows the
database server's clock (milliseconds, in nanosecond units) across sessions, spread inside a
millisecond by a digest of the session id so that two sessions rarely share a value. No process
clock is involved.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final, LiteralString

from gateway.stores.neo4j.cypher import ALL_LABELS, NODE, any_label

ANY: Final[LiteralString] = any_label(ALL_LABELS)
STEPS: Final[LiteralString] = "Task|ToolCall"
LISTED: Final[tuple[LiteralString, ...]] = ("ResearchGoal", "SourceFile")
"""The labels whose session listing a plan can load (the write rules list only these)."""


def spread(session_id: str) -> int:
    """Where inside a millisecond a session's insertion order starts (a digest)."""
    return int(hashlib.sha256(session_id.encode()).hexdigest()[:8], 16) % 1_000_000


def arguments(session_id: str) -> dict[str, str]:
    """``$args`` of ``PREFETCH`` and ``APPLY``: the session, and the separator of a chain
    position's parts."""
    return {"session": session_id, "nul": "\x00"}


ROWS_PLANNED: Final = 11
"""The fewest rows ``PREFETCH`` and ``APPLY`` are sent (``padded``): Neo4j plans a statement
anew for each size bucket of a list parameter (1-10, 11-100, …), and a plan of these costs
about a second on a server just started; nearly every event fits in one bucket this way."""


def padded(rows: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """``rows`` and as many nulls as ``ROWS_PLANNED`` asks for (every block skips them: a
    null row's ``k`` is null)."""
    return [*rows, *[None] * (ROWS_PLANNED - len(rows))]


def _rows(kind: LiteralString) -> LiteralString:
    return "[row IN $rows WHERE row.k = '" + kind + "']"


def _each(kind: LiteralString, body: LiteralString) -> LiteralString:
    """``body`` once per row of block ``kind``. The rows are picked before they are unwound:
    over ``UNWIND $rows … WHERE row.k = …`` the planner runs a block's index seeks for every
    row of every block and filters after (a session's whole ``session_id`` range per row)."""
    return "UNWIND " + _rows(kind) + " AS row " + body


# --- PREFETCH ---------------------------------------------------------------------------------


def _nearest(label: LiteralString, before: bool) -> LiteralString:
    """The member of ``label`` nearest to ``pos`` on one side, through the chain index
    (hinted: O(log n) whatever the statistics say)."""
    compare: LiteralString = "<" if before else ">"
    order: LiteralString = (
        "n.session_id DESC, n._sm_scope DESC, n._sm_pos DESC"
        if before
        else "n.session_id, n._sm_scope, n._sm_pos"
    )
    return (
        f"COLLECT {{ MATCH (n:{label} {{session_id: $args.session, _sm_scope: row.scope}}) "
        f"USING INDEX SEEK n:{label}(session_id, _sm_scope, _sm_pos) "
        f"WHERE n._sm_pos {compare} pos AND NOT n.id IN own RETURN n ORDER BY {order} LIMIT 1 }}"
    )


_NEAR: Final[LiteralString] = " + ".join(
    _nearest(label, before) for label in ("ToolCall", "Task") for before in (True, False)
)

_LISTINGS: Final[LiteralString] = " + ".join(
    "COLLECT { "
    + _each(
        "list",
        f"WITH row WHERE row.label = '{label}' MATCH (n:{label} {{session_id: $args.session}}) "
        "WHERE n._sm_live RETURN n",
    )
    + " }"
    for label in LISTED
)

PINNED: Final[LiteralString] = "CYPHER replan=skip "
"""``PREFETCH`` and ``APPLY`` keep the plan they were first given. Neo4j otherwise plans a
statement again once the store's statistics have drifted (every
``dbms.cypher.min_replan_interval``, 10 s, while a young store grows), and a plan of them costs
seconds on a busy server: a session's writers (a replay after an outage most of all) then queue
behind plans, not writes. Nothing in them depends on the statistics: every block starts at an
index seek (an id, the chain index, a session listing) or at a node already bound, and expands
from a bound node rather than between two (``Expand(Into)``, which the planner picks between two
bound nodes by the statistics); their plans made on an empty store scan nothing (checked by
hand on a fresh server; ``test_planned_writes`` checks the test database's)."""

PREFETCH: Final[LiteralString] = (
    PINNED
    + "MERGE (c:SessionCounter {session_id: $args.session}) ON CREATE SET c.seq = 0 "
    # Locked before it is read: a concurrent writer's increment is then committed and seen.
    + "SET c._sm_lock = true REMOVE c._sm_lock "
    "WITH c, c.seq AS before, COLLECT { "
    + _each(
        "step", f"WITH row WHERE NOT EXISTS {{ MATCH (s:{STEPS} {{id: row.id}}) }} RETURN row.id"
    )
    + " } AS missing "
    "SET c.seq = before + size(missing) "
    "WITH [i IN range(0, size(missing) - 1) | [missing[i], before + i + 1]] AS allocated, "
    "[row IN $rows WHERE row.k = 'step' | row.id] AS own "
    "WITH allocated, own, COLLECT { "
    + _each(
        "chain",
        "WITH row, coalesce(COLLECT { MATCH (s:" + STEPS + " {id: row.step}) RETURN s.seq }[0], "
        "[a IN allocated WHERE a[0] = row.step | a[1]][0], 0) AS seq "
        "WITH row, seq, "
        "row.at + $args.nul + right('00000000000000000000' + toString(seq), 20) AS pos "
        "RETURN {i: row.i, seq: seq, near: " + _NEAR + "}",
    )
    + " } AS chains "
    "WITH allocated, chains, COLLECT { "
    + _each("node", f"MATCH (n:{ANY} {{id: row.id}}) RETURN n")
    + " } + COLLECT { "
    + _each(
        "adj",
        f"MATCH (n:{ANY} {{id: row.id}}) MATCH (n)-[r]-(m) WHERE type(r) = row.type "
        "AND CASE row.dir WHEN 'out' THEN startNode(r) = n ELSE endNode(r) = n END RETURN m",
    )
    + " } + COLLECT { "
    + _each("art", "MATCH (n:Artifact {artifact_id: row.id}) RETURN n")
    + " } + COLLECT { "
    + _each(
        "key",
        f"MATCH (n:{ANY} {{key: row.key}}) "
        "WHERE labels(n)[0] = row.label AND n.session_id = $args.session RETURN n",
    )
    + " } + "
    + _LISTINGS
    + " + reduce(near = [], c IN chains | near + c.near) AS reached, COLLECT { "
    + _each(
        "node",
        "MATCH (p:ParkedEdge {waiting_for: row.id}) "
        "RETURN p {.waiting_for, .type, .source, .target, .props, ._sm_order} "
        "ORDER BY p._sm_order",
    )
    + " } AS parked "
    "WITH allocated, chains, parked, reached + COLLECT { UNWIND parked AS p "
    f"UNWIND [p.source, p.target] AS tip MATCH (n:{ANY} {{id: tip}}) RETURN n }} AS reached "
    "WITH allocated, chains, parked, COLLECT { UNWIND reached AS n WITH DISTINCT n RETURN n } "
    "AS found "
    "RETURN allocated, parked, "
    "[c IN chains | [c.i, c.seq, [n IN c.near | n.id]]] AS chains, "
    f"[n IN found | [{NODE}, n._sm_order]] AS nodes, "
    "COLLECT { UNWIND found AS a MATCH (a)-[r]->(b) WHERE b IN found "
    "RETURN [type(r), a.id, b.id, properties(r)] ORDER BY r._sm_order } AS edges"
)
"""Locks the session's counter, allocates the ``seq`` of the new steps, and returns every
node named or reached, the edges among them, the parked edges and, per chain probe, the
nearest member of each step label on each side (the event's own steps excluded)."""

# --- APPLY ------------------------------------------------------------------------------------

ORDER: Final[LiteralString] = (
    "MERGE (c:SessionCounter {session_id: $args.session}) ON CREATE SET c.seq = 0 "
    "SET c._sm_lock = true REMOVE c._sm_lock "
    "WITH c, timestamp() * 1000000 + $spread AS now "
    "WITH c, CASE WHEN coalesce(c.ord, 0) < now THEN now ELSE c.ord + 1 END AS base "
    "SET c.ord = base + $span "
)
"""Draws ``$span`` insertion-order values ``base .. base + $span`` for the session."""


_NODES: Final[LiteralString] = (
    "WITH c, base CALL (c, base) { "
    + _each(
        "node",
        f"OPTIONAL MATCH (n:{ANY} {{id: row.id}}) "
        # New (``row.o`` set): created with a dynamic label; a concurrent creator of the same
        # id that has committed is matched here instead, one still uncommitted fails the
        # unique constraint.
        "CALL (row, n, base) { WITH row, n WHERE n IS NULL AND row.o IS NOT NULL "
        "CREATE (m:$(row.label)) SET m += row.props, m._sm_order = base + row.o, "
        "m.created_at = coalesce(datetime(row.at), m.created_at) } "
        "CALL (row, n) { WITH row, n WHERE n.session_id = row.sess SET n += row.props, "
        "n.created_at = coalesce(datetime(row.at), n.created_at) } "
        # A node of another session is left alone and reported through the locked counter.
        "CALL (row, n, c) { WITH row, n WHERE n.session_id <> row.sess "
        "SET c._sm_refused = [n.id, n.key, n.session_id] }",
    )
    + " } "
)


APPLY: Final[LiteralString] = (
    PINNED
    + ORDER
    + _NODES
    + "WITH c, base CALL () { "
    + _each(
        "del",
        # From the source, the far end compared by id: with both ends seeked, the planner
        # may pick ``Expand(Into)`` (it does on an empty store; see the edge block).
        f"MATCH (a:{ANY} {{id: row.s}})-[r]->(b) "
        "WHERE b.id = row.t AND type(r) = row.type DELETE r",
    )
    + " } CALL (base) { "
    + _each(
        "edge",
        f"MATCH (a:{ANY} {{id: row.s}}) MATCH (b:{ANY} {{id: row.t}}) "
        # Not ``MERGE (a)-[r:$(row.type)]->(b)``: between two bound nodes a pattern is planned
        # as ``Expand(Into)``, which costs ~1 ms a row on 5.26 unless the type is static;
        # expanding from the source and comparing the far end costs ~0.05 ms. Two writers of
        # one edge still look for it one after the other, as MERGE's would: the ends are found
        # by locking seeks of their unique ids (this statement writes), held to the commit.
        "OPTIONAL MATCH (a)-[stored]->(far) "
        "WHERE far = b AND type(stored) = row.type "
        "CALL (row, a, b, stored, base) { WITH * WHERE stored IS NULL "
        "CREATE (a)-[r:$(row.type)]->(b) SET r._sm_order = base + row.o, "
        "r._sm_session = CASE WHEN a.session_id = b.session_id THEN a.session_id END, "
        "r += row.props } "
        "CALL (row, stored) { WITH * WHERE stored IS NOT NULL SET stored += row.props }",
    )
    + " } "
    f"FOREACH (row IN {_rows('park')} | MERGE (p:ParkedEdge {{waiting_for: row.w, "
    "type: row.type, source: row.s, target: row.t}) "
    "ON CREATE SET p.props = row.props, p._sm_order = base + row.o) "
    f"FOREACH (row IN {_rows('unpark')} | MERGE (p:ParkedEdge {{waiting_for: row.w, "
    "type: row.type, source: row.s, target: row.t}) DELETE p) "
    f"FOREACH (row IN {_rows('feed')} | MERGE (h:FeedHead {{session_id: row.session}}) "
    "ON CREATE SET h.seq = 0 SET h.seq = h.seq + 1 "
    "CREATE (:ChangeFeed {session_id: row.session, seq: h.seq, changes: row.changes, "
    "at: datetime()}) SET c._sm_feed = coalesce(c._sm_feed, []) + [h.seq]) "
    "WITH c, c._sm_feed AS feed, c._sm_refused AS refused "
    "REMOVE c._sm_feed, c._sm_refused "
    "RETURN coalesce(feed, []) AS feed, refused"
)
"""Applies node puts (created with their insertion order; changed only when this session
owns them; ``row.at`` is a node's ``created_at`` as ISO text, ``records.take_created_at``),
edge deletions (by type), edge creations and updates (the type a dynamic one: endpoints are
found through their ids' index), parked edges kept and released, and the change feed entries;
returns the feed numbers, in the order of the entries, and a node that turned out to belong to
another session (``[id, key, owner]``: the write must then be rolled back). The two scratch
properties on the locked counter are removed before the commit."""

TOUCH: Final[LiteralString] = (
    "MERGE (c:SessionCounter {session_id: $args.session}) ON CREATE SET c.seq = 0"
)
"""A change and nothing else: Neo4j plans a statement anew when its transaction already has
changes, so the plans of a batch's later statements are made after it (``_warm_writes``)."""
