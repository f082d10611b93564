"""The read primitives of the Neo4j store, shared by the store and its transactions.

Each primitive is one statement (``gateway.stores.neo4j.cypher``) run by ``_fetch``: an
auto-commit read on the store, a statement of the open transaction inside one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, LiteralString

from gateway.stores.neo4j import cypher
from gateway.stores.neo4j.records import chain_pos, chain_scope, to_edge, to_node
from resolvers.records import Label, Page, SearchHit, split_node_id
from resolvers.text import match_rank, token_ranks

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
        return [to_node(record["node"]) for record in await self._fetch(query, **params)]

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        found: list[NodeRecord | None] = [None] * len(ids)
        rows, labels = rows_of(ids)
        if rows:
            for record in await self._fetch(cypher.get_nodes(labels), rows=rows):
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
        return [
            to_edge(record["type"], record["source"], record["target"], record["props"])
            for record in records
        ]

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
        items = [to_node(value) for value in record["nodes"]]
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
        items = [
            to_edge(value["type"], value["source"], value["target"], value["props"])
            for value in record["edges"]
        ]
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
        sides = {record["side"]: to_node(record["node"]) for record in records}
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
        """Matching nodes from Cypher; how well each matched is computed here, by the rules of
        ``resolvers.text`` (the stored tokens carry no field ranks)."""
        wanted = list(dict.fromkeys(terms))
        return [
            SearchHit(node, *match_rank(wanted, token_ranks(node.props)))
            for node in await self._search_nodes(wanted, session_id, labels, require_all)
        ]

    async def _search_nodes(
        self,
        wanted: list[str],
        session_id: str | None,
        labels: Sequence[Label] | None,
        require_all: bool,
    ) -> list[NodeRecord]:
        # Tokens hold word characters only: a term with any other character matches nothing.
        possible = [term for term in wanted if term.isalnum() or not term]
        if not possible or (require_all and len(possible) < len(wanted)):
            return []
        wanted_labels = _labels(labels)
        if not wanted_labels:
            return []
        params: dict[str, Any] = {
            "terms": possible,
            "needed": len(possible) if require_all else 1,
        }
        if session_id is not None:
            query = cypher.search_session(wanted_labels)
            return await self._nodes(query, session=session_id, **params)
        if all(0 < len(term) <= LUCENE_MAX_TERM for term in possible):
            joiner = " AND " if require_all else " OR "
            lucene = joiner.join(f"{term}*" for term in possible)
            names = [label.value for label in wanted_labels]
            return await self._nodes(cypher.SEARCH_FULLTEXT, lucene=lucene, labels=names, **params)
        return await self._nodes(cypher.search_scan(wanted_labels), **params)
