"""A file-store transaction: changes applied to the in-memory graph at once, with the redo ops
that the log records and the undo steps that roll them back in time proportional to the change
(a failed commit, or a failed append after it, see ``FileStore.transaction``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.stores.file.codec import (
    Op,
    delete_edge_op,
    delete_node_op,
    edge_op,
    node_op,
    park_op,
    seq_op,
    unpark_op,
)
from gateway.stores.file.reads import Reads
from resolvers.errors import KeyOwnedByOtherSessionError

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from gateway.stores.file.graph import MemoryGraph
    from resolvers.plan import ReadPlan
    from resolvers.records import EdgeRecord, EdgeType, NodeRecord


class FileTransaction(Reads):
    """Applies changes to the graph at once, recording redo ops (for the log) and undo steps."""

    def __init__(self, graph: MemoryGraph, terms_indexed: asyncio.Event) -> None:
        self._graph = graph
        self._terms_indexed = terms_indexed
        self.ops: list[Op] = []
        self.commit_number = 0  # set when its record is handed to the log
        self._undo: list[Callable[[], object]] = []

    def rollback(self) -> None:
        for step in reversed(self._undo):
            step()
        self._undo.clear()
        self.ops.clear()

    async def put_node(self, node: NodeRecord) -> None:
        stored = self._graph.nodes.get(node.id)
        if stored is not None and stored.session_id != node.session_id:
            # Atomic with the write: every transaction holds the store's one write lock.
            raise KeyOwnedByOtherSessionError(node.id, node.key, stored.session_id, node.session_id)
        old = self._graph.put_node(node)
        self.ops.append(node_op(node))
        if old is None:
            self._undo.append(lambda: self._graph.delete_node(node.id))
        else:
            self._undo.append(lambda: self._graph.put_node(old))

    async def delete_node(self, node_id: str) -> bool:
        removed = self._graph.delete_node(node_id)
        if removed is None:
            return False
        node, edges = removed
        self.ops.append(delete_node_op(node_id))

        def restore() -> None:
            self._graph.put_node(node)
            for edge in edges:
                self._graph.put_edge(edge)

        self._undo.append(restore)
        return True

    async def put_edge(self, edge: EdgeRecord) -> bool:
        if edge.source not in self._graph.nodes or edge.target not in self._graph.nodes:
            raise ValueError(f"edge endpoint missing: {edge.identity}")
        old = self._graph.put_edge(edge)
        if old == edge:
            return False
        self.ops.append(edge_op(edge))
        if old is None:
            self._undo.append(lambda: self._graph.delete_edge(*edge.identity))
        else:
            self._undo.append(lambda: self._graph.put_edge(old))
        return old is None

    async def delete_edge(self, edge_type: EdgeType, source: str, target: str) -> bool:
        old = self._graph.delete_edge(edge_type, source, target)
        if old is None:
            return False
        self.ops.append(delete_edge_op(edge_type, source, target))
        self._undo.append(lambda: self._graph.put_edge(old))
        return True

    async def next_seq(self, session_id: str) -> int:
        value = self._graph.next_seq(session_id)
        self.ops.append(seq_op(session_id, value))
        self._undo.append(lambda: self._restore_seq(session_id, value - 1))
        return value

    def _restore_seq(self, session_id: str, value: int) -> None:
        if value > 0:
            self._graph.seq[session_id] = value
        else:
            self._graph.seq.pop(session_id, None)

    async def park_edge(self, edge: EdgeRecord, waiting_for: str) -> None:
        parked = self._graph.parked.setdefault(waiting_for, {})
        if edge.identity in parked:
            return
        parked[edge.identity] = edge
        self.ops.append(park_op(edge, waiting_for))
        self._undo.append(lambda: parked.pop(edge.identity, None))

    async def prefetch(self, plan: ReadPlan) -> None:
        """Nothing to load: every read is answered from memory."""

    async def take_parked(self, node_id: str) -> list[EdgeRecord]:
        parked = self._graph.parked.pop(node_id, None)
        if not parked:
            return []
        self.ops.append(unpark_op(node_id))
        self._undo.append(lambda: self._graph.parked.__setitem__(node_id, parked))
        return list(parked.values())
