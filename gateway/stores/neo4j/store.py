"""Neo4jStore: the graph on a Neo4j 5 server over Bolt (official async driver).

Storage model (``gateway.stores.neo4j.records``; constraints in ``…neo4j.schema``):

* a node carries exactly its record's label and the record flattened into properties
  (``id``, ``key``, ``session_id``, ``created_at`` as a native ``DateTime``, ``seq``, the
  props, and reserved ``_sm_*`` helpers that reads strip);
* an edge is a relationship of type ``EdgeType.value`` holding the edge's props;
* ``(:SessionCounter {session_id, seq})`` per session: ``next_seq`` increments it, and a
  transaction for a session write-locks it first, so writers of one session are serialised
  across processes and replicas and never share a ``seq``;
* ``(:ParkedEdge {waiting_for, type, source, target, props})``, ``props`` JSON text, unique per
  ``(waiting_for, type, source, target)``.

Guarantees and costs: every ``transaction()`` is one explicit Neo4j transaction, committed on
a clean exit (durable when the block returns) and rolled back on an exception; a primitive
is one round trip, frontiers (``get_nodes``, ``expand``, ``edges_among``) go in one
``UNWIND``. Writes are ``MERGE`` on the unique ``id``, so concurrent identical writes converge.
Listings are newest first by insertion order (``_sm_order``: nanosecond wall clock, strictly
increasing per process, so order across replicas assumes synchronised clocks); their
``total`` counts the matches (a session-index or label scan). Session search scans the
session's nodes (indexed) and filters their tokens; cross-session search takes prefix
candidates from the ``sm_search`` fulltext index, then filters them exactly, so its cost
follows the number of candidates rather than the store size.

Failures: every driver error, socket error and client-side timeout becomes
``StoreUnavailableError("neo4j")`` in ``_driver_errors`` (a server-side transaction timeout
becomes ``QueryLimitExceededError``); the password never appears in a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, LiteralString

import neo4j
from neo4j import AsyncGraphDatabase, Query, RoutingControl
from neo4j.exceptions import DriverError, Neo4jError

from gateway.stores.neo4j import cypher
from gateway.stores.neo4j.records import (
    chain_pos,
    chain_scope,
    edge_properties,
    node_properties,
    parked_props,
    to_edge,
    to_node,
    to_parked,
)
from gateway.stores.neo4j.schema import ensure_schema
from resolvers.errors import QueryLimitExceededError, StoreUnavailableError, StoreWriteError
from resolvers.records import (
    Backend,
    Direction,
    EdgeRecord,
    EdgeType,
    Label,
    NodeRecord,
    Page,
    split_node_id,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from resolvers.store import ChainPosition, GraphTransaction

BACKEND: Final = Backend.NEO4J.value
LUCENE_MAX_TERM: Final = 255  # the whitespace analyzer cuts longer tokens into pieces
TRANSACTION_TIMEOUT_FACTOR: Final = 6


@asynccontextmanager
async def _driver_errors(
    secret: str | None,
    seconds: float | None,
    also: tuple[type[Exception], ...] = (),
) -> AsyncIterator[None]:
    """Bound a driver call by ``seconds`` and map its failures to domain errors."""
    mapped: tuple[type[Exception], ...] = (DriverError, OSError, TimeoutError, *also)
    try:
        async with asyncio.timeout(seconds):
            yield
    except Neo4jError as exc:
        code = exc.code or ""
        if "TransactionTimedOut" in code:
            raise QueryLimitExceededError("The Neo4j query took too long.") from exc
        if isinstance(exc, neo4j.exceptions.ConstraintError):
            # MERGE on ``id`` makes duplicates converge; this is a record whose domain key
            # is already taken by a node with another id: a write the store must refuse.
            raise StoreWriteError(f"Refused by a Neo4j constraint: {exc.message}") from exc
        if not isinstance(exc, neo4j.exceptions.TransientError | neo4j.exceptions.AuthError) and (
            not code.startswith(("Neo.ClientError.Cluster.", "Neo.ClientError.Database."))
        ):
            raise
        raise StoreUnavailableError(BACKEND, detail=_detail(exc, secret)) from exc
    except mapped as exc:
        raise StoreUnavailableError(BACKEND, detail=_detail(exc, secret)) from exc


def _detail(exc: BaseException, secret: str | None) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
    if isinstance(exc, TimeoutError):
        text = "The server did not answer in time."
    if secret:
        text = text.replace(secret, "***")
    return text[:500]


def _row(node_id: str, index: int = 0) -> dict[str, Any]:
    parsed = split_node_id(node_id)
    return {"i": index, "id": node_id, "label": parsed[0].value if parsed else "*"}


def _label_names(labels: Sequence[Label] | None) -> list[str] | None:
    return None if labels is None else [label.value for label in labels]


class _Clock:
    """Insertion order: nanoseconds of wall clock, strictly increasing in this process."""

    def __init__(self) -> None:
        self._last = 0

    def __call__(self) -> int:
        self._last = max(self._last + 1, time.time_ns())
        return self._last


class _Reads:
    """The read primitives, on the store (auto-commit reads) and in a transaction."""

    async def _fetch(self, query: LiteralString, **params: Any) -> list[neo4j.Record]:
        raise NotImplementedError

    async def _nodes(self, query: LiteralString, **params: Any) -> list[NodeRecord]:
        return [to_node(record["node"]) for record in await self._fetch(query, **params)]

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        found: list[NodeRecord | None] = [None] * len(ids)
        if ids:
            rows = [_row(node_id, index) for index, node_id in enumerate(ids)]
            for record in await self._fetch(cypher.GET_NODES, rows=rows):
                found[record["i"]] = to_node(record["node"])
        return found

    async def nodes_by_key(
        self,
        key: str,
        *,
        labels: Sequence[Label] | None = None,
        session_id: str | None = None,
    ) -> list[NodeRecord]:
        return await self._nodes(
            cypher.NODES_BY_KEY, key=key, labels=_label_names(labels), session=session_id
        )

    async def artifact_versions(
        self, artifact_id: str, *, session_id: str | None = None
    ) -> list[NodeRecord]:
        return await self._nodes(
            cypher.ARTIFACT_VERSIONS, artifact_id=artifact_id, session=session_id
        )

    async def expand(
        self, ids: Sequence[str], edge_type: EdgeType, direction: Direction
    ) -> list[EdgeRecord]:
        if not ids:
            return []
        rows = [_row(node_id, index) for index, node_id in enumerate(ids)]
        return self._edges(await self._fetch(cypher.EXPAND[edge_type, direction], rows=rows))

    async def edges_among(
        self, ids: Sequence[str], types: Sequence[EdgeType] | None = None
    ) -> list[EdgeRecord]:
        if not ids:
            return []
        rows = [_row(node_id) for node_id in dict.fromkeys(ids)]
        names = None if types is None else [edge_type.value for edge_type in types]
        return self._edges(await self._fetch(cypher.EDGES_AMONG, rows=rows, types=names))

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
        query = cypher.LIST_LABEL_NODES
        if session_id is not None or labels is None:
            query = cypher.LIST_SESSION_NODES
        (record,) = await self._fetch(
            query,
            labels=_label_names(labels),
            session=session_id or "",
            offset=offset,
            limit=limit,
            end=offset + limit,
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
        query = cypher.LIST_TYPE_EDGES if session_id is None else cypher.LIST_SESSION_EDGES
        (record,) = await self._fetch(
            query,
            types=[edge_type.value for edge_type in types],
            session=session_id,
            offset=offset,
            limit=limit,
            end=offset + limit,
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

    async def search(
        self,
        terms: Sequence[str],
        *,
        session_id: str | None = None,
        labels: Sequence[Label] | None = None,
        require_all: bool = False,
    ) -> list[NodeRecord]:
        wanted = list(dict.fromkeys(terms))
        # Tokens hold word characters only: a term with any other character matches nothing.
        possible = [term for term in wanted if term.isalnum() or not term]
        if not possible or (require_all and len(possible) < len(wanted)):
            return []
        params: dict[str, Any] = {
            "terms": possible,
            "needed": len(possible) if require_all else 1,
            "labels": _label_names(labels),
        }
        if session_id is not None:
            return await self._nodes(cypher.SEARCH_SESSION, session=session_id, **params)
        if all(0 < len(term) <= LUCENE_MAX_TERM for term in possible):
            joiner = " AND " if require_all else " OR "
            lucene = joiner.join(f"{term}*" for term in possible)
            return await self._nodes(cypher.SEARCH_FULLTEXT, lucene=lucene, **params)
        return await self._nodes(cypher.SEARCH_SCAN, **params)


class _Neo4jTransaction(_Reads):
    """One explicit Neo4j transaction; its reads see its own writes."""

    def __init__(self, tx: neo4j.AsyncTransaction, store: Neo4jStore) -> None:
        self._tx = tx
        self._store = store

    async def _fetch(self, query: LiteralString, **params: Any) -> list[neo4j.Record]:
        async with self._store._errors():
            result = await self._tx.run(query, params)
            return [record async for record in result]

    async def put_node(self, node: NodeRecord) -> None:
        await self._fetch(
            cypher.PUT_NODE[node.label],
            id=node.id,
            props=node_properties(node),
            order=self._store._clock(),
        )

    async def delete_node(self, node_id: str) -> bool:
        (record,) = await self._fetch(cypher.DELETE_NODE, row=_row(node_id))
        return int(record["deleted"]) > 0

    async def put_edge(self, edge: EdgeRecord) -> bool:
        records = await self._fetch(
            cypher.PUT_EDGE[edge.type],
            source=_row(edge.source),
            target=_row(edge.target),
            props=edge_properties(edge),
            order=self._store._clock(),
        )
        if not records:
            raise ValueError(f"edge endpoint missing: {edge.identity}")
        return bool(records[0]["created"])

    async def delete_edge(self, edge_type: EdgeType, source: str, target: str) -> bool:
        (record,) = await self._fetch(
            cypher.DELETE_EDGE[edge_type], source=_row(source), target=_row(target)
        )
        return int(record["deleted"]) > 0

    async def next_seq(self, session_id: str) -> int:
        (record,) = await self._fetch(cypher.NEXT_SEQ, session=session_id)
        return int(record["seq"])

    async def park_edge(self, edge: EdgeRecord, waiting_for: str) -> None:
        await self._fetch(
            cypher.PARK_EDGE,
            waiting_for=waiting_for,
            type=edge.type.value,
            source=edge.source,
            target=edge.target,
            props=parked_props(edge),
            order=self._store._clock(),
        )

    async def take_parked(self, node_id: str) -> list[EdgeRecord]:
        records = await self._fetch(cypher.TAKE_PARKED, waiting_for=node_id)
        return [
            to_parked(record["type"], record["source"], record["target"], record["props"])
            for record in records
        ]


class Neo4jStore(_Reads):
    """The Neo4j backend. Use ``await Neo4jStore.open(uri, user, password)``."""

    backend = Backend.NEO4J

    def __init__(
        self,
        driver: neo4j.AsyncDriver,
        *,
        database: str,
        secret: str | None,
        connection_timeout: float,
        query_timeout: float,
    ) -> None:
        self._driver = driver
        self._database = database
        self._secret = secret
        self._connection_timeout = connection_timeout
        self._query_timeout = query_timeout
        self._clock = _Clock()
        self._closed = False

    @classmethod
    async def open(
        cls,
        uri: str,
        user: str,
        password: str | None,
        *,
        database: str = "neo4j",
        connection_timeout: float = 3.0,
        query_timeout: float = 10.0,
    ) -> Neo4jStore:
        """Connect, verify the server answers and ensure the schema.

        Raises ``StoreUnavailableError`` when the server is down, rejects the credentials or
        does not answer within ``connection_timeout`` seconds.
        """
        async with _driver_errors(password, connection_timeout, also=(ValueError,)):
            driver = AsyncGraphDatabase.driver(
                uri,
                auth=(user, password) if password is not None else None,
                connection_timeout=connection_timeout,
                connection_acquisition_timeout=2 * connection_timeout,
                max_transaction_retry_time=connection_timeout,
                liveness_check_timeout=connection_timeout,
            )
        store = cls(
            driver,
            database=database,
            secret=password,
            connection_timeout=connection_timeout,
            query_timeout=query_timeout,
        )
        try:
            async with _driver_errors(password, connection_timeout):
                await driver.verify_connectivity()
            await store.ensure_schema()
        except BaseException:
            await driver.close()
            raise
        return store

    def _errors(self, seconds: float | None = None) -> contextlib.AbstractAsyncContextManager[None]:
        limit = seconds if seconds is not None else self._query_timeout + self._connection_timeout
        return _driver_errors(self._secret, limit)

    async def _fetch(self, query: LiteralString, **params: Any) -> list[neo4j.Record]:
        self._check_open()
        async with self._errors():
            result = await self._driver.execute_query(
                Query(query, timeout=self._query_timeout),
                params,
                routing_=RoutingControl.READ,
                database_=self._database,
            )
        return result.records

    async def _write(self, query: LiteralString, seconds: float) -> list[dict[str, Any]]:
        self._check_open()
        async with self._errors(seconds):
            result = await self._driver.execute_query(query, database_=self._database)
        return [record.data() for record in result.records]

    async def ensure_schema(self) -> list[str]:
        """Create the missing constraints and indexes (idempotent; run on every connect).
        Returns the names created."""
        return await ensure_schema(lambda query: self._write(query, self._query_timeout * 10))

    @asynccontextmanager
    async def transaction(self, session_id: str | None = None) -> AsyncIterator[GraphTransaction]:
        self._check_open()
        session = self._driver.session(
            database=self._database,
            bookmark_manager=self._driver.execute_query_bookmark_manager,
        )
        try:
            async with self._errors():
                tx = await session.begin_transaction(
                    timeout=self._query_timeout * TRANSACTION_TIMEOUT_FACTOR
                )
            work = _Neo4jTransaction(tx, self)
            try:
                if session_id is not None:
                    await work._fetch(cypher.LOCK_SESSION, session=session_id)
                yield work
            except BaseException as exc:
                await self._abandon(tx, exc)
                raise
            async with self._errors():
                await tx.commit()
        finally:
            with contextlib.suppress(StoreUnavailableError):
                async with self._errors(self._connection_timeout):
                    await session.close()

    async def _abandon(self, tx: neo4j.AsyncTransaction, cause: BaseException) -> None:
        """Roll back, keeping ``cause`` the error that propagates; when the connection is in
        doubt (cancelled, timed out, gone), drop it instead: the server then rolls back."""
        if tx.closed():
            return
        if isinstance(cause, asyncio.CancelledError | StoreUnavailableError):
            tx.cancel()
            return
        try:
            async with self._errors(self._connection_timeout):
                await tx.rollback()
        except (StoreUnavailableError, QueryLimitExceededError):
            tx.cancel()

    async def ping(self) -> None:
        self._check_open()
        async with self._errors(self._connection_timeout):
            await self._driver.execute_query(
                Query(cypher.PING, timeout=self._connection_timeout),
                database_=self._database,
                routing_=RoutingControl.READ,
            )

    async def count_nodes(self) -> int:
        (record,) = await self._fetch(cypher.COUNT_NODES)
        return int(record["total"])

    async def wipe(self) -> None:
        """Delete every node, edge, counter and parked edge; keep the schema.

        For tests and migrations only: the gateway never calls it.
        """
        await self._write(cypher.WIPE, self._query_timeout)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailableError(BACKEND, detail="The store is closed.")

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(StoreUnavailableError):
            async with self._errors(self._connection_timeout):
                await self._driver.close()
