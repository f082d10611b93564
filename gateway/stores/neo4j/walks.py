"""Whole walks in one statement: ``resolvers.store.WalkReader`` for the Neo4j store.

The use cases state a walk as data — a chain kind's ``Hop`` tuple (``resolvers.chains.HOPS``),
the trace's upstream moves per label (``resolvers.provenance.UPSTREAM``) — and walk it over the
primitives, one round trip per hop and edge type. Here the same data is compiled into one
statement (cached per walk) with the same rules, so a request costs one round trip whatever
its length:

* a chain hop is a ``CALL`` over the frontier: live nodes (of ``$session``) of the target
  labels not reached before, most recent first (``seq``, ``created_at``, id) — a ``limit``
  hop newest first (version, own time, id) and the ``limit`` first; a variable hop is a
  ``SHORTEST 1`` quantified path from each frontier node through such nodes to a target,
  keeping the nearest targets and their paths; an empty hop leaves no row (all-or-nothing).
  What each hop added comes back; ``resolvers.chains`` assembles it.
* the trace is a ``reduce`` over ``range(1, $max_hops)`` whose step computes the next level in
  a ``COLLECT`` subquery: every move of every frontier node's label, the first move asked for
  winning for a node reached over several, a ``next`` predecessor that is a step standing for
  the first step of the frontier step's chain (the chain index), the levels stopping at the
  first one holding ``$target`` or the first empty one. ``resolvers.provenance`` draws the
  verdict.

A variable hop keeps a shortest path per target; where several are equally short the
primitive walk keeps the one it met first. They agree wherever ``next`` forms simple chains,
which the write path maintains (SPEC §3.3).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Final, LiteralString

from gateway.stores.neo4j.cypher import (
    EDGE_MAP,
    NODE,
    STEP_LABELS,
    any_label,
    any_type,
    chain_after,
    label_name,
    type_name,
)
from gateway.stores.neo4j.reads import Reads
from gateway.stores.neo4j.records import chain_pos, to_edge, to_node
from resolvers.records import Direction, EdgeType, Label
from resolvers.store import HopRecord, Move
from resolvers.writes import CHAIN_START

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from resolvers.records import NodeRecord
    from resolvers.store import Hop, UpstreamStep

Table = tuple[tuple[Label, tuple[Move, ...]], ...]
"""The moves per label of a trace (``resolvers.provenance.UPSTREAM``), hashable."""

_DIRECTIONS: Final[Mapping[Direction, LiteralString]] = {Direction.IN: "in", Direction.OUT: "out"}


def _recent(node: LiteralString) -> LiteralString:
    """Most recent first, as ``resolvers.chains.recency``."""
    return f"{node}.seq DESC, {node}.created_at DESC, {node}.id DESC"


def _newest(node: LiteralString) -> LiteralString:
    """Newest first, as ``resolvers.merging.newest`` (the order of ``limit`` picks)."""
    return (
        f"coalesce({node}.version, 0) DESC, coalesce({node}.chain_at, {node}.finished_at, "
        f"{node}.retrieved_at, {node}.uploaded_at, {node}.produced_at, '') DESC, {node}.id DESC"
    )


def _live(node: LiteralString) -> LiteralString:
    """``resolvers.resolve.in_scope``: live, and of ``$session`` unless it is null."""
    return f"{node}._sm_live AND ($session IS NULL OR {node}.session_id = $session)"


def _arrow(types: LiteralString, direction: Direction, name: LiteralString) -> LiteralString:
    if direction is Direction.IN:
        return f"<-[{name}:{types}]-"
    return f"-[{name}:{types}]->"


# --- chains -----------------------------------------------------------------------------------


def _single_hop(hop: Hop) -> LiteralString:
    limit: LiteralString = ""
    order = _recent("n")
    if hop.limit is not None:
        limit = "WITH found[..$limits[size(hops)]] AS found "
        order = _newest("n")
    return (
        f"UNWIND frontier AS f MATCH (f){_arrow(type_name(hop.edge), hop.direction, 'r')}"
        f"(n:{any_label(hop.targets)}) WHERE {_live('n')} AND NOT n.id IN reached "
        f"WITH n, collect(r) AS crossed ORDER BY {order} "
        "WITH collect({node: n, crossed: crossed}) AS found "
        f"{limit}RETURN [x IN found | x.node] AS found, [x IN found | x.node] AS added, "
        "reduce(a = [], x IN found | a + x.crossed) AS crossed"
    )


def _variable_hop(hop: Hop) -> LiteralString:
    step = f"(){_arrow(type_name(hop.edge), hop.direction, '')}(m)"
    return (
        "UNWIND range(0, size(frontier) - 1) AS i WITH i, frontier[i] AS f "
        f"MATCH p = SHORTEST 1 (f) ({step} WHERE {_live('m')} AND NOT m.id IN reached)+ "
        f"(t:{any_label(hop.targets)}) "
        # The path to each target from the first frontier node among the nearest.
        "WITH t, p ORDER BY length(p), i WITH t, head(collect(p)) AS p "
        "WITH collect(p) AS paths, min(length(p)) AS nearest "
        "UNWIND paths AS p WITH p WHERE length(p) = nearest "
        f"WITH last(nodes(p)) AS t, p ORDER BY {_recent('t')} "
        "RETURN collect(t) AS found, "
        "reduce(a = [], p IN collect(p) | a + [n IN nodes(p)[1..] WHERE NOT n IN a]) AS added, "
        "reduce(a = [], p IN collect(p) | a + [r IN relationships(p) WHERE NOT r IN a]) AS crossed"
    )


@cache
def chain_walk(source: Label, hops: tuple[Hop, ...]) -> LiteralString:
    """``$source``'s walk over ``hops``: one row holding what each hop added, or none."""
    statement = (
        f"MATCH (s:{label_name(source)} {{id: $source}}) "
        "WITH [s] AS frontier, [s.id] AS reached, [] AS hops "
    )
    for hop in hops:
        block = _variable_hop(hop) if hop.variable else _single_hop(hop)
        statement += (
            f"CALL (frontier, reached, hops) {{ {block} }} "
            "WITH found AS frontier, reached + [n IN added | n.id] AS reached, "
            "hops + [{nodes: added, edges: crossed}] AS hops WHERE found <> [] "
        )
    return (
        statement + f"RETURN [h IN hops | {{nodes: [n IN h.nodes | {NODE}], "
        f"edges: [r IN h.edges | {EDGE_MAP}]}}] AS hops"
    )


