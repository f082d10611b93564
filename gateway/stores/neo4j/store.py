"""Neo4jStore: the graph on a Neo4j 5 server over Bolt (official async driver).

Storage model (``gateway.stores.neo4j.records``; constraints in ``…neo4j.schema``):

* a node carries exactly its record's label and the record flattened into properties
  (``id``, ``key``, ``session_id``, ``created_at`` as a native ``DateTime``, ``seq``, the
  props, and reserved ``_sm_*`` helpers that reads strip);
* an edge is a relationship of type ``EdgeType.value`` holding the edge's props;
* ``(:SessionCounter {session_id, seq, ord})`` per session: ``seq`` the arrival counter of its
  steps, ``ord`` the last insertion order drawn (``plans.ORDER``). A write of a session locks
  it first, so writers of one session are serialised across processes and replicas for as
  long as one write transaction lasts, and never share a ``seq``. Inside one process they
  first queue in ``queue.WriteQueue`` (FIFO per session, no connection held), so only writers
  of other processes ever wait on the server's lock, and a burst of writes to one session
  never turns into lock waits that run into the round-trip timeout; a queued writer gives up
  only when no turn ended for a whole round-trip timeout, however long the queue. Writes that
  wait there share a transaction (group commit: one begin, commit and fsync for several).
  ``cleaned_at`` is the session's last cleanup, and ``(:ProjectCleanup {project_id,
  cleaned_at})`` a project's, and ``(:CleanedArtifact {id, cleaned_at})`` a tombstone of each
  Artifact a project cleanup deleted (``resolvers.store.CleanupLedger``: another replica's
  replay leaves out what they removed);
* ``(:ParkedEdge {waiting_for, type, source, target, props})``, ``props`` JSON text, unique per
  ``(waiting_for, type, source, target)``;
* the change feed of ``gateway.live.feed``: ``(:FeedHead {session_id, seq})`` per session and
  ``(:ChangeFeed {session_id, seq, changes, at})`` per session and commit, appended by
  ``append_feed`` inside the write transaction, read by ``feed_heads``/``feed_after``, trimmed
  by age (``trim_feed``, bounded batches).

Nodes are addressed by global id, ``<Label>:<key>`` (``resolvers.records.node_id``): the
label is read from the id, so ``put_node`` refuses an id whose prefix is not its label, and an
id without a label prefix names no node.

Guarantees and costs: an event's write (``write``) runs in one managed transaction
(``execute_write``), alone or with other events that waited for it, and takes a constant
number of statements whatever the event's size: the plan's snapshot and the rules' changes
(``planned``, ``plans``); then the commit. ``transaction()`` is one explicit
transaction whose primitives are a statement each (cleanups, migration), committed on a clean
exit and rolled back on an exception. Frontier reads (``get_nodes``, ``expand``,
``edges_among``) go in one ``UNWIND``, and a whole chain walk is one statement (``WalkReader``,
``walks``). Reads are read committed, each statement seeing commits as they land; an answer
that must be one state of a session (a subgraph) reads through ``session_view``, which
holds the session's writes off while it reads; a chain walk and a trace take the same lock
inside their first statement, which finds their source (``sources``). Writes are ``MERGE``
on the unique ``id``, so concurrent identical writes converge. Listings are newest first by
insertion order (``_sm_order``, drawn from the session's counter and the server's clock,
never a process clock: strictly increasing in commit order within a session, server-time
order across sessions); their ``total`` counts the matches (a session-index or label scan).
Search (``search_ranked``) is one statement: prefix candidates from the ``sm_fulltext``
index (narrowed to the session by its digest token), each ranked exactly by the rules of
``resolvers.search`` from its stored tokens and their field ranks, sorted and paged in Cypher;
its cost follows the number of candidates rather than the store size, and only the page
crosses the network.

Failures are mapped in ``_driver_errors`` only: every driver, socket and connectivity error,
transient server error (``transient`` for a conflict with concurrent writers: a deadlock, a
lock timeout; ``write`` retries those), rejected credential and client-side timeout
becomes ``StoreUnavailableError("neo4j")``; a server-side transaction timeout becomes
``QueryLimitExceededError``; a uniqueness violation (a domain key already taken by a node with
another id) and a write larger than the server's transaction memory become ``StoreWriteError``.
The password never appears in a message. Every round trip is bounded by ``query_timeout +
connection_timeout`` on the client, a transaction by ``6 * query_timeout`` on the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, LiteralString, TypeVar

import neo4j
from neo4j import AsyncGraphDatabase, Query
from neo4j.exceptions import DriverError, Neo4jError

from gateway.observability.redaction import redact
from gateway.stores.neo4j import cypher, plans
from gateway.stores.neo4j.planned import PlannedTransaction
from gateway.stores.neo4j.queue import Request, WriteQueue
from gateway.stores.neo4j.reads import Reads, label_of
from gateway.stores.neo4j.records import (
    edge_properties,
    node_properties,
    parked_props,
    to_parked,
)
from gateway.stores.neo4j.restarts import CHECK_SECONDS, STARTED, RecentReads
from gateway.stores.neo4j.schema import SCHEMA, ensure_schema, fold_search, upgrade_search
from gateway.stores.neo4j.walks import Walks
from resolvers.errors import (
    KeyOwnedByOtherSessionError,
    QueryLimitExceededError,
    StoreUnavailableError,
    StoreWriteError,
)
from resolvers.records import (
    Backend,
    EdgeRecord,
    EdgeType,
    NodeRecord,
    stored_time,
)
from resolvers.store import SessionCleanups
from resolvers.writes import iso

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
    from datetime import datetime

    from resolvers.plan import ReadPlan
    from resolvers.records import Label
    from resolvers.store import (
        GraphReader,
        GraphTransaction,
        Hop,
        SourcedWalk,
        SourceRef,
        UpstreamView,
    )


logger = logging.getLogger(__name__)

T = TypeVar("T")

BACKEND: Final = Backend.NEO4J.value
TRANSACTION_TIMEOUT_FACTOR: Final = 6
FEED_TRIM_BATCH: Final = 10_000

_CONFLICT_CODES: Final = ("Neo.TransientError.Transaction.",)  # deadlocks, lock timeouts
WRITE_ATTEMPTS: Final = 3
WRITE_TRANSACTIONS: Final = 2
"""Write transactions of a store at once (``queue``); a write that finds them all running
waits and joins the next, with the others that wait."""
WRITE_BATCH: Final = 16
"""At most this many writes share one transaction."""
RETRY_PAUSE: Final = 0.05  # seconds, times the attempt number, jittered
_NO_DRIVER_RETRIES: Final = -1.0  # ``max_transaction_retry_time``: the first failure is final
_CONFLICT: Final = "Neo4j gave way to concurrent writes (a deadlock or a lock wait); send it again."
_OUT_OF_MEMORY: Final = "Neo.TransientError.General.MemoryPoolOutOfMemoryError"
_UNAVAILABLE_CODES: Final = (
    "Neo.TransientError.",  # deadlocks, lock timeouts, leader switches, database unavailable
    "Neo.ClientError.Security.",  # credentials rejected, expired or not allowed
    "Neo.ClientError.Cluster.",
    "Neo.ClientError.Database.",  # e.g. the configured database does not exist
)


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
            raise StoreWriteError(
                f"Refused by a Neo4j constraint: {exc.message}", backend=BACKEND
            ) from exc
        if code == _OUT_OF_MEMORY:
            # This write, not the server: journalled and replayed, it would fail for ever.
            raise StoreWriteError(
                "The write needs more memory than the Neo4j server gives a transaction.",
                backend=BACKEND,
            ) from exc
        if not code.startswith(_UNAVAILABLE_CODES):
            raise  # a bug (syntax, types): unexpected, masked by the GraphQL layer
        transient = code.startswith(_CONFLICT_CODES)
        detail = _detail(exc, secret)
        if transient:  # its own words name the server's locks and transactions
            logger.debug("neo4j conflict: %s", detail)
            detail = _CONFLICT
        raise StoreUnavailableError(BACKEND, detail=detail, transient=transient) from exc
    except mapped as exc:
        raise StoreUnavailableError(BACKEND, detail=_detail(exc, secret)) from exc


@asynccontextmanager
async def _unretried(secret: str | None, seconds: float) -> AsyncIterator[None]:
    """Bound a statement of a managed transaction; a lost connection becomes a domain error,
    which the driver does not retry. Server errors pass as they are, for its retries."""
    try:
        async with asyncio.timeout(seconds):
            yield
    except Neo4jError:
        raise
    except (DriverError, OSError) as exc:
        raise StoreUnavailableError(BACKEND, detail=_detail(exc, secret)) from exc


async def _first_connection(driver: neo4j.AsyncDriver, seconds: float) -> None:
    """Open the driver's first connection; a cancellation waits until the attempt ends.

    The driver closes the socket of a connect that fails, not of one cancelled before the TCP
    connection is established: that socket stays open until garbage collection (and warns
    there). So a cancellation (the caller's, the safety bound's, ``Runtime.aclose`` stopping a
    reconnect) lets the driver end the attempt by its own timeouts, then propagates; only an
    attempt still running ``seconds`` later is cancelled."""
    attempt = asyncio.ensure_future(driver.verify_connectivity())
    try:
        await asyncio.shield(attempt)
    except asyncio.CancelledError:
        try:
            await asyncio.wait({attempt}, timeout=seconds)
        finally:
            attempt.cancel()
            attempt.add_done_callback(_retrieve)
        raise


def _retrieve(attempt: asyncio.Future[Any]) -> None:
    """Take an abandoned attempt's outcome, so asyncio does not log it as never retrieved."""
    if not attempt.cancelled():
        attempt.exception()


