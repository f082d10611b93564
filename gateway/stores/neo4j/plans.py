"""The two statements of a planned write (``gateway.stores.neo4j.planned``): ``PREFETCH`` loads
what a ``resolvers.plan.ReadPlan`` names, ``APPLY`` applies the changes the rules made.

Each is ONE constant text with ONE list parameter, ``$rows``, whose rows are tagged by block
(``row.k``): Neo4j caches a plan per statement text and per bucketed size of each list
parameter, so one list keeps the number of plans small, and ``FOREACH`` blocks (not a ``CALL``
per block) keep planning cheap. Labels and relationship types cannot be parameters: the write
has a block per label and per edge shape of the domain (``EDGE_SHAPES``); an edge of any other
shape is written by the primitive statement instead.

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
from typing import Final, LiteralString

from gateway.stores.neo4j.cypher import ALL_LABELS, LABELS, NODE, any_label

ANY: Final[LiteralString] = any_label(ALL_LABELS)
STEPS: Final[LiteralString] = "Task|ToolCall"
LISTED: Final[tuple[LiteralString, ...]] = ("ResearchGoal", "SourceFile")
"""The labels whose session listing a plan can load (the write rules list only these)."""

EDGE_SHAPES: Final[tuple[tuple[LiteralString, LiteralString, LiteralString], ...]] = (
    ("ResearchGoal", "next", "ToolCall"),
    ("ResearchGoal", "next", "Task"),
    ("ToolCall", "next", "ToolCall"),
    ("ToolCall", "next", "Task"),
    ("Task", "next", "ToolCall"),
    ("Task", "next", "Task"),
    ("Task", "contains", "ToolCall"),
    ("ToolCall", "produces", "Code"),
    ("ToolCall", "produces", "Paper"),
    ("Code", "produces", "Artifact"),
    ("Paper", "extracts", "Evidence"),
    ("SourceFile", "extracts", "Evidence"),
    ("Evidence", "supports", "Claim"),
    ("Artifact", "supports", "Claim"),
    ("SourceFile", "supports", "Claim"),
    ("Claim", "stated_in", "Artifact"),
    ("Artifact", "supersedes", "Artifact"),
    ("Artifact", "input", "Code"),
    ("SourceFile", "input", "Code"),
    ("SourceFile", "feeds", "ResearchGoal"),
)
SHAPE_INDEX: Final[dict[tuple[str, str, str], int]] = {
    shape: index for index, shape in enumerate(EDGE_SHAPES)
}


def shape_kind(
    shape: tuple[LiteralString, LiteralString, LiteralString], removed: bool
) -> LiteralString:
    """The row tag of an edge shape's block (``row.k``)."""
    source, edge_type, target = shape
    return ("d:" if removed else "e:") + source + ":" + edge_type + ":" + target


def shape_kind_of(shape: tuple[str, str, str], removed: bool = False) -> str:
    """``shape_kind`` of a shape of ``EDGE_SHAPES`` given by its names."""
    return shape_kind(EDGE_SHAPES[SHAPE_INDEX[shape]], removed)


def spread(session_id: str) -> int:
    """Where inside a millisecond a session's insertion order starts (a digest)."""
    return int(hashlib.sha256(session_id.encode()).hexdigest()[:8], 16) % 1_000_000


def _rows(kind: LiteralString) -> LiteralString:
    return "[row IN $rows WHERE row.k = '" + kind + "']"


def _each(kind: LiteralString, body: LiteralString) -> LiteralString:
    return "UNWIND $rows AS row WITH row WHERE row.k = '" + kind + "' " + body


# --- PREFETCH ---------------------------------------------------------------------------------


def _side(label: LiteralString, before: bool) -> LiteralString:
    compare: LiteralString = "<" if before else ">"
    order: LiteralString = (
        "n.session_id DESC, n._sm_scope DESC, n._sm_pos DESC"
        if before
        else "n.session_id, n._sm_scope, n._sm_pos"
    )
    return (
        f"MATCH (n:{label} {{session_id: $session, _sm_scope: row.scope}}) "
        f"USING INDEX SEEK n:{label}(session_id, _sm_scope, _sm_pos) "
        f"WHERE n._sm_pos {compare} pos AND NOT n.id IN own RETURN n ORDER BY {order} LIMIT 1"
    )


def _neighbour(before: bool, name: LiteralString) -> LiteralString:
    order: LiteralString = "n._sm_pos DESC" if before else "n._sm_pos"
    return (
        "CALL (row, pos, own) { CALL (row, pos, own) { "
        + _side("ToolCall", before)
        + " UNION ALL "
        + _side("Task", before)
        + f" }} WITH n ORDER BY {order} LIMIT 1 RETURN collect(n)[0] AS {name} }} "
    )


_LISTINGS: Final[LiteralString] = " + ".join(
    "COLLECT { "
    + _each(
        "list",
        f"AND row.label = '{label}' MATCH (n:{label} {{session_id: $session}}) "
        "WHERE n._sm_live RETURN n",
    )
    + " }"
    for label in LISTED
)

