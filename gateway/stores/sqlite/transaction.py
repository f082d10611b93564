"""A SQLite-store transaction: each primitive one statement (or a few), on the event loop,
inside the transaction's savepoint in the writer's open ``BEGIN IMMEDIATE`` (see
``SqliteStore.transaction``); the database rolls it back whole, so no undo steps are kept."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.stores.sqlite import writes
from gateway.stores.sqlite.reads import Reads

if TYPE_CHECKING:
    from gateway.stores.sqlite.connection import Worker
    from resolvers.plan import ReadPlan
    from resolvers.records import EdgeRecord, EdgeType, NodeRecord


class SqliteTransaction(Reads):
    """The write primitives on the writer's connection; reads see this transaction's writes."""

    def __init__(self, writer: Worker) -> None:
        self._db = self._point = self._writer = writer

    async def put_node(self, node: NodeRecord) -> None:
        self._writer.call(writes.put_node, node)

    async def delete_node(self, node_id: str) -> bool:
        return self._writer.call(writes.delete_node, node_id)

    async def put_edge(self, edge: EdgeRecord) -> bool:
        return self._writer.call(writes.put_edge, edge)

    async def delete_edge(self, edge_type: EdgeType, source: str, target: str) -> bool:
        return self._writer.call(writes.delete_edge, edge_type, source, target)

    async def prefetch(self, plan: ReadPlan) -> None:
        """Nothing to load: every read is one local query."""

    async def next_seq(self, session_id: str) -> int:
        return self._writer.call(writes.next_seq, session_id)

    async def park_edge(self, edge: EdgeRecord, waiting_for: str) -> None:
        self._writer.call(writes.park_edge, edge, waiting_for)

    async def take_parked(self, node_id: str) -> list[EdgeRecord]:
        return self._writer.call(writes.take_parked, node_id)
