"""A SQLite-store transaction: each primitive one statement (or a few) inside the writer's
open ``BEGIN IMMEDIATE``; the database rolls it back whole, so no undo steps are kept."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.stores.sqlite import writes
from gateway.stores.sqlite.reads import Reads

if TYPE_CHECKING:
    from gateway.stores.sqlite.connection import Worker
    from resolvers.records import EdgeRecord, EdgeType, NodeRecord


class SqliteTransaction(Reads):
    """The write primitives on the writer's connection; reads see this transaction's writes."""

    def __init__(self, writer: Worker) -> None:
        self._db = writer

    async def put_node(self, node: NodeRecord) -> None:
        await self._db.run(writes.put_node, node)

    async def delete_node(self, node_id: str) -> bool:
        return await self._db.run(writes.delete_node, node_id)

    async def put_edge(self, edge: EdgeRecord) -> bool:
        return await self._db.run(writes.put_edge, edge)

    async def delete_edge(self, edge_type: EdgeType, source: str, target: str) -> bool:
        return await self._db.run(writes.delete_edge, edge_type, source, target)

    async def next_seq(self, session_id: str) -> int:
        return await self._db.run(writes.next_seq, session_id)

    async def park_edge(self, edge: EdgeRecord, waiting_for: str) -> None:
        await self._db.run(writes.park_edge, edge, waiting_for)

    async def take_parked(self, node_id: str) -> list[EdgeRecord]:
        return await self._db.run(writes.take_parked, node_id)