# --- traces -----------------------------------------------------------------------------------


def _expand(table: Table) -> LiteralString:
    """Rows ``y, move, ord``: every move of frontier node ``x``'s label (``_sm_order`` orders a
    node's edges as ``expand`` does). One branch per direction, each over every type the moves
    follow in that direction, keeping the label's own moves (``$moves``)."""
    branches: list[LiteralString] = []
    for direction, name in _DIRECTIONS.items():
        types = frozenset(edge for _, moves in table for edge, way in moves if way is direction)
        if types:
            arrow = _arrow(any_type(types), direction, "r")
            branches.append(
                f"MATCH (x){arrow}(y) WITH y, r, [type(r), '{name}'] AS move "
                "WHERE move IN $moves[labels(x)[0]] RETURN y, move, r._sm_order AS ord"
            )
    return " UNION ALL ".join(branches)


_NEXT: Final[LiteralString] = type_name(EdgeType.NEXT)
_STEP: Final[LiteralString] = "|".join(STEP_LABELS)

_HEAD: Final[LiteralString] = (
    f"OPTIONAL CALL (p, near) {{ WITH p, near WHERE p:{_STEP} "
    + chain_after("near", "near.session_id", "near._sm_scope")
    + " RETURN n AS head } "
)
"""``head``: the first step of ``near``'s chain (steps always have a ``seq``, so a chain:
``_sm_scope``), when its predecessor ``p`` is a step."""


