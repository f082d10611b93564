"""Opening the embedded (``file``) backend with the engine the settings name.

``log`` is ``gateway.stores.file`` (a JSON-lines log, the graph in memory); ``sqlite`` is
``gateway.stores.sqlite`` (one SQLite database; it migrates a log directory on first start).
A directory migrated to SQLite is refused by the log engine instead of being read as empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.stores.file.store import FileStore
from gateway.stores.sqlite import queries
from gateway.stores.sqlite.migrate import DATABASE_NAME
from gateway.stores.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from pathlib import Path

    from gateway.stores.file.codec import Captured


class EngineMismatchError(Exception):
    """The data directory belongs to another engine than the one configured."""


async def open_embedded_store(
    directory: Path, *, engine: str = "log", fsync: bool = True
) -> FileStore | SqliteStore:
    """Open the embedded store in ``directory`` with ``engine`` (``log`` or ``sqlite``)."""
    if engine == "sqlite":
        return await SqliteStore.open(directory, fsync=fsync)
    if (directory / DATABASE_NAME).exists():
        raise EngineMismatchError(
            f"the graph in {directory} was migrated to the SQLite engine: set "
            "SCIENCE_AGENT_MEMORY_GRAPH_FILE_ENGINE=sqlite (its log files are kept in "
            f"{directory / 'migrated-from-log'})"
        )
    return await FileStore.open(directory, fsync=fsync)


async def capture_embedded(store: FileStore | SqliteStore) -> Captured:
    """A consistent copy of every record of an embedded store (for migration and export)."""
    if isinstance(store, FileStore):
        return store.capture()
    return await store.read(queries.capture)
