"""A provenance trace in one statement: ``resolvers.store.TraceReader`` for Neo4j.

``resolvers.provenance`` walks upstream hop by hop; over the primitives a hop is about ten
round trips, each waiting for the one before (edges, their nodes, per run the chain index,
the chain's first step, its goals, the steps a run ended on). Here one statement
(``upstream_region``) finds the start, locks its session (``gateway.stores.neo4j.sources``)
and answers all of them for every hop the trace can reach, level by level
(``resolvers.store.UpstreamRegion``, one ``CALL`` a level, the same index seeks and
projections as ``gateway.stores.neo4j.cypher``), with, for every step it reaches, the steps
below it that a run from there crosses (at most ``BELOW``: the witness path's runs are then
known before the walk ends). A longer run's steps take one more statement of the same
transaction (``RUN_LINES``), once the witness is known. Should the walk go on past the region,
a hop is one statement (``upstream_hop``) of that transaction too (``Neo4jStore`` runs the
region alone in auto-commit, and the whole walk again in a transaction when it asks for more):

* the frontier's edges of the walked types, with their far ends, in ``expand``'s order;
* per run, the nearest member of the target label below its start (``chain_before``, limit
  1) and, for a run through its chain's start, the chain's first member (``chain_neighbours``
  at ``CHAIN_START``); the ``next`` edges into those first members with their far ends, and
  the ``next`` edges out of every member found.

The statement texts depend only on labels, whether the target label is a step's and the
region's depth (cached).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, Final, LiteralString, TypeVar

from gateway.stores.neo4j.cypher import (
    ALL_LABELS,
    EDGE_MAP,
    NODE,
    STEP_LABELS,
    any_label,
    type_name,
)
from gateway.stores.neo4j.reads import Reads, rows_of
from gateway.stores.neo4j.records import Decoded, chain_pos, chain_scope
from gateway.stores.neo4j.sources import locked_source, source_params
from resolvers.chains import STEPS
from resolvers.provenance import DEFAULT_TARGET, WALKED
from resolvers.records import EdgeType, Label
from resolvers.store import (
    LineQuery,
    LineRecord,
    RegionEntry,
    SourceRef,
    UpstreamRecord,
    UpstreamRegion,
    UpstreamView,
)
from resolvers.writes import CHAIN_START

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence

    import neo4j

    from resolvers.records import NodeRecord
    from resolvers.store import RunQuery

T = TypeVar("T")

_DESC: Final[LiteralString] = "n.session_id DESC, n._sm_scope DESC, n._sm_pos DESC"
_ASC: Final[LiteralString] = "n.session_id, n._sm_scope, n._sm_pos"


def _members(
    names: Sequence[LiteralString], where: LiteralString, order: LiteralString
) -> LiteralString:
    """A ``UNION ALL`` of one index-hinted chain seek per step label (as ``cypher._chain``)
    over the chain of the imported ``q``, binding ``n``."""
    return " UNION ALL ".join(
        f"MATCH (n:{name} {{session_id: q.session, _sm_scope: q.scope}}) "
        f"USING INDEX SEEK n:{name}(session_id, _sm_scope, _sm_pos) WHERE {where} RETURN n"
        f"{order}"
        for name in names
    )


_NODE_LISTS: Final[tuple[LiteralString, ...]] = ("nodes", "nearest", "head", "below")
"""The lists of nodes of a region entry: ids in the answer, each node projected once."""


def _projected(nodes: LiteralString) -> LiteralString:
    return f"[n IN {nodes} | {NODE}]"


@cache
def upstream_hop(
    frontier: frozenset[Label], types: tuple[EdgeType, ...], label: Label
) -> LiteralString:
    """The answers of one trace hop (``resolvers.store.UpstreamRecord``) as one row."""
    walked = "|".join(type_name(edge_type) for edge_type in types)
    steps = [name for name in STEP_LABELS if name == label.value]
    nearest: LiteralString = "RETURN [] AS nearest"
    if steps:
        nearest = (
            "CALL (q) { "
            + _members(
                steps,
                "n._sm_pos < q.pos AND (q.after IS NULL OR n._sm_pos > q.after)",
                f" ORDER BY {_DESC} LIMIT 1",
            )
            + " } WITH n ORDER BY n._sm_pos DESC LIMIT 1 RETURN collect(n) AS nearest"
        )
    head = (
        "CALL (q) { "
        + _members(
            STEP_LABELS, "q.after IS NULL AND n._sm_pos > $start", f" ORDER BY {_ASC} LIMIT 1"
        )
        + " } WITH n ORDER BY n._sm_pos, n.id LIMIT 1 RETURN collect(n) AS heads"
    )
    return (
        "CALL () { "
        f"UNWIND $rows AS row MATCH (f:{any_label(frontier)} {{id: row.id}}) "
        f"MATCH (f)<-[r:{walked}]-(n) WITH row, r, n ORDER BY row.i, r._sm_order "
        f"RETURN collect({EDGE_MAP}) AS edges, collect({NODE}) AS sources }} "
        "CALL () { "
        "UNWIND $runs AS q "
        f"CALL (q) {{ {nearest} }} CALL (q) {{ {head} }} "
        "RETURN collect({nearest: nearest, head: head(heads)}) AS runs } "
        "CALL (runs) { "
        "UNWIND runs AS q WITH DISTINCT q.head AS h WHERE h IS NOT NULL "
        "MATCH (h)<-[r:next]-(n) WITH h, r, n ORDER BY h.id, r._sm_order "
        f"RETURN collect({EDGE_MAP}) AS into_heads, collect({NODE}) AS goals }} "
        "CALL (runs) { "
        "UNWIND runs AS q UNWIND [q.head] + q.nearest AS e WITH DISTINCT e WHERE e IS NOT NULL "
        "MATCH (e)-[r:next]->() WITH e, r ORDER BY e.id, r._sm_order "
        f"RETURN collect({EDGE_MAP}) AS out_of_ends }} "
        "RETURN edges, sources + goals AS nodes, into_heads, out_of_ends, "
        f"[q IN runs | {{nearest: {_projected('q.nearest')}, "
        f"head: {_projected('[x IN [q.head] WHERE x IS NOT NULL]')}}}] AS runs"
    )


REGION_LEVELS: Final = 4
"""The deepest region one statement reads: the statement's plan grows with every level, and a
trace that needs more goes on hop by hop past it."""

BELOW: Final = 32
"""The most steps a region entry reads below a step for the witness path's run from it
(``RegionEntry.below``); a longer run's steps are read once the witness is known
(``RUN_LINES``)."""

REGION_PLANNED: Final = (Label.ARTIFACT, Label.CLAIM)
"""The start labels whose default trace is planned when the store opens: the traces a
reviewer asks for (is this artifact, this claim traceable?)."""

_SCOPED: Final[LiteralString] = "x._sm_live AND x.session_id = sc"
"""``resolvers.resolve.in_scope`` of ``x`` in the trace's session ``sc``."""


