"""The read primitives of the Neo4j store, shared by the store and its transactions.

Each primitive is one statement (``gateway.stores.neo4j.cypher``) run by ``_fetch``: an
auto-commit read on the store, a statement of the open transaction inside one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, LiteralString

from gateway.stores.neo4j import cypher
from gateway.stores.neo4j.records import (
    chain_pos,
    chain_scope,
    session_token,
    to_edges,
    to_node,
    to_nodes,
    vanished,
)
from resolvers.records import Label, Page, SearchHit, split_node_id
from resolvers.text import is_token

if TYPE_CHECKING:
    from collections.abc import Sequence

    import neo4j

    from resolvers.records import Direction, EdgeRecord, EdgeType, NodeRecord
    from resolvers.store import ChainPosition

LUCENE_MAX_TERM: Final = 255
CHAIN_LIMIT: Final = (
    2**62
)  # ``LIMIT`` needs a number: "no limit"  # the whitespace analyzer cuts longer tokens into pieces


def rows_of(ids: Sequence[str]) -> tuple[list[dict[str, Any]], frozenset[Label]]:
    """``{i, id}`` rows of the well-formed ids (others name no node) and their labels."""
    rows: list[dict[str, Any]] = []
    labels: set[Label] = set()
    for index, node_id in enumerate(ids):
        label = label_of(node_id)
        if label is not None:
            rows.append({"i": index, "id": node_id})
            labels.add(label)
    return rows, frozenset(labels)


def label_of(node_id: str) -> Label | None:
    parsed = split_node_id(node_id)
    return parsed[0] if parsed else None


def _labels(labels: Sequence[Label] | None) -> frozenset[Label]:
    return cypher.ALL_LABELS if labels is None else frozenset(labels)


class Reads:
    """The read primitives, on the store (auto-commit reads) and in a transaction."""

    async def _fetch(self, query: LiteralString, **params: Any) -> list[neo4j.Record]:
        raise NotImplementedError

    async def _nodes(self, query: LiteralString, **params: Any) -> list[NodeRecord]:
        return to_nodes(record["node"] for record in await self._fetch(query, **params))

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        found: list[NodeRecord | None] = [None] * len(ids)
        rows, labels = rows_of(ids)
        if rows:
            for record in await self._fetch(cypher.get_nodes(labels), rows=rows):
                if not vanished(record["node"]):
                    found[record["i"]] = to_node(record["node"])
        return found

    async def nodes_by_key(
        self,
        key: str,
        *,
        labels: Sequence[Label] | None = None,
        session_id: str | None = None,
    ) -> list[NodeRecord]:
        wanted = _labels(labels)
        if not wanted:
            return []
        return await self._nodes(cypher.nodes_by_key(wanted), key=key, session=session_id)

    async def artifact_versions(
        self, artifact_id: str, *, session_id: str | None = None
    ) -> list[NodeRecord]:
        return await self._nodes(
            cypher.ARTIFACT_VERSIONS, artifact_id=artifact_id, session=session_id
        )

    async def expand(
        self, ids: Sequence[str], edge_type: EdgeType, direction: Direction
    ) -> list[EdgeRecord]:
        rows, labels = rows_of(ids)
        if not rows:
            return []
        query = cypher.expand(labels, edge_type, direction)
        return self._edges(await self._fetch(query, rows=rows))

    async def edges_among(
        self, ids: Sequence[str], types: Sequence[EdgeType] | None = None
    ) -> list[EdgeRecord]:
        rows, labels = rows_of(list(dict.fromkeys(ids)))
        if not rows:
            return []
        names = None if types is None else [edge_type.value for edge_type in types]
        return self._edges(await self._fetch(cypher.edges_among(labels), rows=rows, types=names))

    @staticmethod
    def _edges(records: list[neo4j.Record]) -> list[EdgeRecord]:
        return to_edges(record.data() for record in records)

    async def list_nodes(
        self,
        *,
        labels: Sequence[Label] | None = None,
        session_id: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> Page[NodeRecord]:
        wanted = _labels(labels)
        if not wanted:
            return Page([], 0, False)
        query = cypher.list_label_nodes(wanted)
        if session_id is not None or labels is None:
            query = cypher.list_session_nodes(wanted)
        (record,) = await self._fetch(
            query, session=session_id or "", offset=offset, limit=limit, end=offset + limit
        )
        items = to_nodes(record["nodes"])
        total = int(record["total"])
        return Page(items, total, offset + len(items) < total)

    async def list_edges(
        self,
        types: Sequence[EdgeType],
        *,
        session_id: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> Page[EdgeRecord]:
        if not types:
            return Page([], 0, False)
        wanted = frozenset(types)
        query = cypher.list_type_edges(wanted)
        if session_id is not None:
            query = cypher.list_session_edges(wanted)
        (record,) = await self._fetch(
            query, session=session_id, offset=offset, limit=limit, end=offset + limit
        )
        items = to_edges(record["edges"])
        total = int(record["total"])
        return Page(items, total, offset + len(items) < total)

    async def session_node_ids(self, session_id: str) -> list[str]:
        records = await self._fetch(cypher.SESSION_NODE_IDS, session=session_id)
        return [record["id"] for record in records]

    async def project_artifacts(self, project_id: str) -> list[NodeRecord]:
        return await self._nodes(cypher.PROJECT_ARTIFACTS, project=project_id)

    async def chain_members(self, session_id: str, scope_key: str | None) -> list[NodeRecord]:
        return await self._nodes(
            cypher.CHAIN_MEMBERS, session=session_id, scope=chain_scope(scope_key)
        )

    async def chain_neighbours(
        self, session_id: str, scope_key: str | None, position: ChainPosition
    ) -> tuple[NodeRecord | None, NodeRecord | None]:
        records = await self._fetch(
            cypher.CHAIN_NEIGHBOURS,
            session=session_id,
            scope=chain_scope(scope_key),
            pos=chain_pos(position),
        )
        sides = {
            record["side"]: to_node(record["node"])
            for record in records
            if not vanished(record["node"])
        }
        return sides.get("before"), sides.get("after")

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
        if label is not None and label.value not in cypher.STEP_LABELS:
            return []  # only steps are chain members
        return await self._nodes(
            cypher.chain_before(label),
            session=session_id,
            scope=chain_scope(scope_key),
            pos=chain_pos(position),
            after=None if after is None else chain_pos(after),
            limit=CHAIN_LIMIT if limit is None else limit,
        )

    async def search(
        self,
        terms: Sequence[str],
        *,
        session_id: str | None = None,
        labels: Sequence[Label] | None = None,
        require_all: bool = False,
    ) -> list[SearchHit]:
        plan = _search_plan(terms, session_id, labels, require_all)
        if plan is None:
            return []
        query, params = plan
        return [
            SearchHit(to_node(record["node"]), int(record["hits"]), int(record["rank"]))
            for record in await self._fetch(query, **params)
            if not vanished(record["node"])
        ]

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
        """One statement: the candidates from the fulltext index, ranked and paged in Cypher."""
        plan = _search_plan(terms, session_id, labels, require_all, page=True)
        if plan is None:
            return Page([], 0, False)
        query, params = plan
        (record,) = await self._fetch(query, offset=offset, end=offset + limit, **params)
        items = to_nodes(record["nodes"])
        total = int(record["total"])
        return Page(items, total, offset + len(items) < total)


def _search_plan(
    terms: Sequence[str],
    session_id: str | None,
    labels: Sequence[Label] | None,
    require_all: bool,
    *,
    page: bool = False,
) -> tuple[LiteralString, dict[str, Any]] | None:
    """The statement and parameters of a search; ``None`` when nothing can match."""
    wanted = list(dict.fromkeys(terms))
    # A term that is not one word matches no token (and a word is safe in a Lucene query).
    possible = [term for term in wanted if is_token(term) or not term]
    wanted_labels = _labels(labels)
    if not possible or (require_all and len(possible) < len(wanted)) or not wanted_labels:
        return None
    params: dict[str, Any] = {
        "terms": possible,
        "needed": len(possible) if require_all else 1,
        "session": session_id,
    }
    if not all(0 < len(term) <= LUCENE_MAX_TERM for term in possible):
        return cypher.search_scan(wanted_labels, session_id is not None, page), params
    joiner = " AND " if require_all else " OR "
    lucene = "_sm_text:(" + joiner.join(f"{term}*" for term in possible) + ")"
    if session_id is not None:
        lucene = f"_sm_sess:{session_token(session_id)} AND {lucene}"
    params |= {"lucene": lucene, "labels": [label.value for label in wanted_labels]}
    return (cypher.SEARCH_PAGE if page else cypher.SEARCH_HITS), params
