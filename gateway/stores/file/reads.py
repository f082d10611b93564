"""The file store's read primitives (``resolvers.store.GraphReader``), served from the
in-memory graph in time proportional to their result; shared by the store and its
transactions."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from resolvers.records import SearchHit

# Search matches looked at between two yields to the event loop (about 2 ms of work): reads
# share the loop with writes, and a search stops at these points when its budget is spent.
SEARCH_STEP = 1000

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gateway.stores.file.graph import MemoryGraph
    from resolvers.records import Direction, EdgeRecord, EdgeType, Label, NodeRecord, Page
    from resolvers.store import ChainPosition


class Reads:
    """The read primitives, shared by the store and its transactions."""

    _graph: MemoryGraph
    _terms_indexed: asyncio.Event

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        nodes = self._graph.nodes
        return [nodes.get(node_id) for node_id in ids]

    async def nodes_by_key(
        self,
        key: str,
        *,
        labels: Sequence[Label] | None = None,
        session_id: str | None = None,
    ) -> list[NodeRecord]:
        return [
            node
            for node in self._graph.by_key(key)
            if (labels is None or node.label in labels)
            and (session_id is None or node.session_id == session_id)
        ]

    async def artifact_versions(
        self, artifact_id: str, *, session_id: str | None = None
    ) -> list[NodeRecord]:
        return [
            node
            for node in self._graph.versions(artifact_id)
            if session_id is None or node.session_id == session_id
        ]

    async def expand(
        self, ids: Sequence[str], edge_type: EdgeType, direction: Direction
    ) -> list[EdgeRecord]:
        return self._graph.expand(ids, edge_type, direction)

    async def edges_among(
        self, ids: Sequence[str], types: Sequence[EdgeType] | None = None
    ) -> list[EdgeRecord]:
        return self._graph.edges_among(ids, types)

    async def list_nodes(
        self,
        *,
        labels: Sequence[Label] | None = None,
        session_id: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> Page[NodeRecord]:
        return self._graph.list_nodes(labels, session_id, limit, offset)

    async def list_edges(
        self,
        types: Sequence[EdgeType],
        *,
        session_id: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> Page[EdgeRecord]:
        return self._graph.list_edges(types, session_id, limit, offset)

    async def session_node_ids(self, session_id: str) -> list[str]:
        return self._graph.session_ids(session_id)

    async def project_artifacts(self, project_id: str) -> list[NodeRecord]:
        return self._graph.project_artifacts(project_id)

    async def chain_members(self, session_id: str, scope_key: str | None) -> list[NodeRecord]:
        return self._graph.chain(session_id, scope_key)

    async def chain_neighbours(
        self, session_id: str, scope_key: str | None, position: ChainPosition
    ) -> tuple[NodeRecord | None, NodeRecord | None]:
        return self._graph.chain_neighbours(session_id, scope_key, position)

    async def chain_before(
        self,
        session_id: str,
        scope_key: str | None,
        position: ChainPosition,
        *,
        after: ChainPosition | None = None,
        label: Label | None = None,
        limit: int | None = None,
    ) -> list[NodeRecord]:
        return self._graph.chain_before(session_id, scope_key, position, after, label, limit)

    async def search(
        self,
        terms: Sequence[str],
        *,
        session_id: str | None = None,
        labels: Sequence[Label] | None = None,
        require_all: bool = False,
    ) -> list[SearchHit]:
        while not self._graph.terms_complete:
            await self._terms_indexed.wait()
        matches = [self._graph.search(term, session_id) for term in dict.fromkeys(terms)]
        if not matches:
            return []
        ids = set(matches[0]).intersection(*matches[1:]) if require_all else set().union(*matches)
        hits = []
        for count, node_id in enumerate(ids):
            if count and count % SEARCH_STEP == 0:
                await asyncio.sleep(0)  # a common term matches much of the graph
            node = self._graph.nodes.get(node_id)
            if node is None or node.deleted or (labels is not None and node.label not in labels):
                continue
            ranks = [found[node_id] for found in matches if node_id in found]
            hits.append(SearchHit(node, len(ranks), min(ranks)))
        return hits
