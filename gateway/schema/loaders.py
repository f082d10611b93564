"""Per-request DataLoaders: node fields batch their lookups, so a list of N nodes asking for a
relationship costs one store call per edge type and direction, not N."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from strawberry.dataloader import DataLoader

from resolvers.records import Direction, EdgeType, NodeRecord

if TYPE_CHECKING:
    from collections.abc import Sequence

    from resolvers.store import GraphReader

NeighbourKey = tuple[str, EdgeType, Direction]


class Loaders:
    """The loaders of one request, over the store active when the request started."""

    def __init__(self, store: GraphReader) -> None:
        self._store = store
        self.node = DataLoader[str, NodeRecord | None](self._load_nodes)
        self.neighbours = DataLoader[NeighbourKey, list[NodeRecord]](self._load_neighbours)

    async def _load_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        nodes = await self._store.get_nodes(list(ids))
        return [node if node is not None and not node.deleted else None for node in nodes]

    async def _load_neighbours(self, keys: Sequence[NeighbourKey]) -> list[list[NodeRecord]]:
        groups: dict[tuple[EdgeType, Direction], list[str]] = defaultdict(list)
        for node_id, edge_type, direction in keys:
            groups[(edge_type, direction)].append(node_id)
        found: dict[NeighbourKey, list[str]] = defaultdict(list)
        for (edge_type, direction), ids in groups.items():
            for edge in await self._store.expand(ids, edge_type, direction):
                origin, other = (
                    (edge.source, edge.target)
                    if direction is Direction.OUT
                    else (edge.target, edge.source)
                )
                found[(origin, edge_type, direction)].append(other)
        others = list({other for ids in found.values() for other in ids})
        nodes = dict(zip(others, await self._load_nodes(others), strict=True))
        return [
            [node for other in found[key] if (node := nodes[other]) is not None] for key in keys
        ]