def _chain_seek(name: LiteralString, where: LiteralString, order: LiteralString) -> LiteralString:
    """One index-hinted seek of ``name`` members of the chain of ``f``, binding ``n``."""
    return (
        f"MATCH (n:{name} {{session_id: f.session_id, _sm_scope: f._sm_scope}}) "
        f"USING INDEX SEEK n:{name}(session_id, _sm_scope, _sm_pos) WHERE {where} RETURN n"
        f"{order}"
    )


def _region_level(steps: bool) -> LiteralString:
    """One level of the region: the entries of ``frontier`` and the next level; the nearest
    steps of the target label only when it is a step's (``steps``)."""
    walked = "|".join(type_name(edge_type) for edge_type in WALKED)
    nearest: LiteralString = "WITH *, [] AS nearest "
    if steps:
        nearest = (
            "CALL (f) { CALL (f) { "
            + " UNION ALL ".join(
                f"WITH f WHERE $target = '{name}' "
                + _chain_seek(name, "n._sm_pos < f._sm_pos", f" ORDER BY {_DESC} LIMIT 1")
                for name in STEP_LABELS
            )
            + " } RETURN collect(n) AS nearest } "
        )
    heads = " UNION ALL ".join(
        _chain_seek(name, "n._sm_pos > $start", f" ORDER BY {_ASC} LIMIT 1") for name in STEP_LABELS
    )
    below = " UNION ALL ".join(
        _chain_seek(
            name,
            "n._sm_pos < f._sm_pos AND (nearest = [] OR n._sm_pos > nearest[0]._sm_pos)",
            f" ORDER BY {_DESC} LIMIT $below",
        )
        for name in STEP_LABELS
    )
    return (
        "CALL (frontier, sc) { UNWIND frontier AS f "
        "CALL (f, sc) { "
        f"MATCH (f)<-[r:{walked}]-(n) RETURN collect({EDGE_MAP}) AS edges, "
        "collect(n) AS sources, "
        "collect(CASE WHEN type(r) <> 'next' AND n._sm_live AND n.session_id = sc THEN n END) "
        "AS plain } " + nearest + f"CALL (f) {{ CALL (f) {{ {heads} }} "
        "WITH n ORDER BY n._sm_pos, n.id LIMIT 1 RETURN collect(n) AS heads } "
        "CALL (heads, sc) { UNWIND heads AS h MATCH (h)<-[r:next]-(n) "
        f"RETURN collect({EDGE_MAP}) AS into_head, collect(n) AS goal_nodes, "
        "collect(CASE WHEN n._sm_live AND n.session_id = sc THEN n END) AS goals } "
        "CALL (nearest, heads) { UNWIND nearest + heads AS e WITH DISTINCT e "
        f"MATCH (e)-[r:next]->() RETURN collect({EDGE_MAP}) AS out_of_ends }} "
        f"CALL (f, nearest) {{ CALL (f, nearest) {{ {below} }} "
        "WITH n ORDER BY n._sm_pos DESC LIMIT $below RETURN collect(n) AS below } "
        "CALL (f, below) { UNWIND CASE WHEN f._sm_pos IS NULL THEN [] ELSE [f] + below END AS m "
        f"MATCH (m)-[r:next]-() RETURN collect({EDGE_MAP}) AS below_edges }} "
        "RETURN collect({id: f.id, edges: edges, nodes: sources + goal_nodes, "
        "nearest: nearest, head: heads, into_head: into_head, out_of_ends: out_of_ends, "
        "below: below, below_edges: below_edges}) AS level, "
        "collect(plain + [x IN nearest WHERE " + _SCOPED + "] "
        "+ [x IN heads WHERE x.id <> f.id] + goals) AS found } "
        "CALL (found, seen) { UNWIND found AS c UNWIND c AS x WITH DISTINCT x "
        "WHERE NOT x.id IN seen RETURN collect(x) AS fresh } "
        "WITH s, sc, entries + level AS entries, seen + [x IN fresh | x.id] AS seen, "
        "CASE WHEN any(x IN fresh WHERE $target IN labels(x)) THEN [] ELSE fresh END "
        "AS frontier "
    )


