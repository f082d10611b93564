"""Copy a file store into Neo4j (``science-memory migrate --to neo4j``).

Every node, edge, parked edge and session counter is written through the store port's
idempotent write primitives (the ones events use), in transactions of ``batch`` records: a
second run finds everything in place and changes nothing; an interrupted run is resumed by
running it again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from gateway.stores.file.codec import Captured
    from gateway.stores.neo4j import Neo4jStore

T = TypeVar("T")
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class MigrationReport:
    nodes: int
    edges: int
    parked: int
    sessions: int
    nodes_before: int
    nodes_after: int


async def migrate_to_neo4j(
    source: Captured, target: Neo4jStore, *, batch: int = 500, progress: Progress | None = None
) -> MigrationReport:
    """Write ``source`` (a captured file store) into ``target``; ``progress(done, total)``."""
    total = len(source.nodes) + len(source.edges) + len(source.parked)
    done = 0
    nodes_before = await target.count_nodes()

    def advance(count: int) -> None:
        nonlocal done
        done += count
        if progress is not None:
            progress(done, total)

    for chunk in _chunks(source.nodes, batch):
        async with target.transaction() as tx:
            for node in chunk:
                await tx.put_node(node)
        advance(len(chunk))
    for edges in _chunks(source.edges, batch):
        async with target.transaction() as tx:
            for edge in edges:
                await tx.put_edge(edge)
        advance(len(edges))
    for parked in _chunks(source.parked, batch):
        async with target.transaction() as tx:
            for waiting_for, edge in parked:
                await tx.park_edge(edge, waiting_for)
        advance(len(parked))
    for session_id, value in source.seq.items():
        await target.raise_seq(session_id, value)
    return MigrationReport(
        nodes=len(source.nodes),
        edges=len(source.edges),
        parked=len(source.parked),
        sessions=len(source.seq),
        nodes_before=nodes_before,
        nodes_after=await target.count_nodes(),
    )


def _chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[start : start + size] for start in range(0, len(items), size)]
