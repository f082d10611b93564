"""The SQLite store's read primitives (``resolvers.store.GraphReader``), shared by the store
(its reader connection) and its transactions (the writer's, which sees its own writes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.stores.sqlite import queries

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from gateway.stores.sqlite.connection import Readers, Worker
    from gateway.stores.sqlite.tail import Tail
    from resolvers.records import (
        Direction,
        EdgeRecord,
        EdgeType,
        Label,
        NodeRecord,
        Page,
        SearchHit,
    )
    from resolvers.store import ChainPosition


# Up to this many ids, a lookup or one hop of a walk runs on the event loop (see
# ``gateway.stores.sqlite.connection``), and so does a walk to the nearest target (``reach``);
# larger lookups and hops, listings and searches on a thread.
POINT_IDS = 64


class Reads:
    """The read primitives, each one statement (or a few): point reads on ``_point``, on the
    event loop; reads of many rows on a thread of ``_db`` (for a transaction the two are one
    connection, which only the transaction uses meanwhile). A search reads ``terms`` and the
    tail (``gateway.stores.sqlite.tail``) as of one state."""

    _db: Readers | Worker
    _point: Worker
    _tail: Tail  # the search rows not in ``terms`` yet
    _version: int | None = None  # the tail's version a transaction reads (else its snapshot's)
    _pages: queries.SessionPages | None = None  # a reader's session pages (none in a write)

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        if len(ids) <= POINT_IDS:
            return self._point.call(queries.get_nodes, ids)
        return await self._db.run(queries.get_nodes, ids)

    async def nodes_by_key(
        self,
        key: str,
        *,
        labels: Sequence[Label] | None = None,
        session_id: str | None = None,
    ) -> list[NodeRecord]:
        return self._point.call(queries.nodes_by_key, key, labels, session_id)

    async def artifact_versions(
        self, artifact_id: str, *, session_id: str | None = None
    ) -> list[NodeRecord]:
        return self._point.call(queries.artifact_versions, artifact_id, session_id)

    async def expand(
        self, ids: Sequence[str], edge_type: EdgeType, direction: Direction
    ) -> list[EdgeRecord]:
        if not ids:
            return []
        if len(ids) <= POINT_IDS:
            return self._point.call(queries.expand, ids, edge_type, direction)
        return await self._db.run(queries.expand, ids, edge_type, direction)

    async def reach(
        self,
        ids: Sequence[str],
        edge_type: EdgeType,
        direction: Direction,
        *,
        stop: frozenset[Label],
        session_id: str | None,
    ) -> tuple[list[EdgeRecord], list[NodeRecord]]:
        """``resolvers.store.ReachReader``: a whole walk's levels in one statement (a chain's
        walk to its goal took two per step). On the event loop, as those statements ran: it
        reads the rows they read, and a thread's hand-off cost more than the statement
        (several milliseconds on a busy machine)."""
        return self._point.call(queries.reach, ids, edge_type, direction, stop, session_id)

    async def reaches(
        self,
        ids: Sequence[str],
        edge_type: EdgeType,
        direction: Direction,
        *,
        stop: frozenset[Label],
        session_id: str | None,
        avoid: Collection[str],
        walk_on: bool = True,
    ) -> bool:
        """``resolvers.store.ReachReader.reaches``: on the event loop, as ``reach``."""
        arguments = (ids, edge_type, direction, stop, session_id, avoid, walk_on)
        return self._point.call(queries.reaches, *arguments)

    async def edges_among(
        self, ids: Sequence[str], types: Sequence[EdgeType] | None = None
    ) -> list[EdgeRecord]:
        if not ids:
            return []
        if len(ids) <= POINT_IDS:
            return self._point.call(queries.edges_among, ids, types)
        return await self._db.run(queries.edges_among, ids, types)

    async def list_nodes(
        self,
        *,
        labels: Sequence[Label] | None = None,
        session_id: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> Page[NodeRecord]:
        return await self._db.run(queries.list_nodes, labels, session_id, limit, offset)

    async def list_edges(
        self,
        types: Sequence[EdgeType],
        *,
        session_id: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> Page[EdgeRecord]:
        return await self._db.run(queries.list_edges, types, session_id, limit, offset)

    async def session_page(self, session_id: str, *, limit: int) -> queries.SessionPage:
        """``resolvers.store.SessionPageReader``: the page and its edges in one job (the page
        read before when the session is unchanged since, on a reader connection)."""
        return await self._db.run(queries.session_page, session_id, limit, self._pages)

    async def session_node_ids(self, session_id: str) -> list[str]:
        return await self._db.run(queries.session_node_ids, session_id)

    async def project_artifacts(self, project_id: str) -> list[NodeRecord]:
        return await self._db.run(queries.project_artifacts, project_id)

    async def chain_members(self, session_id: str, scope_key: str | None) -> list[NodeRecord]:
        return await self._db.run(queries.chain_members, session_id, scope_key)

    async def chains_members(
        self, session_id: str, scope_keys: Sequence[str | None]
    ) -> list[list[NodeRecord]]:
        """``resolvers.store.ChainsReader``: every chain in one job."""
        return await self._db.run(queries.chains_members, session_id, scope_keys)

    async def chain_neighbours(
        self, session_id: str, scope_key: str | None, position: ChainPosition
    ) -> tuple[NodeRecord | None, NodeRecord | None]:
        return self._point.call(queries.chain_neighbours, session_id, scope_key, position)

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
        arguments = (session_id, scope_key, position, after, label, limit)
        if limit is not None and limit <= POINT_IDS:
            return self._point.call(queries.chain_before, *arguments)
        return await self._db.run(queries.chain_before, *arguments)

    async def search(
        self,
        terms: Sequence[str],
        *,
        session_id: str | None = None,
        labels: Sequence[Label] | None = None,
        require_all: bool = False,
    ) -> list[SearchHit]:
        return await self._db.run(
            queries.search, self._tail, self._version, terms, session_id, labels, require_all
        )

    async def search_ranked(
        self,
        terms: Sequence[str],
        *,
        session_id: str | None = None,
        labels: Sequence[Label] | None = None,
        require_all: bool = False,
        limit: int,
        offset: int = 0,
    ) -> Page[NodeRecord]:
        return await self._db.run(
            queries.search_ranked,
            self._tail,
            self._version,
            terms,
            session_id,
            labels,
            require_all,
            limit,
            offset,
        )