PREFETCH: Final[LiteralString] = (
    "MERGE (c:SessionCounter {session_id: $session}) ON CREATE SET c.seq = 0 "
    # Locked before it is read: a concurrent writer's increment is then committed and seen.
    "SET c._sm_lock = true REMOVE c._sm_lock "
    "WITH c, c.seq AS before, COLLECT { "
    + _each("step", f"AND NOT EXISTS {{ MATCH (s:{STEPS} {{id: row.id}}) }} RETURN row.id")
    + " } AS missing "
    "SET c.seq = before + size(missing) "
    "WITH [i IN range(0, size(missing) - 1) | [missing[i], before + i + 1]] AS allocated, "
    "[row IN $rows WHERE row.k = 'step' | row.id] AS own "
    "WITH allocated, own, COLLECT { "
    + _each(
        "chain",
        "WITH row, coalesce(COLLECT { MATCH (s:" + STEPS + " {id: row.step}) RETURN s.seq }[0], "
        "[a IN allocated WHERE a[0] = row.step | a[1]][0], 0) AS seq "
        "WITH row, seq, row.at + $nul + right('00000000000000000000' + toString(seq), 20) AS pos "
        + _neighbour(True, "below")
        + _neighbour(False, "above")
        + "RETURN {i: row.i, seq: seq, before: below, after: above}",
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
        "WHERE labels(n)[0] = row.label AND n.session_id = $session RETURN n",
    )
    + " } + "
    + _LISTINGS
    + " + [c IN chains WHERE c.before IS NOT NULL | c.before]"
    " + [c IN chains WHERE c.after IS NOT NULL | c.after] AS reached, COLLECT { "
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
    "[c IN chains | [c.i, c.seq, c.before.id, c.after.id]] AS chains, "
    f"[n IN found | [{NODE}, n._sm_order]] AS nodes, "
    "COLLECT { UNWIND found AS a MATCH (a)-[r]->(b) WHERE b IN found "
    "RETURN [type(r), a.id, b.id, properties(r)] ORDER BY r._sm_order } AS edges"
)
"""Locks the session's counter, allocates the ``seq`` of the new steps, and returns every
node named or reached, the edges among them, the chain neighbours and the parked edges."""

# --- APPLY ------------------------------------------------------------------------------------

ORDER: Final[LiteralString] = (
    "MERGE (c:SessionCounter {session_id: $session}) ON CREATE SET c.seq = 0 "
    "SET c._sm_lock = true REMOVE c._sm_lock "
    "WITH c, timestamp() * 1000000 + $spread AS now "
    "WITH c, CASE WHEN coalesce(c.ord, 0) < now THEN now ELSE c.ord + 1 END AS base "
    "SET c.ord = base + $span "
)
"""Draws ``$span`` insertion-order values ``base .. base + $span`` for the session."""


def _node_block(label: LiteralString) -> LiteralString:
    return (
        f"FOREACH (row IN {_rows('n:' + label)} | MERGE (n:{label} {{id: row.id}}) "
        "ON CREATE SET n.session_id = row.sess, n._sm_order = base + row.o "
        "FOREACH (_ IN CASE WHEN n.session_id = row.sess THEN [1] ELSE [] END | "
        "SET n += row.props)) "
    )


def _edge_block(index: int, removed: bool) -> LiteralString:
    source, edge_type, target = EDGE_SHAPES[index]
    kind = shape_kind(EDGE_SHAPES[index], removed)
    head = (
        f"FOREACH (row IN {_rows(kind)} | MERGE (a:{source} {{id: row.s}}) "
        f"MERGE (b:{target} {{id: row.t}}) MERGE (a)-[r:{edge_type}]->(b) "
    )
    if removed:
        return head + "DELETE r) "
    return (
        head + "ON CREATE SET r._sm_order = base + row.o, "
        "r._sm_session = CASE WHEN a.session_id = b.session_id THEN a.session_id END "
        "SET r += row.props) "
    )


APPLY: Final[LiteralString] = (
    ORDER
    + "".join(_node_block(label) for label in LABELS)
    + "".join(_edge_block(index, True) for index in range(len(EDGE_SHAPES)))
    + "".join(_edge_block(index, False) for index in range(len(EDGE_SHAPES)))
    + f"FOREACH (row IN {_rows('park')} | MERGE (p:ParkedEdge {{waiting_for: row.w, "
    "type: row.type, source: row.s, target: row.t}) "
    "ON CREATE SET p.props = row.props, p._sm_order = base + row.o) "
    f"FOREACH (row IN {_rows('unpark')} | MERGE (p:ParkedEdge {{waiting_for: row.w, "
    "type: row.type, source: row.s, target: row.t}) DELETE p) "
    f"FOREACH (row IN {_rows('feed')} | MERGE (h:FeedHead {{session_id: row.session}}) "
    "ON CREATE SET h.seq = 0 SET h.seq = h.seq + 1 "
    "CREATE (:ChangeFeed {session_id: row.session, seq: h.seq, changes: row.changes, "
    "at: datetime()})) "
    "WITH base RETURN COLLECT { "
    + _each("feed", "MATCH (h:FeedHead {session_id: row.session}) RETURN [row.session, h.seq]")
    + " } AS feed, COLLECT { "
    + "UNWIND $rows AS row WITH row WHERE row.k STARTS WITH 'n:' "
    f"MATCH (n:{ANY} {{id: row.id}}) WHERE n.session_id <> row.sess "
    "RETURN [n.id, n.key, n.session_id] } AS refused"
)
"""Applies node puts (created with their owner and insertion order; changed only when this
session owns them), edge deletions, edge creations and updates, parked edges kept and
released, and the change feed entries; returns each entry's feed number and the nodes that
turned out to belong to another session (the write must then be rolled back)."""
