"""Storage backends behind the port of ``resolvers.store``, and the one way to open them.

``open_graph_store(settings, backend)`` opens the embedded store in ``<dataDir>/graph`` with the
engine the settings name (``gateway.stores.embedded``: SQLite by default, or the log; SQLite
migrates a log directory on its first start) or connects to Neo4j; the server's runtime, the
command line and the tools all open stores through it, so a backend's options are read in one
place. A backend's optional capabilities are the protocols of ``resolvers.store``
(``WalkReader``, ``RankedSearch``, ``SizedStore``), checked with ``isinstance`` where they are
used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, overload

from resolvers.records import Backend

if TYPE_CHECKING:
    from pathlib import Path

    from gateway.settings import Settings
    from gateway.stores.file.store import FileStore
    from gateway.stores.neo4j import Neo4jStore
    from gateway.stores.sqlite.store import SqliteStore


@dataclass(frozen=True, slots=True)
class Neo4jAddress:
    """Where a Neo4j server is and who logs in."""

    uri: str
    user: str
    password: str | None = field(default=None, repr=False)

    @classmethod
    def of(cls, settings: Settings) -> Neo4jAddress:
        return cls(settings.neo4j_uri, settings.neo4j_user, settings.neo4j_password)


def graph_directory(settings: Settings) -> Path:
    """The embedded store's directory inside the data directory."""
    return settings.data_dir / "graph"


@overload
async def open_graph_store(
    settings: Settings, backend: Literal[Backend.FILE]
) -> FileStore | SqliteStore: ...


@overload
async def open_graph_store(
    settings: Settings, backend: Literal[Backend.NEO4J], *, neo4j: Neo4jAddress | None = None
) -> Neo4jStore: ...


async def open_graph_store(
    settings: Settings, backend: Backend, *, neo4j: Neo4jAddress | None = None
) -> FileStore | SqliteStore | Neo4jStore:
    """Open ``backend`` as ``settings`` configure it (``neo4j`` overrides the configured server).

    Raises what the backend raises: ``StoreLockedError`` when another process writes the file
    store, ``StoreUnavailableError`` when Neo4j does not answer or refuses the credentials.
    The driver is imported only when Neo4j is opened."""
    if backend is Backend.FILE:
        from gateway.stores.embedded import open_embedded_store

        return await open_embedded_store(
            graph_directory(settings),
            engine=settings.file_engine,
            fsync=settings.fsync,
            heavy_readers=settings.heavy_readers,
        )
    from gateway.stores.neo4j import Neo4jStore

    address = neo4j or Neo4jAddress.of(settings)
    return await Neo4jStore.open(
        address.uri,
        address.user,
        address.password,
        connection_timeout=settings.neo4j_timeout,
        # A statement may take the request's whole time budget, never longer.
        query_timeout=settings.query_timeout_seconds,
    )