def _detail(exc: BaseException, secret: str | None) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
    if isinstance(exc, TimeoutError):
        text = "The server did not answer in time."
    return " ".join(redact(text, [secret] if secret else []).split())[:300]


def _settle(
    requests: Sequence[Request[Any]], error: Exception | None = None, result: Any = None
) -> None:
    for request in requests:
        if request.outcome.done():  # its caller left before the write started
            continue
        if error is not None:
            request.outcome.set_exception(error)
        else:
            request.outcome.set_result(result)


def _pipelined_begin(session: neo4j.AsyncSession) -> contextlib.AbstractContextManager[Any]:
    """Have the driver send the transaction's ``BEGIN`` with its first statement instead of
    waiting for its answer first, as ``execute_query`` does (the flag it sets is private to
    the driver: without it, the begin costs its own round trip, nothing else changes). A
    view's first statement then costs one round trip, as an auto-commit read does, plus
    the rollback; a planned write's, its prefetch, plus the change statement and the commit."""
    flag = getattr(session, "_pipelined_begin", None)
    return flag if isinstance(flag, contextlib.AbstractContextManager) else contextlib.nullcontext()


class _TransactionReads(Reads):
    """The read primitives as statements of one open transaction."""

    def __init__(
        self,
        tx: neo4j.AsyncTransaction | neo4j.AsyncManagedTransaction,
        errors: Callable[[], contextlib.AbstractAsyncContextManager[Any]],
    ) -> None:
        self._tx = tx
        self._errors = errors

    async def _fetch(self, query: LiteralString, **params: Any) -> list[neo4j.Record]:
        async with self._errors():
            result = await self._tx.run(query, params)
            return [record async for record in result]