@cache
def upstream_region(label: Label, by_artifact: bool, target: Label, levels: int) -> LiteralString:
    """``resolvers.store.UpstreamRegion`` of ``$target`` (``target``'s) as one row,
    ``levels`` levels deep, from the source ``gateway.stores.neo4j.sources`` finds after
    locking its session. Never planned again once planned (``replan=skip``): its plan holds
    no choice the data's statistics could change (unique and hinted index seeks, expansions
    from bound nodes), and planning it costs seconds on a busy server."""
    return (
        "CYPHER replan=skip "
        + locked_source(label, by_artifact)
        + "WITH s, sc, [x IN [s] WHERE x IS NOT NULL AND NOT $target IN labels(x)] AS frontier, "
        "[x IN [s] WHERE x IS NOT NULL | x.id] AS seen, [] AS entries "
        + _region_level(target in STEPS)
        * levels
        + "CALL (entries) { UNWIND entries AS e "
        f"UNWIND {' + '.join(f'e.{name}' for name in _NODE_LISTS)} AS n WITH DISTINCT n "
        f"RETURN collect({NODE}) AS nodes }} "
        f"RETURN {_projected('[x IN [s] WHERE x IS NOT NULL]')} AS start, "
        "[e IN entries | e {.id, .edges, .into_head, .out_of_ends, .below_edges, "
        + ", ".join(f"{name}: [n IN e.{name} | n.id]" for name in _NODE_LISTS)
        + "}] AS entries, nodes"
    )


RUN_LINES: Final = (
    "UNWIND $lines AS q "
    "CALL (q) { CALL (q) { "
    + _members(STEP_LABELS, "n._sm_pos < q.pos AND (q.after IS NULL OR n._sm_pos > q.after)", "")
    + " } WITH n ORDER BY n._sm_pos DESC RETURN collect(n) AS members } "
    f"OPTIONAL MATCH (s:{any_label(ALL_LABELS)} {{id: q.start_id}}) "
    f"OPTIONAL MATCH (t:{any_label(ALL_LABELS)} {{id: q.end_id}}) "
    "CALL (members, s, t) { "
    "WITH [x IN [s] + members + [t] WHERE x IS NOT NULL] AS line "
    "UNWIND line AS a MATCH (a)-[r:next]->(b) WHERE b IN line "
    f"RETURN collect({EDGE_MAP}) AS edges }} "
    f"RETURN q.i AS i, {_projected('members')} AS members, edges ORDER BY i"
)
"""Per line (``resolvers.store.LineQuery``), ``chain_before`` and the ``next`` edges among
the line's nodes."""


def _line_rows(lines: Sequence[LineQuery]) -> list[dict[str, Any]]:
    """``$lines`` of ``RUN_LINES``."""
    return [
        {
            "i": index,
            "session": line.session_id,
            "scope": chain_scope(line.scope_key),
            "pos": chain_pos(line.start),
            "after": None if line.after is None else chain_pos(line.after),
            "start_id": line.start_id,
            "end_id": line.end_id,
        }
        for index, line in enumerate(lines)
    ]


