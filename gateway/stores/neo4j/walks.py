"""Whole chain walks in one statement: ``resolvers.store.WalkReader`` for the Neo4j store.

The use cases state a chain walk as data — a chain kind's ``Hop`` tuple
(``resolvers.chains.HOPS``) — and walk it over the primitives, one round trip per hop. Here
the same data is compiled into one statement (cached per walk) with the same rules, the
source's lookup (``resolvers.store.SourceRef``) and its session's lock first
(``gateway.stores.neo4j.sources``: the walk reads one state of the session), so a request
costs one round trip whatever its length:

* a chain hop is a ``CALL`` over the frontier: live nodes (of ``$src.session`` unless
  ``$src.any_session``) of the target labels not reached before, most recent first (``seq``,
  ``created_at``, id) — a ``limit`` hop newest first (version, own time, id) and the
  ``limit`` first; a variable hop is a ``SHORTEST 1`` quantified path from each frontier
  node through such nodes to a target, keeping the nearest targets and their paths; an
  empty hop leaves no row (all-or-nothing).
  What each hop added comes back; ``resolvers.chains`` assembles it.

A variable hop keeps a shortest path per target; where several are equally short the
primitive walk keeps the one it met first. They agree wherever ``next`` forms simple chains,
which the write path maintains (SPEC §3.3).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, Final, LiteralString

from gateway.stores.neo4j.cypher import (
    EDGE_MAP,
    NODE,
    any_label,
    type_name,
)
from gateway.stores.neo4j.records import to_edges, to_node, to_nodes
from gateway.stores.neo4j.sources import locked_source, source, source_params
from gateway.stores.neo4j.traces import Traces
from resolvers.records import Direction
from resolvers.store import HopRecord, SourcedWalk, SourceRef

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from resolvers.records import Label, NodeRecord
    from resolvers.store import Hop


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
    """``resolvers.resolve.in_scope``: live, and of ``$src.session`` unless ``$src.any_session``."""
    return f"{node}._sm_live AND ($src.any_session OR {node}.session_id = $src.session)"


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
def chain_walk(
    label: Label, by_artifact: bool, hops: tuple[Hop, ...], *, locked: bool
) -> LiteralString:
    """The source ``gateway.stores.neo4j.sources`` finds (of ``label``; its session locked
    first when ``locked``) and its walk over ``hops``: one row, the walk holding what each hop
    added, or empty when the source or a hop reaches nothing."""
    statement = (
        "CALL (s) { WITH s WHERE s IS NOT NULL WITH [s] AS frontier, [s.id] AS reached, [] AS hops "
    )
    for hop in hops:
        block = _variable_hop(hop) if hop.variable else _single_hop(hop)
        statement += (
            f"CALL (frontier, reached, hops) {{ {block} }} "
            "WITH found AS frontier, reached + [n IN added | n.id] AS reached, "
            "hops + [{nodes: added, edges: crossed}] AS hops WHERE found <> [] "
        )
    find = locked_source if locked else source
    return (
        find(label, by_artifact)
        + statement
        + f"RETURN collect([h IN hops | {{nodes: [n IN h.nodes | {NODE}], "
        f"edges: [r IN h.edges | {EDGE_MAP}]}}]) AS walked }} "
        f"RETURN [n IN [s] WHERE n IS NOT NULL | {NODE}] AS source, walked"
    )


class Walks(Traces):
    """The read primitives plus whole chain walks (``resolvers.store.WalkReader``) and traces
    (``resolvers.store.TraceReader``)."""

    async def walk_chain(
        self, source: NodeRecord, hops: Sequence[Hop], session_id: str | None
    ) -> list[HopRecord] | None:
        ref = SourceRef(source.label, source.id, session_id)
        walked = await self._walk(ref, hops, locked=False)
        return None if walked is None or walked.hops is None else list(walked.hops)

    async def walk_chain_from(self, ref: SourceRef, hops: Sequence[Hop]) -> SourcedWalk | None:
        """Inside a view of the session already: its transaction holds the lock the
        statement takes (the store runs it in a transaction of its own)."""
        return await self._walk(ref, hops, locked=True)

    async def _walk(
        self, ref: SourceRef, hops: Sequence[Hop], *, locked: bool
    ) -> SourcedWalk | None:
        (record,) = await self._fetch(
            chain_walk(ref.label, ref.node_id is None, tuple(hops), locked=locked),
            limits=[hop.limit for hop in hops],
            **source_params(ref),
        )
        if not record["source"]:
            return None
        walked = record["walked"]
        return SourcedWalk(to_node(record["source"][0]), _hops(walked[0]) if walked else None)


def _hops(values: Sequence[Mapping[str, Any]]) -> list[HopRecord]:
    return [
        HopRecord(
            to_nodes(hop["nodes"]),
            to_edges(hop["edges"]),
        )
        for hop in values
    ]
