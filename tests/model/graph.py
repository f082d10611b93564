"""The model's graph: plain dicts of nodes and edges, dumped from a real store.

Only what SPEC §4 reads is kept: a node's label, session, liveness and the facts the
documented tie-breaks use (``seq``, ``createdAt``, id, the chain position of a step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from resolvers.records import EdgeRecord, NodeRecord
    from resolvers.store import GraphReader


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    label: str
    key: str
    session: str
    live: bool
    seq: int
    created_at: float

    @property
    def newest(self) -> tuple[int, float, str]:
        """The documented "most recent" order (larger = more recent)."""
        return self.seq, self.created_at, self.id


Edge = tuple[str, str, str]
"""``(type, source, target)``, the type as stored (``next``, ``produces``, …)."""


@dataclass(slots=True)
class Graph:
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: set[Edge] = field(default_factory=set)

    _out: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    _in: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    def index(self) -> Graph:
        """Build the adjacency lists (once ``edges`` is complete)."""
        for kind, source, target in sorted(self.edges):
            self._out.setdefault((source, kind), []).append(target)
            self._in.setdefault((target, kind), []).append(source)
        return self

    def out(self, node: str, edge_type: str) -> list[str]:
        return self._out.get((node, edge_type), [])

    def into(self, node: str, edge_type: str) -> list[str]:
        return self._in.get((node, edge_type), [])

    def visible(self, node: str, session: str | None) -> bool:
        """Live, and of ``session`` unless it is ``None``."""
        found = self.nodes.get(node)
        return found is not None and found.live and (session is None or found.session == session)


def to_model(nodes: Iterable[NodeRecord], edges: Iterable[EdgeRecord]) -> Graph:
    graph = Graph()
    for node in nodes:
        graph.nodes[node.id] = Node(
            node.id,
            node.label.value,
            node.key,
            node.session_id,
            not node.deleted,
            node.seq,
            node.created_at.timestamp(),
        )
    graph.edges = {(edge.type.value, edge.source, edge.target) for edge in edges}
    return graph.index()


async def dump(store: GraphReader, sessions: Iterable[str]) -> Graph:
    """Every node of ``sessions`` and every edge among them."""
    ids = [node_id for session in sessions for node_id in await store.session_node_ids(session)]
    nodes = [node for node in await store.get_nodes(ids) if node is not None]
    return to_model(nodes, await store.edges_among(ids))