def _entry(
    value: Mapping[str, Any], nodes: Mapping[str, NodeRecord], decoded: Decoded
) -> RegionEntry:
    def listed(name: str) -> list[NodeRecord]:
        # A node that vanished while the statement read it is listed without its id.
        return [nodes[node_id] for node_id in value[name] if node_id in nodes]

    below = listed("below")
    return RegionEntry(
        decoded.edges(value["edges"]),
        listed("nodes"),
        listed("nearest"),
        next(iter(listed("head")), None),
        decoded.edges(value["into_head"]),
        decoded.edges(value["out_of_ends"]),
        # ``$below`` is one more than ``BELOW``: a full read says the run goes further down.
        below if len(below) <= BELOW and len(below) == len(value["below"]) else None,
        decoded.edges(value["below_edges"]),
    )


class Traces(Reads):
    """The read primitives plus whole traces (``resolvers.store.TraceReader``)."""

    @staticmethod
    def trace_statements() -> list[list[tuple[LiteralString, dict[str, Any]]]]:
        """The statements of a default trace, a transaction per start label: the region's,
        then the witness path's (to plan them ahead: each costs seconds to plan on a busy
        machine), with parameters that find nothing. The region locks the counter of the
        session "" as a trace locks its own, so the witness path's statement is planned, as
        in a trace, after the transaction's first change (Neo4j plans a statement apart for
        a transaction with changes)."""
        params = {
            "start": chain_pos(CHAIN_START),
            "below": BELOW + 1,
            "target": DEFAULT_TARGET.value,
            **source_params(SourceRef(Label.ARTIFACT, None, "", "", None)),
        }
        nowhere = LineQuery("", None, CHAIN_START, None, "", "")
        return [
            [
                (
                    upstream_region(label, label is Label.ARTIFACT, DEFAULT_TARGET, REGION_LEVELS),
                    params,
                ),
                (RUN_LINES, {"lines": _line_rows([nowhere])}),
            ]
            for label in REGION_PLANNED
        ]

    async def upstream_walk(
        self,
        start: SourceRef,
        target: Label,
        levels: int,
        walk: Callable[[UpstreamView], Awaitable[T]],
    ) -> T:
        """The region statement takes the session's lock; the trace's further statements, if
        any, run in its transaction (the store gives it one: ``Neo4jStore.upstream_walk``)."""
        return await walk(UpstreamView(await self._region(start, target, levels), self))

    async def _region(self, start: SourceRef, target: Label, levels: int) -> UpstreamRegion:
        record = await self._record(
            upstream_region(start.label, start.node_id is None, target, min(levels, REGION_LEVELS)),
            start=chain_pos(CHAIN_START),
            below=BELOW + 1,
            target=target.value,
            **source_params(start),
        )
        decoded = Decoded()
        found = decoded.nodes(record["start"])
        nodes = {node.id: node for node in decoded.nodes(record["nodes"])}
        entries = {value["id"]: _entry(value, nodes, decoded) for value in record["entries"]}
        return UpstreamRegion(found[0] if found else None, entries)

    async def upstream_hop(
        self,
        frontier: Sequence[str],
        types: Sequence[EdgeType],
        runs: Sequence[RunQuery],
        label: Label,
    ) -> UpstreamRecord:
        rows, labels = rows_of(frontier)
        queries = [
            {
                "session": run.session_id,
                "scope": chain_scope(run.scope_key),
                "pos": chain_pos(run.start),
                "after": None if run.after is None else chain_pos(run.after),
            }
            for run in runs
        ]
        if not rows:
            labels = frozenset({Label.TASK})  # any: no row matches
        record = await self._record(
            upstream_hop(labels, tuple(types), label),
            rows=rows,
            runs=queries,
            start=chain_pos(CHAIN_START),
        )
        order = {edge_type: index for index, edge_type in enumerate(types)}
        decoded = Decoded()
        edges = sorted(decoded.edges(record["edges"]), key=lambda edge: order[edge.type])
        return UpstreamRecord(
            edges,
            decoded.nodes(record["nodes"]),
            [decoded.nodes(run["nearest"]) for run in record["runs"]],
            [next(iter(decoded.nodes(run["head"])), None) for run in record["runs"]],
            decoded.edges(record["into_heads"]),
            decoded.edges(record["out_of_ends"]),
        )

    async def run_lines(self, lines: Sequence[LineQuery]) -> list[LineRecord]:
        records = await self._fetch(RUN_LINES, lines=_line_rows(lines))
        decoded = Decoded()
        return [
            LineRecord(decoded.nodes(record["members"]), decoded.edges(record["edges"]))
            for record in records
        ]

    async def _record(self, query: LiteralString, **params: Any) -> neo4j.Record:
        (record,) = await self._fetch(query, **params)
        return record
