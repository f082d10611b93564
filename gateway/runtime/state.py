"""The gateway's runtime state: the active store, the toggle, the outbox, and their persistence.

``<dataDir>/gateway.json`` (``gateway.runtime.saved_state``) remembers what ``configureMemoryGraph``
changed — the enabled toggle, the backend, the Neo4j connection — so a restart keeps them. The
file backend's graph lives in ``<dataDir>/graph``, the research memory in ``<dataDir>/memory``,
observe events waiting for an unreachable Neo4j in ``<dataDir>/outbox``.

A selected Neo4j that cannot be reached never falls back to the file store: reads and declares
answer unreachable, observes are journalled and replayed in order by a background task once
Neo4j answers again (events queued earlier are applied first, so arrival order is kept).
A queued event the graph refuses on replay (``KeyOwnedByOtherSession``: its key was taken by
another session meanwhile; any other rule) cannot succeed later either: it is dropped from the
outbox with an error log naming the event, the key and the owning session, and kept in the
outbox's ``refused.jsonl`` (``Outbox.refuse``); the replay goes on, so one refusal never blocks
the outbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, TypeVar

from gateway.live.bus import EventBus
from gateway.live.publishing import PublishingStore
from gateway.observability.redaction import redact, register_secrets, server_paths
from gateway.runtime.outbox import Outbox
from gateway.runtime.replay import apply_batch
from gateway.runtime.saved_state import (
    STATE_FILE,
    SavedState,
    StateFileError,
    read_state,
    write_state,
)
from gateway.settings import MAX_NEO4J_URI_LENGTH, NEO4J_SCHEMES, is_bolt_uri
from gateway.stores import Neo4jAddress, open_graph_store
from gateway.stores.embedded import EngineMismatchError
from gateway.stores.file.faults import disk_fault
from gateway.stores.file.framing import CorruptLogError
from gateway.stores.file.lock import StoreLockedError
from gateway.stores.file.memory import FileMemoryStore, MemoryFileError
from gateway.stores.sqlite.migrate import DatabaseFileError
from resolvers.errors import (
    InvalidInputError,
    MemoryGraphDisabledError,
    StoreUnavailableError,
    StoreWriteError,
)
from resolvers.memory import MemoryStore, compact_memory
from resolvers.records import Backend, utc_now
from resolvers.validate import check_text, check_unicode, validate_event

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from gateway.settings import Settings
    from resolvers.events import Event
    from resolvers.store import GraphStore

__all__ = [
    "STARTUP_ERRORS",
    "STATE_FILE",
    "HealthReport",
    "Runtime",
    "SavedState",
    "StateFileError",
    "package_version",
]

logger = logging.getLogger(__name__)

E = TypeVar("E", bound="Event")
R = TypeVar("R")

# What stops a start with a message saying where and what to do (no traceback needed).
STARTUP_ERRORS = (
    StateFileError,
    CorruptLogError,
    DatabaseFileError,
    StoreLockedError,
    MemoryFileError,
    EngineMismatchError,
)


def package_version() -> str:
    try:
        return version("science-memory")
    except PackageNotFoundError:
        return "0+unknown"


@dataclass(frozen=True, slots=True)
class HealthReport:
    status: str  # HEALTHY DEGRADED NEEDS_PASSWORD DISABLED
    backend: Backend
    enabled: bool
    reachable: bool
    pending_writes: int
    version: str
    reason: str | None = None  # why it is not HEALTHY, when it is DEGRADED
    refused_writes: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "backend": self.backend.name,  # the GraphQL enum spelling: FILE, NEO4J
            "enabled": self.enabled,
            "reachable": self.reachable,
            "pendingWrites": self.pending_writes,
            "refusedWrites": self.refused_writes,
            "version": self.version,
            "reason": self.reason,
        }


class Runtime:
    """Owns the stores for the lifetime of the app. Use ``await Runtime.start(settings)``."""

    def __init__(
        self,
        settings: Settings,
        state: SavedState,
        memory: MemoryStore,
        stores: dict[Backend, GraphStore] | None = None,
        outbox: Outbox | None = None,
        neo4j_memory: MemoryStore | None = None,
    ) -> None:
        self.settings = settings
        self.state = state
        self.memory_store = memory
        self.outbox = outbox
        self.events = EventBus()
        # Every store is wrapped so each committed change reaches live subscribers.
        self._stores: dict[Backend, GraphStore] = {
            backend: PublishingStore(store, self.events)
            for backend, store in (stores or {}).items()
        }
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._supervisor: asyncio.Task[None] | None = None
        self._saved: dict[str, Any] = {}
        self._neo4j_memory: MemoryStore | None = neo4j_memory

    @classmethod
    async def start(cls, settings: Settings) -> Runtime:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        state, saved = await asyncio.to_thread(read_state, settings)
        memory = await FileMemoryStore.open(settings.data_dir / "memory", fsync=settings.fsync)
        runtime = cls(settings, state, memory)
        runtime._saved = saved
        try:
            runtime.outbox = await Outbox.open(settings.data_dir / "outbox", fsync=settings.fsync)
            await runtime._open_selected()
            report = await compact_memory(memory, utc_now().date(), force=False)
            if report.compacted:
                logger.info("research memory compacted: %s -> %s", report.before, report.after)
        except BaseException:
            await runtime.aclose()
            raise
        runtime._supervisor = asyncio.create_task(runtime._supervise())
        return runtime

    # --- the active store ----------------------------------------------------------------

    @property
    def graph_store(self) -> GraphStore:
        """The active store; raises when disabled or when the backend cannot serve."""
        if not self.state.enabled:
            raise MemoryGraphDisabledError()
        store = self._stores.get(self.state.backend)
        if store is None:
            raise StoreUnavailableError(self.state.backend.value)
        return store

    @property
    def memory(self) -> MemoryStore:
        """The research memory of the active backend (``MemoryRecord`` nodes on Neo4j)."""
        if not self.state.enabled:
            raise MemoryGraphDisabledError()
        if self.state.backend is Backend.NEO4J:
            if self._neo4j_memory is None:
                raise StoreUnavailableError(Backend.NEO4J.value)
            return self._neo4j_memory
        return self.memory_store

    async def record(self, use_case: Callable[[GraphStore, E], Awaitable[R]], event: E) -> R:
        """The one entrance of every graph write: ``use_case`` applies ``event`` to the active
        store (and validates it, before the store is asked for anything).

        The outbox decision is made here and only here: an event kind that may wait
        (``Event.journalled``, the observes) is journalled instead when the selected Neo4j
        cannot take it, and answers ``StoreUnavailableError(queued=True)``; any other kind (the
        declares, which must validate against the graph) answers unreachable, not queued. An
        observe held by journalled events (its session's, or another session's naming a node
        it claims) queues behind them, so their order is kept — while Neo4j answers and
        replays them, by waiting up to ``neo4j_timeout`` for them (``Outbox.released``) and
        then writing; the others are written at once, also while the outbox replays. Once a
        write or a ping found Neo4j unreachable, observes are journalled at once until the
        supervisor's ping finds it answering (each would otherwise wait for a connection to
        time out). An event journalled without being applied is validated here instead: a
        replay could never apply an invalid one."""
        if not self.state.enabled:
            raise MemoryGraphDisabledError()
        if self.state.backend is Backend.FILE or self.outbox is None:
            return await use_case(self.graph_store, event)
        if not event.journalled:
            return await self._after_journal(use_case, event)
        neo4j = self._stores.get(Backend.NEO4J)
        if neo4j is not None and await self.outbox.released(event, self.settings.neo4j_timeout):
            try:
                return await use_case(neo4j, event)
            except StoreUnavailableError as exc:
                self.outbox.pause()  # until the supervisor finds Neo4j answering again
                logger.warning("journalling a %s event: %s", event.kind, exc.message)
        else:
            validate_event(event)
        await self.outbox.append(event)
        self._wake.set()
        raise StoreUnavailableError(Backend.NEO4J.value, queued=True)

    async def _after_journal(
        self, use_case: Callable[[GraphStore, E], Awaitable[R]], event: E
    ) -> R:
        """A declare validates against its session's graph, so the observes journalled before
        it are applied first: it waits for them as an observe would, and answers unreachable
        (not queued: the agent may send it again) when they are not applied in time."""
        assert self.outbox is not None
        if self.outbox.holds(event):
            validate_event(event)  # a bad input is told as such, whatever the outbox holds
            if not await self.outbox.released(event, self.settings.neo4j_timeout):
                raise _queued_before()
        return await use_case(self.graph_store, event)

    async def after_sessions(
        self, session_ids: Sequence[str] | None, work: Callable[[GraphStore], Awaitable[R]]
    ) -> R:
        """``work`` (a cleanup) on the active store once the observes of ``session_ids``
        (``None``: of every session) journalled before it are applied: it deletes what they
        write, and replayed after it they would write it again. It waits for them as a
        declare does, and answers unreachable (not queued) when they are not applied in time."""
        store = self.graph_store
        if (
            self.outbox is not None
            and self.state.backend is Backend.NEO4J
            and not await self.outbox.settled(session_ids, self.settings.neo4j_timeout)
        ):
            raise _queued_before()
        return await work(store)

    # --- opening, reconnecting, replaying ------------------------------------------------

    async def _open_selected(self) -> None:
        if self.state.backend is Backend.FILE and Backend.FILE not in self._stores:
            store = await open_graph_store(self.settings, Backend.FILE)
            self._stores[Backend.FILE] = PublishingStore(store, self.events)
        if self.state.backend is Backend.NEO4J:
            await self._connect_neo4j()

    async def _connect_neo4j(self) -> bool:
        if Backend.NEO4J in self._stores:
            return True
        if not self.state.neo4j_password:
            return False
        # Imported here: the driver is only loaded when Neo4j is selected.
        from gateway.stores.neo4j.memory import Neo4jMemoryStore

        address = Neo4jAddress(
            self.state.neo4j_uri or self.settings.neo4j_uri,
            self.state.neo4j_user or self.settings.neo4j_user,
            self.state.neo4j_password,
        )
        try:
            store = await open_graph_store(self.settings, Backend.NEO4J, neo4j=address)
            try:
                self._neo4j_memory = await Neo4jMemoryStore.open(store)
            except BaseException:
                await store.aclose()
                raise
        except StoreUnavailableError as exc:
            logger.warning("neo4j not reachable: %s", exc.message)
            return False
        self._stores[Backend.NEO4J] = PublishingStore(store, self.events)
        logger.info("connected to neo4j")
        return True

    async def _supervise(self) -> None:
        """Reconnect to a selected Neo4j and replay the outbox, until the app stops."""
        while True:
            paused = False
            if self.state.enabled and self.state.backend is Backend.NEO4J:
                paused = await self.replay_outbox() is None
            if paused:
                # Not at every queued write while Neo4j is away: one attempt per interval.
                await asyncio.sleep(self.settings.reconnect_seconds)
            else:
                # asyncio.timeout, not wait_for: wait_for can swallow a cancellation (3.11).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.settings.reconnect_seconds):
                        await self._wake.wait()
            self._wake.clear()

    async def replay_outbox(self) -> int | None:
        """Apply journalled events to Neo4j if it answers; returns how many were applied, or
        ``None`` when Neo4j did not answer (the events stay journalled)."""
        if self.outbox is None:
            return 0
        if not await self._connect_neo4j():
            return None
        if self.outbox.pending == 0 and not self.outbox.lost:
            return 0
        try:
            # A ping first: a drain starts a new journal generation and reads the journal, and
            # writes go to Neo4j again only once it answered (``Outbox.lost``).
            await self._stores[Backend.NEO4J].ping()
            self.outbox.resume()
            return await self.outbox.drain(self._apply_queued)
        except StoreUnavailableError as exc:
            self.outbox.pause()
            logger.warning("outbox replay paused, neo4j unreachable: %s", exc.message)
            return None

    async def _apply_queued(self, events: Sequence[Event]) -> None:
        assert self.outbox is not None
        for dropped in await apply_batch(self._stores[Backend.NEO4J], events):
            await self.outbox.refuse(dropped.event, dropped.reason)

    # --- settings and health -------------------------------------------------------------

    async def configure(
        self,
        *,
        enabled: bool | None = None,
        backend: Backend | None = None,
        neo4j_uri: str | None = None,
        neo4j_user: str | None = None,
        neo4j_password: str | None = None,
    ) -> HealthReport:
        """Change runtime settings without a restart and persist them. A connection that could
        never be opened is refused (``InvalidInputError``) before anything is saved."""
        _check_connection(neo4j_uri, neo4j_user, neo4j_password)
        connection = {
            "neo4j_uri": neo4j_uri,
            "neo4j_user": neo4j_user,
            "neo4j_password": neo4j_password,
        }
        changes: dict[str, Any] = {
            name: value
            for name, value in {"enabled": enabled, "backend": backend, **connection}.items()
            if value is not None
        }
        register_secrets(neo4j_password)  # from now on no log line shows it
        async with self._lock:
            reconnect = any(value is not None for value in connection.values())
            saved = {
                **self._saved,
                **{name: getattr(value, "value", value) for name, value in changes.items()},
            }
            try:
                await asyncio.to_thread(write_state, self.settings.data_dir, saved)
            except OSError as exc:
                # Not saved, not applied: a setting must survive a restart or not change at all.
                fault = disk_fault(exc.errno)
                raise StoreWriteError(
                    f"The settings could not be saved: {fault}.", backend=Backend.FILE.value
                ) from exc
            self._saved = saved
            self.state = replace(self.state, **changes)
            if reconnect or self.state.backend is not Backend.NEO4J:
                await self._close_neo4j()
            await self._open_selected()
        self._wake.set()
        return await self.health()

    async def _close_neo4j(self) -> None:
        self._neo4j_memory = None
        store = self._stores.pop(Backend.NEO4J, None)
        if store is not None:
            await store.aclose()

    async def health(self) -> HealthReport:
        if not self.state.enabled:
            return self._report("DISABLED", reachable=False)
        needs_password = not self.state.neo4j_password and Backend.NEO4J not in self._stores
        if self.state.backend is Backend.NEO4J and needs_password:
            return self._report("NEEDS_PASSWORD", reachable=False)
        try:
            await self.graph_store.ping()
        except StoreUnavailableError as exc:
            # ``/health`` answers without a token: the reason names no path, credential or
            # server address (the log has the driver's own words).
            if self.state.backend is Backend.NEO4J:
                reason = "Neo4j cannot be reached; observe events are journalled meanwhile."
            else:
                reason = redact(
                    exc.detail or exc.message, paths=server_paths(self.settings.data_dir)
                )
            return self._report("DEGRADED", reachable=False, reason=reason)
        pending = self.outbox.pending if self.outbox is not None else 0
        if pending:
            # Accepted writes the active backend does not hold yet: reads are behind them.
            return self._report("DEGRADED", reachable=True, reason=self._pending_reason(pending))
        return self._report("HEALTHY", reachable=True)

    def _pending_reason(self, pending: int) -> str:
        if self.state.backend is Backend.NEO4J:
            return f"{pending} observe events journalled while Neo4j was away are being replayed."
        return (
            f"{pending} observe events are journalled for Neo4j and wait until it is selected "
            "again; the file store does not hold them."
        )

    def _report(self, status: str, *, reachable: bool, reason: str | None = None) -> HealthReport:
        return HealthReport(
            status=status,
            backend=self.state.backend,
            enabled=self.state.enabled,
            reachable=reachable,
            pending_writes=self.outbox.pending if self.outbox is not None else 0,
            version=package_version(),
            reason=reason,
            refused_writes=self.outbox.refused if self.outbox is not None else 0,
        )

    async def aclose(self) -> None:
        if self._supervisor is not None:
            self._supervisor.cancel()
            await asyncio.gather(self._supervisor, return_exceptions=True)
            self._supervisor = None
        for store in self._stores.values():
            await store.aclose()
        self._stores.clear()
        if self.outbox is not None:
            await self.outbox.aclose()
            self.outbox = None
        await self.memory_store.aclose()


def _check_connection(uri: str | None, user: str | None, password: str | None) -> None:
    if uri is not None:
        check_text("neo4j_uri", uri, "input.neo4jUri")
        if not is_bolt_uri(uri):
            raise InvalidInputError(
                "input.neo4jUri",
                "must be a Bolt URI with a host the resolver accepts (no empty label, none "
                "over 63 characters), e.g. bolt://127.0.0.1:7687 "
                f"(schemes: {', '.join(sorted(NEO4J_SCHEMES))}; "
                f"at most {MAX_NEO4J_URI_LENGTH} characters)",
            )
    if user is not None:
        check_text("neo4j_user", user, "input.neo4jUser")
    if password is not None:
        check_unicode(password, "input.neo4jPassword")


def _queued_before() -> StoreUnavailableError:
    """Unreachable, not queued: the write must follow journalled observes not applied yet."""
    return StoreUnavailableError(
        Backend.NEO4J.value,
        detail="Observes queued before this write, which it must follow, are not applied yet.",
    )
