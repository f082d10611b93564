"""The gateway's runtime state: the active store, the toggle, and their persistence.

``<dataDir>/gateway.json`` (mode 0600) remembers what ``configureMemoryGraph`` changed — the
enabled toggle, the backend, the Neo4j connection — so a restart keeps them. The graph of the
file backend lives in ``<dataDir>/graph``, the research memory in ``<dataDir>/memory``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import asdict, dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from gateway.settings import Settings
from gateway.stores.file.memory import FileMemoryStore
from gateway.stores.file.store import FileStore
from resolvers.errors import InvalidInputError, MemoryGraphDisabledError, StoreUnavailableError
from resolvers.events import Event
from resolvers.memory import MemoryStore, compact_memory
from resolvers.observe import APPLY, WriteResult
from resolvers.records import Backend, utc_now
from resolvers.store import GraphStore

logger = logging.getLogger(__name__)

STATE_FILE = "gateway.json"


def package_version() -> str:
    try:
        return version("science-memory")
    except PackageNotFoundError:
        return "0+unknown"


@dataclass(frozen=True, slots=True)
class SavedState:
    """What survives a restart. The password is kept only here, never logged or returned."""

    enabled: bool = True
    backend: Backend = Backend.FILE
    neo4j_uri: str | None = None
    neo4j_user: str | None = None
    neo4j_password: str | None = None

    def __repr__(self) -> str:
        secret = "***" if self.neo4j_password else None
        return (
            f"SavedState(enabled={self.enabled}, backend={self.backend.value}, "
            f"neo4j_uri={self.neo4j_uri!r}, neo4j_user={self.neo4j_user!r}, "
            f"neo4j_password={secret})"
        )


@dataclass(frozen=True, slots=True)
class HealthReport:
    status: str  # HEALTHY DEGRADED NEEDS_PASSWORD DISABLED
    backend: Backend
    enabled: bool
    reachable: bool
    pending_writes: int
    version: str

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "backend": self.backend.value,
            "enabled": self.enabled,
            "reachable": self.reachable,
            "pendingWrites": self.pending_writes,
            "version": self.version,
        }


class Runtime:
    """Owns the stores for the lifetime of the app. Use ``await Runtime.start(settings)``."""

    def __init__(
        self,
        settings: Settings,
        state: SavedState,
        memory: MemoryStore,
        stores: dict[Backend, GraphStore] | None = None,
    ) -> None:
        self.settings = settings
        self.state = state
        self.memory_store = memory
        self._stores: dict[Backend, GraphStore] = dict(stores or {})
        self._lock = asyncio.Lock()

    @classmethod
    async def start(cls, settings: Settings) -> Runtime:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        state = await asyncio.to_thread(_read_state, settings)
        memory = await FileMemoryStore.open(settings.data_dir / "memory")
        runtime = cls(settings, state, memory)
        try:
            await runtime._open_selected()
            report = await compact_memory(memory, utc_now().date(), force=False)
            if report.compacted:
                logger.info("research memory compacted: %s -> %s", report.before, report.after)
        except BaseException:
            await runtime.aclose()
            raise
        return runtime

    async def _open_selected(self) -> None:
        if self.state.backend is Backend.FILE and Backend.FILE not in self._stores:
            self._stores[Backend.FILE] = await FileStore.open(
                self.settings.data_dir / "graph", fsync=self.settings.fsync
            )

    @property
    def graph_store(self) -> GraphStore:
        """The active store; raises when disabled or when the backend cannot serve."""
        if not self.state.enabled:
            raise MemoryGraphDisabledError()
        store = self._stores.get(self.state.backend)
        if store is None:
            raise StoreUnavailableError(self.state.backend.value)
        return store

    async def record(self, event: Event) -> WriteResult:
        """Apply one observe event to the active store."""
        return await APPLY[type(event)](self.graph_store, event)

    @property
    def memory(self) -> MemoryStore:
        if not self.state.enabled:
            raise MemoryGraphDisabledError()
        return self.memory_store

    async def configure(
        self,
        *,
        enabled: bool | None = None,
        backend: Backend | None = None,
        neo4j_uri: str | None = None,
        neo4j_user: str | None = None,
        neo4j_password: str | None = None,
    ) -> HealthReport:
        """Change runtime settings without a restart and persist them."""
        if backend is Backend.NEO4J:
            raise InvalidInputError("input.backend", "the neo4j backend is not available")
        async with self._lock:
            changes = {
                name: value
                for name, value in {
                    "enabled": enabled,
                    "backend": backend,
                    "neo4j_uri": neo4j_uri,
                    "neo4j_user": neo4j_user,
                    "neo4j_password": neo4j_password,
                }.items()
                if value is not None
            }
            self.state = replace(self.state, **changes)
            await asyncio.to_thread(_write_state, self.settings.data_dir, self.state)
            await self._open_selected()
        return await self.health()

    async def health(self) -> HealthReport:
        backend = self.state.backend
        if not self.state.enabled:
            return self._report("DISABLED", reachable=False)
        try:
            await self.graph_store.ping()
        except StoreUnavailableError:
            return self._report("DEGRADED", reachable=False)
        return self._report("HEALTHY", reachable=True, backend=backend)

    def _report(
        self, status: str, *, reachable: bool, backend: Backend | None = None
    ) -> HealthReport:
        return HealthReport(
            status=status,
            backend=backend or self.state.backend,
            enabled=self.state.enabled,
            reachable=reachable,
            pending_writes=0,
            version=package_version(),
        )

    async def aclose(self) -> None:
        for store in self._stores.values():
            await store.aclose()
        self._stores.clear()
        await self.memory_store.aclose()


def _read_state(settings: Settings) -> SavedState:
    defaults = SavedState(
        backend=settings.backend,
        neo4j_uri=settings.neo4j_uri,
        neo4j_user=settings.neo4j_user,
        neo4j_password=settings.neo4j_password,
    )
    path = settings.data_dir / STATE_FILE
    if not path.exists():
        return defaults
    saved = json.loads(path.read_text(encoding="utf-8"))
    return replace(
        defaults,
        enabled=bool(saved.get("enabled", True)),
        backend=Backend(saved.get("backend", defaults.backend.value)),
        neo4j_uri=saved.get("neo4j_uri") or defaults.neo4j_uri,
        neo4j_user=saved.get("neo4j_user") or defaults.neo4j_user,
        neo4j_password=saved.get("neo4j_password") or defaults.neo4j_password,
    )


def _write_state(directory: Path, state: SavedState) -> None:
    data = asdict(state)
    data["backend"] = state.backend.value
    temporary = directory / (STATE_FILE + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, directory / STATE_FILE)
