"""Fixtures of the model-based suite: a fresh, empty store per generated example."""

from __future__ import annotations

import itertools
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from gateway.stores.file.store import FileStore
from gateway.stores.neo4j import Neo4jStore
from gateway.stores.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from resolvers.store import GraphStore

_examples = itertools.count()


@asynccontextmanager
async def emptied(store: GraphStore, directory: Path) -> AsyncIterator[GraphStore]:
    """``store`` emptied (Neo4j), or a new embedded store of the same engine beside it:
    every example starts empty."""
    if isinstance(store, Neo4jStore):
        await store.wipe()
        yield store
        return
    engine = SqliteStore if isinstance(store, SqliteStore) else FileStore
    fresh = await engine.open(directory / f"example-{next(_examples)}", fsync=False)
    try:
        yield fresh
    finally:
        await fresh.aclose()