class _SessionView(_TransactionReads, Walks):
    """The reads of a transaction that is rolled back (``Neo4jStore._rolled_back``): of a
    session view, a chain walk or a trace; the primitives, whole walks and trace hops, as
    statements of its transaction."""


class _SecondStatementError(Exception):
    """A ``_OneStatement`` view was asked for a second statement."""


class _OneStatement(Walks):
    """Whole walks and traces whose first statement runs in auto-commit with write access
    (it takes a lock: ``Neo4jStore._in_one_statement``), and that may send no other."""

    def __init__(self, store: Neo4jStore) -> None:
        self._store = store
        self._sent = False

    async def _fetch(self, query: LiteralString, **params: Any) -> list[neo4j.Record]:
        if self._sent:
            raise _SecondStatementError
        self._sent = True
        store = self._store
        store._reads.note(query, params, neo4j.WRITE_ACCESS)
        return await store._auto_commit(query, params, neo4j.WRITE_ACCESS, store._query_timeout)


class _Neo4jTransaction(_TransactionReads):
    """One explicit Neo4j transaction; its reads see its own writes."""

    def __init__(
        self,
        tx: neo4j.AsyncTransaction | neo4j.AsyncManagedTransaction,
        store: Neo4jStore,
        scope: str | None,
        errors: Callable[[], contextlib.AbstractAsyncContextManager[Any]],
    ) -> None:
        super().__init__(tx, errors)
        self._store = store
        self._scope = scope  # whose counter draws insertion order (``cypher.NEXT_ORDER``), if any
        self._tick = 0  # this transaction's own order steps when it has no session
        # The nodes this transaction wrote, as written. Reading one back could only return the
        # same record (a concurrent writer of that node waits for this commit), so it costs no
        # round trip: a use case checks an edge's endpoints right after writing them.
        self._written: dict[str, NodeRecord] = {}

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        unknown = [node_id for node_id in dict.fromkeys(ids) if node_id not in self._written]
        fetched = (
            dict(zip(unknown, await super().get_nodes(unknown), strict=True)) if unknown else {}
        )
        written = self._written
        return [written[node_id] if node_id in written else fetched[node_id] for node_id in ids]

    def _order(self) -> dict[str, Any]:
        if self._scope is not None:
            return {"scope": self._scope, "spread": plans.spread(self._scope)}
        self._tick += 1
        return {"spread": plans.spread(""), "tick": self._tick}

    async def prefetch(self, plan: ReadPlan) -> None:
        """Every primitive here is its own statement: nothing is loaded ahead."""

    async def put_node(self, node: NodeRecord) -> None:
        if label_of(node.id) is not node.label:
            raise ValueError(f"a node id must be <Label>:<key> of its label: {node.id!r}")
        (record,) = await self._fetch(
            cypher.put_node(node.label, self._scope is not None),
            id=node.id,
            props=node_properties(node),
            **self._order(),
        )
        owner = record["owner"]
        if owner is not None and owner != node.session_id:
            raise KeyOwnedByOtherSessionError(node.id, node.key, str(owner), node.session_id)
        self._written[node.id] = node

    async def delete_node(self, node_id: str) -> bool:
        label = label_of(node_id)
        if label is None:
            return False
        self._written.pop(node_id, None)
        (record,) = await self._fetch(cypher.DELETE_NODE[label], id=node_id)
        return int(record["deleted"]) > 0

    async def put_edge(self, edge: EdgeRecord) -> bool:
        source, target = label_of(edge.source), label_of(edge.target)
        records = []
        if source is not None and target is not None:
            records = await self._fetch(
                cypher.put_edge(source, edge.type, target, self._scope is not None),
                source=edge.source,
                target=edge.target,
                props=edge_properties(edge),
                **self._order(),
            )
        if not records:
            raise ValueError(f"edge endpoint missing: {edge.identity}")
        return bool(records[0]["created"])

    async def delete_edge(self, edge_type: EdgeType, source: str, target: str) -> bool:
        source_label, target_label = label_of(source), label_of(target)
        if source_label is None or target_label is None:
            return False
        query = cypher.delete_edge(source_label, edge_type, target_label)
        (record,) = await self._fetch(query, source=source, target=target)
        return int(record["deleted"]) > 0

    async def next_seq(self, session_id: str) -> int:
        (record,) = await self._fetch(cypher.NEXT_SEQ, session=session_id)
        return int(record["seq"])

    async def park_edge(self, edge: EdgeRecord, waiting_for: str) -> None:
        await self._fetch(
            cypher.park_edge(self._scope is not None),
            waiting_for=waiting_for,
            type=edge.type.value,
            source=edge.source,
            target=edge.target,
            props=parked_props(edge),
            **self._order(),
        )

    async def note_cleanup(self, session_id: str, at: datetime, *, emptied: bool) -> None:
        await self._fetch(cypher.NOTE_CLEANUP, session=session_id, at=iso(at), emptied=emptied)

    async def cleaned_at(self, session_id: str) -> SessionCleanups:
        (record,) = await self._fetch(cypher.CLEANED_AT, session=session_id)
        return SessionCleanups(stored_time(record["at"]), stored_time(record["emptied"]))

    async def note_project_cleanup(self, project_id: str, at: datetime) -> None:
        await self._fetch(cypher.NOTE_PROJECT_CLEANUP, project=project_id, at=iso(at))

    async def projects_cleaned_at(self, project_ids: Sequence[str]) -> dict[str, datetime]:
        records = await self._fetch(cypher.PROJECTS_CLEANED_AT, projects=sorted(project_ids))
        found = {record["project"]: stored_time(record["at"]) for record in records}
        return {project: at for project, at in found.items() if at is not None}

    async def note_artifacts_cleaned(self, artifact_ids: Sequence[str], at: datetime) -> None:
        if artifact_ids:
            await self._fetch(cypher.NOTE_ARTIFACTS_CLEANED, ids=sorted(artifact_ids), at=iso(at))

    async def artifacts_cleaned_at(self, artifact_ids: Sequence[str]) -> dict[str, datetime]:
        if not artifact_ids:
            return {}
        records = await self._fetch(cypher.ARTIFACTS_CLEANED_AT, ids=sorted(set(artifact_ids)))
        found = {record["id"]: stored_time(record["at"]) for record in records}
        return {artifact: at for artifact, at in found.items() if at is not None}

    async def append_feed(self, entries: Mapping[str, str]) -> dict[str, int]:
        rows = [{"session": session, "changes": changes} for session, changes in entries.items()]
        records = await self._fetch(cypher.APPEND_FEED, entries=rows)
        return {record["session"]: int(record["seq"]) for record in records}

    async def take_parked(self, node_id: str) -> list[EdgeRecord]:
        records = await self._fetch(cypher.TAKE_PARKED, waiting_for=node_id)
        return [
            to_parked(record["type"], record["source"], record["target"], record["props"])
            for record in records
        ]


