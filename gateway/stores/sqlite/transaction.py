"""A SQLite-store transaction: each primitive one statement (or a few), on the event loop,
inside the transaction's savepoint in the writer's open ``BEGIN IMMEDIATE`` (see
``SqliteStore.transaction``); the database rolls it back whole, so no undo steps are kept.

The nodes it reads by id (``get_nodes``, ``prefetch``) and writes are remembered for its
duration: a write is usually preceded by a read of the same node (merging, connecting its
edges), and nothing else writes meanwhile (the writer's lock), so the second read is answered
from what the first found. A transaction that fails is dropped with what it remembered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.stores.sqlite import writes
from gateway.stores.sqlite.reads import POINT_IDS, Reads

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gateway.stores.sqlite.connection import Worker
    from gateway.stores.sqlite.tail import Change, Tail
    from gateway.stores.sqlite.writes import Stored
    from resolvers.plan import ReadPlan
    from resolvers.records import EdgeRecord, EdgeType, NodeRecord


@dataclass(slots=True)
class Parked:
    """Whether the ``parked`` table may hold rows: when it surely holds none (most of the
    time), creating a node asks nothing for its parked edges. Kept by the store for its
    writer; set whenever a savepoint or transaction is rolled back (what it removed is back)."""

    maybe: bool = True


class SqliteTransaction(Reads):
    """The write primitives on the writer's connection; reads see this transaction's writes."""

    def __init__(self, writer: Worker, parked: Parked, tail: Tail, version: int) -> None:
        self._db = self._point = self._writer = writer
        self._parked = parked
        self._tail = tail
        self._version = self._staging = version  # the tail's version its commit will store
        self.changes: list[Change] = []  # staged in the tail: undone if it is rolled back
        self._known: dict[str, Stored | None] = {}  # by id; None: there is no such node

    def _stored(self, ids: Sequence[str]) -> list[Stored | None]:
        known = self._known
        missing = [node_id for node_id in ids if node_id not in known]
        if missing:
            found = self._writer.call(writes.stored_nodes, missing)
            for node_id in missing:
                known[node_id] = found.get(node_id)
        return [known[node_id] for node_id in ids]

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        if len(ids) > POINT_IDS:
            return await super().get_nodes(ids)
        return [None if stored is None else stored[1] for stored in self._stored(ids)]

    async def prefetch(self, plan: ReadPlan) -> None:
        """The nodes ``plan`` names, in one statement (the rest is read as asked)."""
        ids = list(dict.fromkeys((*plan.nodes, *plan.steps)))
        if 0 < len(ids) <= POINT_IDS:
            self._stored(ids)

    async def put_node(self, node: NodeRecord) -> None:
        (stored,) = self._stored([node.id])
        pending = stored is not None and self._tail.is_pending(stored[0])
        rid, rows = self._writer.call(writes.put_node, node, stored, pending)
        self._known[node.id] = (rid, node)
        if rows is not None:
            self.changes.append(self._tail.stage_put(rid, node, rows, self._staging))

    async def delete_node(self, node_id: str) -> bool:
        (stored,) = self._stored([node_id])
        if stored is None:
            return False
        self._writer.call(writes.delete_node, node_id, stored[0])
        self._known[node_id] = None
        change = self._tail.stage_drop(stored[0], self._staging)
        if change is not None:
            self.changes.append(change)
        return True

    async def put_edge(self, edge: EdgeRecord) -> bool:
        source, target = self._stored([edge.source, edge.target])
        if source is None or target is None:
            raise ValueError(f"edge endpoint missing: {edge.identity}")
        sessions = (source[1].session_id, target[1].session_id)
        return self._writer.call(writes.put_edge, edge, sessions)

    async def delete_edge(self, edge_type: EdgeType, source: str, target: str) -> bool:
        return self._writer.call(writes.delete_edge, edge_type, source, target)

    async def next_seq(self, session_id: str) -> int:
        return self._writer.call(writes.next_seq, session_id)

    async def park_edge(self, edge: EdgeRecord, waiting_for: str) -> None:
        self._parked.maybe = True
        self._writer.call(writes.park_edge, edge, waiting_for)

    async def take_parked(self, node_id: str) -> list[EdgeRecord]:
        if not self._parked.maybe:
            return []
        edges, self._parked.maybe = self._writer.call(writes.take_parked, node_id)
        return edges
