"""The ``memory_store`` fixture: an empty store per test, once per backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gateway.stores.file.memory import FileMemoryStore
from gateway.stores.neo4j import Neo4jStore
from gateway.stores.neo4j.memory import Neo4jMemoryStore
from tests.conftest import open_store

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from resolvers.memory import MemoryStore


@pytest.fixture(params=[pytest.param("file", id="file"), pytest.param("neo4j", id="neo4j")])
async def memory_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[MemoryStore]:
    if request.param == "file":
        store = await FileMemoryStore.open(tmp_path / "memory")
        yield store
        await store.aclose()
        return
    graph = await open_store("neo4j", tmp_path)
    assert isinstance(graph, Neo4jStore)
    try:
        yield await Neo4jMemoryStore.open(graph)
    finally:
        await graph.aclose()