def _level(table: Table) -> LiteralString:
    """The next state of the trace ``st``: its next level, from its frontier."""
    return (
        # Every move of the frontier, in the order the frontier first asks for it.
        "WITH reduce(acc = [], x IN st.frontier | "
        "acc + [m IN $moves[labels(x)[0]] WHERE NOT m IN acc]) AS order, COLLECT { "
        "UNWIND range(0, size(st.frontier) - 1) AS i WITH i, st.frontier[i] AS x "
        f"CALL (x) {{ {_expand(table)} }} "
        "RETURN {i: i, x: x, y: y, move: move} AS row ORDER BY row.i, ord } AS rows "
        f"WITH order, [row IN rows WHERE row.move[0] <> '{_NEXT}'] AS moved, "
        f"[row IN rows WHERE row.move[0] = '{_NEXT}'] AS preceded "
        "WITH order, moved, preceded, "
        "COLLECT { UNWIND moved AS row RETURN DISTINCT row.y AS y } AS plain "
        # A node reached over other moves: by the first of them. Over `next`: the predecessor,
        # or the first step of the chain when the predecessor is a step.
        "WITH plain, preceded, COLLECT { UNWIND plain AS y "
        "WITH y, head([m IN order WHERE any(row IN moved WHERE row.y = y AND row.move = m)]) AS m "
        f"WHERE {_live('y')} RETURN {{node: y, via: m[0]}} AS step "
        "} + COLLECT { UNWIND preceded AS row WITH row WHERE NOT row.y IN plain "
        f"WITH DISTINCT row.y AS p WHERE {_live('p')} "
        "WITH p, head([row IN preceded WHERE row.y = p]).x AS near "
        f"{_HEAD}"
        f"WITH CASE WHEN head IS NOT NULL AND {_live('head')} THEN head ELSE p END AS e "
        f"WITH DISTINCT e WHERE NOT e IN plain RETURN {{node: e, via: '{_NEXT}'}} AS step "
        "} AS found "
        "WITH COLLECT { UNWIND found AS step WITH step WHERE NOT step.node.id IN st.visited "
        f"WITH step, step.node AS n RETURN step ORDER BY {_recent('n')} }} AS level "
        "RETURN {frontier: [step IN level | step.node], "
        "visited: st.visited + [step IN level | step.node.id], "
        "levels: st.levels + CASE WHEN level = [] THEN [] ELSE [level] END, "
        "done: level = [] OR any(step IN level WHERE $target IN labels(step.node))}"
    )


@cache
def upstream_walk(start: Label, table: Table) -> LiteralString:
    """The trace from ``$start``: a row ``h, node, via`` per step, in level order (``h`` from 0)."""
    return (
        f"MATCH (s:{label_name(start)} {{id: $start}}) "
        "WITH reduce(st = {frontier: [s], visited: [s.id], levels: [], done: false}, "
        "hop IN range(1, $max_hops) | "
        f"CASE WHEN st.done THEN st ELSE COLLECT {{ {_level(table)} }}[0] END) AS st "
        "UNWIND range(0, size(st.levels) - 1) AS h "
        "UNWIND range(0, size(st.levels[h]) - 1) AS k "
        "WITH h, k, st.levels[h][k].node AS n, st.levels[h][k].via AS via "
        f"RETURN h, {NODE} AS node, via ORDER BY h, k"
    )


class Walks(Reads):
    """The read primitives plus whole walks (``resolvers.store.WalkReader``)."""

    async def walk_chain(
        self, source: NodeRecord, hops: Sequence[Hop], session_id: str | None
    ) -> list[HopRecord] | None:
        records = await self._fetch(
            chain_walk(source.label, tuple(hops)),
            source=source.id,
            session=session_id,
            limits=[hop.limit for hop in hops],
        )
        if not records:
            return None
        return [
            HopRecord(
                [to_node(node) for node in hop["nodes"]],
                [to_edge(e["type"], e["source"], e["target"], e["props"]) for e in hop["edges"]],
            )
            for hop in records[0]["hops"]
        ]

    async def walk_upstream(
        self,
        start: NodeRecord,
        moves: Mapping[Label, Sequence[Move]],
        target: Label,
        max_hops: int,
        session_id: str,
    ) -> list[list[UpstreamStep]]:
        table = tuple((label, tuple(label_moves)) for label, label_moves in moves.items())
        records = await self._fetch(
            upstream_walk(start.label, table),
            start=start.id,
            session=session_id,
            target=target.value,
            max_hops=max_hops,
            moves={
                label.value: [[edge.value, _DIRECTIONS[direction]] for edge, direction in m]
                for label, m in table
            },
            pos=chain_pos(CHAIN_START),
        )
        levels: list[list[UpstreamStep]] = []
        for record in records:
            if record["h"] == len(levels):
                levels.append([])
            levels[-1].append((to_node(record["node"]), EdgeType(record["via"])))
        return levels