class Neo4jStore(Walks):
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
        self._queue = WriteQueue(
            self._commit, backend=BACKEND, concurrency=WRITE_TRANSACTIONS, batch=WRITE_BATCH
        )
        self._unit = neo4j.unit_of_work(timeout=query_timeout * TRANSACTION_TIMEOUT_FACTOR)(
            self._run_work
        )
        # The write statements' warm-up (``_writes_planned``): made at connect, and again
        # once the server was found unreachable (it may come back restarted, without plans).
        self._planned: asyncio.Future[None] | None = None
        # What a restarted server plans again (``restarts``), and the task that notices it.
        self._reads = RecentReads()
        self._restarts: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
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
        watch_restarts: bool = True,
    ) -> Neo4jStore:
        """Connect, verify the server answers and ensure the schema; with ``watch_restarts``,
        plan again after a restart of the server (``restarts``).

        Raises ``StoreUnavailableError`` when the server is down, rejects the credentials or
        does not answer within ``connection_timeout`` seconds.
        """
        # The acquisition timeout is what bounds a new connection as a whole (the driver's
        # Bolt handshake read has no bound of its own). The outer bounds are only a safety
        # net: cancelling the driver mid-connect leaks its socket (``_first_connection``).
        async with _driver_errors(password, connection_timeout, also=(ValueError,)):
            driver = AsyncGraphDatabase.driver(
                uri,
                auth=(user, password) if password is not None else None,
                connection_timeout=connection_timeout,
                connection_acquisition_timeout=connection_timeout,
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
            # A ValueError here is the resolver's refusal of the host (a UnicodeError from its
            # IDNA encoding, say, of a URI saved before hosts were checked): unreachable too.
            async with _driver_errors(password, connection_timeout * 1.5, also=(ValueError,)):
                await _first_connection(driver, connection_timeout)
            await store.ensure_schema()
            await store._upgrade_search()
            await store._warm_plans()
        except BaseException:
            await driver.close()
            raise
        if watch_restarts:
            store._restarts = asyncio.create_task(store._watch_restarts())
        return store

    async def _warm_plans(self) -> None:
        """Have Neo4j plan the write and the trace statements now (``_warm_writes``,
        ``_warm_traces``), whatever was planned before."""
        self._planned = None
        await self._writes_planned()
        await self._warm_traces()

    async def _writes_planned(self) -> None:
        """Wait for the write statements' warm-up, started if none was since the server was
        last found unreachable: a restarted server has no plans, and the first writes after
        an outage (its journal replayed) would plan them one after another inside their
        transactions, where the warm-up plans them side by side."""
        if self._planned is None:
            self._planned = asyncio.ensure_future(self._warm_writes())
        await asyncio.shield(self._planned)

    def _unreachable(self) -> None:
        """Note that the server did not answer: plan the writes again before the next one."""
        self._planned = None

    async def _warm_writes(self) -> None:
        """Have Neo4j plan the write statements now, in transactions rolled back: a cold plan
        cache (a new or restarted server) costs about a second per statement, more on a busy
        machine, which the first writes (an outage's journal replayed) would otherwise spend
        inside their time bound. A server too busy to plan them in time is no reason to fail
        the connect.

        Neo4j caches a plan per statement text, per parameter names and types, per bucketed
        size of each top-level list and string (so the rows are padded to one bucket,
        ``plans.padded``, and the strings travel in one map, ``plans.arguments``: the
        warm-up's session id serves any other), and per whether the transaction had changes
        before the statement: each statement is planned with the parameters the write path
        gives it (``planned``), the prefetch both first in its transaction (one event) and
        after changes (the next event of a shared transaction or a replayed batch)."""
        seconds = self._query_timeout * 3

        async def plan(
            statement: LiteralString, params: dict[str, Any], *, after_changes: bool = False
        ) -> None:
            async with self._driver.session(database=self._database) as session:
                tx = await session.begin_transaction(timeout=seconds)
                if after_changes:
                    await (await tx.run(plans.TOUCH, params)).consume()
                await (await tx.run(statement, params)).consume()
                await tx.rollback()

        def event(session_id: str) -> dict[str, Any]:
            return {"args": plans.arguments(session_id), "rows": plans.padded([])}

        try:
            async with self._errors(seconds):
                # Side by side (a cold JVM plans on several threads), each in a transaction
                # of its own warm-up session, so that none waits on another's counter lock.
                await asyncio.gather(
                    plan(plans.PREFETCH, event("")),
                    plan(plans.PREFETCH, event(" "), after_changes=True),
                    plan(plans.APPLY, {**event("  "), "spread": 0, "span": 0}, after_changes=True),
                )
        except StoreUnavailableError as exc:
            # Whatever comes back may be a restarted server: the next write plans them again.
            self._unreachable()
            logger.info("the write statements are not planned yet: %s", exc.message)
        except QueryLimitExceededError as exc:
            logger.info("the write statements are not planned yet: %s", exc.message)

    async def _warm_traces(self) -> None:
        """Have Neo4j plan the default traces' statements now (``Traces.trace_statements``),
        side by side, in transactions rolled back: the first trace after a start would plan
        for seconds with its session locked."""
        seconds = self._query_timeout * 3

        async def warm(trace: list[tuple[LiteralString, dict[str, Any]]]) -> None:
            async with self._rolled_back(seconds) as view:
                for statement, params in trace:
                    await view._fetch(statement, **params)

        try:
            await asyncio.gather(*(warm(trace) for trace in self.trace_statements()))
        except (StoreUnavailableError, QueryLimitExceededError) as exc:
            logger.info("the trace statements are not planned yet: %s", exc.message)

    async def _watch_restarts(self) -> None:
        """Plan again, whenever the server restarted, what was planned at connect and the read
        statements sent lately (``restarts``). Stops at once on a server that does not say
        when it started (a procedure it does not offer or this user may not call)."""
        started: Any = None
        while not self._closed:
            try:
                (record,) = await self._auto_commit(
                    STARTED, {}, neo4j.READ_ACCESS, self._connection_timeout
                )
            except (StoreUnavailableError, QueryLimitExceededError):
                pass  # down or busy: asked again later
            except Neo4jError as exc:
                logger.info("not watching for neo4j restarts: %s", exc.message)
                return
            else:
                if started is not None and record["started"] != started:
                    logger.info("neo4j restarted: planning the statements again")
                    await self._replan()
                started = record["started"]
            # Never cancelled mid-request (``aclose`` sets ``_stop``): a connect cancelled
            # before it is established leaves its socket open (``_first_connection``).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CHECK_SECONDS):
                    await self._stop.wait()

    async def _replan(self) -> None:
        """The connect's warm-up, then the recent reads sent again one at a time: writes come
        first (an outage's journal waits for them), and a single read in flight leaves the
        other cores to the requests."""
        statements = self._reads.restarted()
        if self._planned is not None and self._planned.done():
            self._planned = None  # made on the server before it restarted
        await self._writes_planned()
        await self._warm_traces()
        failed: list[Exception] = []
        for statement, params, access in statements:
            if self._closed:
                return
            if self._reads.sent_again(statement):
                continue  # its request planned it
            try:
                await self._auto_commit(statement, params, access, self._query_timeout)
            except Exception as exc:  # only left unplanned: its next request tells
                failed.append(exc)
        logger.info(
            "planned again %d of %d recent read statements%s",
            len(statements) - len(failed),
            len(statements),
            f" (the first failure: {failed[0]})" if failed else "",
        )

    def _errors(self, seconds: float | None = None) -> contextlib.AbstractAsyncContextManager[None]:
        limit = seconds if seconds is not None else self._query_timeout + self._connection_timeout
        return _driver_errors(self._secret, limit)

    async def _fetch(self, query: LiteralString, **params: Any) -> list[neo4j.Record]:
        self._reads.note(query, params, neo4j.READ_ACCESS)
        return await self._auto_commit(query, params, neo4j.READ_ACCESS, self._query_timeout)

    async def _write(self, query: LiteralString, seconds: float) -> list[dict[str, Any]]:
        records = await self._auto_commit(query, {}, neo4j.WRITE_ACCESS, seconds)
        return [record.data() for record in records]

    async def _auto_commit(
        self, query: LiteralString, params: dict[str, Any], access: str, seconds: float
    ) -> list[neo4j.Record]:
        """One auto-commit statement (reads are not retried: a dead server fails fast)."""
        self._check_open()
        async with (
            self._errors(seconds + self._connection_timeout),
            self._driver.session(
                database=self._database,
                default_access_mode=access,
                bookmark_manager=self._driver.execute_query_bookmark_manager,
            ) as session,
        ):
            result = await session.run(Query(query, timeout=seconds), params)
            return [record async for record in result]

    async def ensure_schema(
        self, schema: tuple[tuple[LiteralString, LiteralString], ...] = SCHEMA
    ) -> list[str]:
        """Create the missing constraints and indexes (idempotent; run on every connect), of
        the graph unless told (the memory's: ``Neo4jMemoryStore.open``). Returns the names
        created."""
        return await ensure_schema(
            lambda query: self._write(query, self._query_timeout * 10), schema
        )

    async def _upgrade_search(self) -> None:
        seconds = self._query_timeout * 10

        async def read(query: LiteralString, params: dict[str, Any]) -> list[dict[str, Any]]:
            records = await self._auto_commit(query, params, neo4j.READ_ACCESS, seconds)
            return [record.data() for record in records]

        async def write(query: LiteralString, params: dict[str, Any]) -> None:
            await self._auto_commit(query, params, neo4j.WRITE_ACCESS, seconds)

        upgraded = await upgrade_search(lambda query: read(query, {}), write)
        if upgraded:
            logger.info("gave %d stored nodes their search ranks", upgraded)
        folded = await fold_search(read, write)
        if folded:
            logger.info("re-indexed the search text of %d stored nodes (folded)", folded)

    @asynccontextmanager
    async def transaction(self, session_id: str | None = None) -> AsyncIterator[_Neo4jTransaction]:
        self._check_open()
        turn: contextlib.AbstractAsyncContextManager[None] = contextlib.nullcontext()
        if session_id is not None:
            turn = self._queue.turn(session_id, self._query_timeout + self._connection_timeout)
        async with turn, self._open_transaction(session_id) as work:
            yield work

    @asynccontextmanager
    async def _open_transaction(self, session_id: str | None) -> AsyncIterator[_Neo4jTransaction]:
        async with self._driver_session(neo4j.WRITE_ACCESS) as session:
            async with self._errors():
                tx = await session.begin_transaction(
                    timeout=self._query_timeout * TRANSACTION_TIMEOUT_FACTOR
                )
            work = _Neo4jTransaction(tx, self, session_id, self._errors)
            try:
                if session_id is not None:
                    await work._fetch(cypher.LOCK_SESSION, session=session_id)
                yield work
            except BaseException as exc:
                await self._abandon(tx, exc)
                raise
            async with self._errors():
                await tx.commit()

    @asynccontextmanager
    async def session_view(self, session_id: str) -> AsyncIterator[GraphReader]:
        """Reads that see one committed state of a session (``SessionReader``).

        Neo4j reads are read committed, and a commit becomes visible piece by piece (its
        creations, then its updates, then its deletions, then its index entries), so neither
        separate reads nor one statement see one state while the session is written, and no
        value read before and after the reads (the session counter, say) can certify them: a
        commit half visible to the reads may not have set it yet. What does hold: every write
        of a session locks the session's counter before it changes anything and keeps the
        lock until its commit is wholly visible. So the view is one transaction that takes
        that lock first (waiting for the write in flight, if any), reads, and rolls back: no
        write of the session lands in between, and the view changed nothing. It costs one
        statement more than the reads themselves, holds the session's writers (and other
        views of it) for as long as its reads take, and needs the server that takes writes.
        A chain walk and a trace take the lock inside their first statement instead
        (``walk_chain_from``, ``upstream_walk``: ``gateway.stores.neo4j.sources``)."""
        async with self._rolled_back() as view:
            await view._fetch(cypher.LOCK_SESSION, session=session_id)
            yield view

    async def walk_chain_from(self, ref: SourceRef, hops: Sequence[Hop]) -> SourcedWalk | None:
        """One statement that finds the source, locks its session as ``session_view`` does
        and walks (``_in_one_statement``)."""
        return await self._in_one_statement(lambda view: view.walk_chain_from(ref, hops))

    async def upstream_walk(
        self,
        start: SourceRef,
        target: Label,
        levels: int,
        walk: Callable[[UpstreamView], Awaitable[T]],
    ) -> T:
        """The region statement finds the start and locks its session as ``session_view``
        does (``_in_one_statement``); should ``walk`` ask for more, the whole walk runs again
        in a transaction rolled back."""
        return await self._in_one_statement(
            lambda view: view.upstream_walk(start, target, levels, walk)
        )

    async def _in_one_statement(self, read: Callable[[Walks], Awaitable[T]]) -> T:
        """``read`` on a view whose first statement takes the lock of the session it reads
        (``gateway.stores.neo4j.sources``) and changes nothing: in auto-commit, which holds
        the lock until the statement ends and saves the rollback's round trip. A second
        statement would not be under that lock, so a ``read`` that sends one is abandoned and
        run again, whole, in a transaction rolled back, where the first statement's lock
        covers every statement after it."""
        try:
            return await read(_OneStatement(self))
        except _SecondStatementError:
            pass
        async with self._rolled_back() as view:
            return await read(view)

    @asynccontextmanager
    async def _rolled_back(self, seconds: float | None = None) -> AsyncIterator[_SessionView]:
        """Statements in one write transaction that is rolled back when the block ends."""
        self._check_open()
        limit = seconds if seconds is not None else self._query_timeout
        async with self._driver_session(neo4j.WRITE_ACCESS) as session:
            async with self._errors():
                with _pipelined_begin(session):
                    tx = await session.begin_transaction(timeout=limit * TRANSACTION_TIMEOUT_FACTOR)
            view = _SessionView(tx, lambda: self._errors(seconds))
            try:
                yield view
            except BaseException as exc:
                await self._abandon(tx, exc)
                raise
            await self._abandon(tx, None)

    @asynccontextmanager
    async def _driver_session(self, access: str) -> AsyncIterator[neo4j.AsyncSession]:
        session = self._driver.session(
            database=self._database,
            default_access_mode=access,
            bookmark_manager=self._driver.execute_query_bookmark_manager,
        )
        try:
            yield session
        finally:
            with contextlib.suppress(StoreUnavailableError):
                async with self._errors(self._connection_timeout):
                    await session.close()

    async def write(self, session_id: str, work: Callable[[GraphTransaction], Awaitable[T]]) -> T:
        """``work`` in a managed transaction (``execute_write``) with the writes of other
        sessions that wait meanwhile (``queue``): one begin, commit and fsync for them all."""
        self._check_open()
        bound = self._query_timeout + self._connection_timeout
        return await self._queue.write(session_id, work, bound)

    async def _commit(self, requests: list[Request[Any]]) -> None:
        """Run the writes of ``requests`` (and of those that join them) in one transaction and
        settle their outcomes. When it fails, each is run again in one of its own, so a write
        refused (or failing) is refused alone; but an unreachable server fails them all at
        once, and the writes waiting for a turn too (``WriteQueue.fail_waiting``)."""
        with contextlib.suppress(Exception):  # a warm-up that failed: the writes tell why
            await self._writes_planned()
        try:
            results = await self._attempts(requests, join=True)
        except StoreUnavailableError as exc:
            if not exc.transient:
                self._unreachable()
                self._queue.fail_waiting(exc)
            if not exc.transient or len(requests) == 1:
                _settle(requests, exc)
                return
        except Exception as exc:
            if len(requests) == 1:
                _settle(requests, exc)
                return
        else:
            for request, result in zip(requests, results, strict=True):
                _settle([request], result=result)
            return
        for request in list(requests):  # whose it was, each one's own transaction tells
            try:
                (result,) = await self._attempts([request], join=False)
            except Exception as exc:
                _settle([request], exc)
            else:
                _settle([request], result=result)

    async def _attempts(self, requests: list[Request[Any]], *, join: bool) -> list[Any]:
        """One transaction of ``requests``, each work's result in their order; the list is put
        in session order (replicas batching two sessions lock their counters in one order) and,
        with ``join``, grows by the writes that join it (``_run_work``). Run again in a new
        transaction when the server refused it as a conflict with concurrent writers
        (``transient``), at most ``WRITE_ATTEMPTS`` times in all: only the last run of each work
        counts. A lost or unreachable server is not retried: the caller (the outbox) deals
        with it at once."""
        attempt = 1
        while True:
            requests.sort(key=lambda request: request.session_id)
            try:
                return await self._write_once(requests, join)
            except StoreUnavailableError as exc:
                if not exc.transient or attempt == WRITE_ATTEMPTS:
                    raise
            await asyncio.sleep(random.uniform(0.5, 1.5) * RETRY_PAUSE * attempt)
            attempt += 1

    async def _write_once(self, requests: list[Request[Any]], join: bool) -> list[Any]:
        session = self._driver.session(
            database=self._database,
            bookmark_manager=self._driver.execute_query_bookmark_manager,
            max_transaction_retry_time=_NO_DRIVER_RETRIES,
        )
        try:
            async with self._errors(self._write_bound()):
                with _pipelined_begin(session):
                    results: list[Any] = await session.execute_write(self._unit, requests, join)
                return results
        finally:
            with contextlib.suppress(StoreUnavailableError):
                async with self._errors(self._connection_timeout):
                    await session.close()

    def _write_bound(self) -> float:
        # One transaction on the server, plus connecting.
        return self._query_timeout * TRANSACTION_TIMEOUT_FACTOR + self._connection_timeout

    async def _run_work(
        self, tx: neo4j.AsyncManagedTransaction, requests: list[Request[Any]], join: bool
    ) -> list[Any]:
        """Each work of ``requests`` in turn, then, with ``join``, those of the writes of their
        sessions that came meanwhile (they join the list): the transaction holds their locks."""
        # Server errors pass unmapped (bounded only): ``_write_once`` maps them.
        seconds = self._query_timeout + self._connection_timeout
        results: list[Any] = []
        sessions = {request.session_id for request in requests}
        while len(results) < len(requests):
            request = requests[len(results)]
            assert request.work is not None
            live = _Neo4jTransaction(
                tx, self, request.session_id, lambda: _unretried(self._secret, seconds)
            )
            planned = PlannedTransaction(live, request.session_id)
            results.append(await request.work(planned))
            await planned.flush()
            if join and len(results) == len(requests):
                requests += self._queue.joining(sessions, WRITE_BATCH - len(requests))
        return results

    async def _abandon(self, tx: neo4j.AsyncTransaction, cause: BaseException | None) -> None:
        """Roll back, keeping ``cause`` (if any) the error that propagates; when the connection
        is in doubt (cancelled, timed out, gone), drop it instead: the server then rolls back."""
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
        try:
            await self._auto_commit(cypher.PING, {}, neo4j.READ_ACCESS, self._connection_timeout)
        except QueryLimitExceededError as exc:  # a server too busy to answer at all, e.g. starting
            self._unreachable()
            raise StoreUnavailableError(
                BACKEND, detail="The server did not answer in time."
            ) from exc
        except StoreUnavailableError:
            self._unreachable()
            raise

    async def count_nodes(self) -> int:
        (record,) = await self._fetch(cypher.COUNT_NODES)
        return int(record["total"])

    async def feed_heads(self, session_ids: Sequence[str]) -> dict[str, int]:
        records = await self._fetch(cypher.FEED_HEADS, sessions=list(session_ids))
        return {record["session"]: int(record["seq"]) for record in records}

    async def feed_after(
        self, cursors: Mapping[str, int], limit: int
    ) -> list[tuple[str, int, str]]:
        rows = [{"session": session, "after": after} for session, after in cursors.items()]
        records = await self._fetch(cypher.FEED_AFTER, cursors=rows, limit=limit)
        return [(record["session"], int(record["seq"]), record["changes"]) for record in records]

    async def trim_feed(self, older_than_seconds: float) -> int:
        records = await self._auto_commit(
            cypher.TRIM_FEED,
            {"seconds": older_than_seconds, "limit": FEED_TRIM_BATCH},
            neo4j.WRITE_ACCESS,
            self._query_timeout,
        )
        return int(records[0]["trimmed"])

    async def raise_seq(self, session_id: str, value: int) -> None:
        """Raise the session's arrival counter to at least ``value`` (migration support:
        copying a counter twice, or after newer writes, never lowers it)."""
        async with self.transaction(session_id) as tx:
            await tx._fetch(cypher.RAISE_SEQ, session=session_id, value=value)

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
        self._stop.set()
        await self._queue.aclose()
        if self._planned is not None:
            self._planned.cancel()
            await asyncio.gather(self._planned, return_exceptions=True)
        if self._restarts is not None:
            # Its request in flight ends within its bound; only a stuck one is cancelled.
            bound = self._query_timeout + self._connection_timeout
            done, _ = await asyncio.wait([self._restarts], timeout=bound)
            if not done:
                self._restarts.cancel()
            await asyncio.gather(self._restarts, return_exceptions=True)
        with contextlib.suppress(StoreUnavailableError):
            async with self._errors(self._connection_timeout):
                await self._driver.close()
