"""Shared fixtures: one ``store`` per backend, a runtime over it, and a GraphQL client.

Behaviour tests ask only for ``store`` (or ``gql``, which is built on it), so every behaviour
runs on every backend: ``file`` (the log engine), ``sqlite`` (the file backend's SQLite engine)
and ``neo4j``. The Neo4j backend needs ``GATEWAY_TEST_NEO4J_URI`` (set by
``tools/test.sh``); without it its cases skip with a reason, and FAIL when
``GATEWAY_REQUIRE_NEO4J=1`` (CI).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings as hypothesis_settings

from gateway.runtime.state import Runtime, SavedState
from gateway.schema import build_schema
from gateway.schema.context import GraphContext
from gateway.settings import Settings
from gateway.stores.file.memory import FileMemoryStore
from gateway.stores.file.store import FileStore
from gateway.stores.neo4j import Neo4jStore
from gateway.stores.neo4j.memory import Neo4jMemoryStore
from gateway.stores.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    import strawberry

    from resolvers.store import GraphStore

BACKENDS = ["file", "sqlite", "neo4j"]

# A property's examples are judged by what they find, never by how long one took: on a shared
# machine a 4 ms example sometimes takes 250 ms (the suites with profiles of their own,
# ``tests/profiles.py``, say the same).
hypothesis_settings.register_profile("gateway", deadline=None)
hypothesis_settings.load_profile("gateway")


def neo4j_settings() -> dict[str, str] | None:
    """Connection of the test Neo4j, or ``None`` (skip, or fail when it is required)."""
    uri = os.environ.get("GATEWAY_TEST_NEO4J_URI")
    if not uri:
        reason = "GATEWAY_TEST_NEO4J_URI is not set (tools/test.sh starts a test Neo4j)"
        if os.environ.get("GATEWAY_REQUIRE_NEO4J") == "1":
            pytest.fail(f"Neo4j is required but not configured: {reason}")
        pytest.skip(reason)
    return {
        "uri": uri,
        "user": os.environ.get("GATEWAY_TEST_NEO4J_USER", "neo4j"),
        "password": os.environ.get("GATEWAY_TEST_NEO4J_PASSWORD", ""),
    }


async def open_store(backend: str, directory: Path) -> GraphStore:
    """An empty store of ``backend``. The file store does not fsync: these tests are about
    behaviour, not durability (``tests/stores/file`` opens its own stores with fsync on)."""
    if backend == "file":
        return await FileStore.open(directory / "graph", fsync=False)
    if backend == "sqlite":
        return await SqliteStore.open(directory / "graph", fsync=False)
    if backend == "neo4j":
        settings = neo4j_settings()
        assert settings is not None
        neo4j_store = await Neo4jStore.open(settings["uri"], settings["user"], settings["password"])
        try:
            await neo4j_store.wipe()
        except BaseException:
            await neo4j_store.aclose()
            raise
        return neo4j_store
    raise ValueError(backend)


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[GraphStore]:
    opened = await open_store(str(request.param), tmp_path)
    try:
        yield opened
    finally:
        await opened.aclose()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, link_wait_seconds=0.3, fsync=False)


@pytest.fixture
async def runtime(store: GraphStore, settings: Settings) -> AsyncIterator[Runtime]:
    memory = await FileMemoryStore.open(settings.data_dir / "memory", fsync=settings.fsync)
    state = SavedState(backend=store.backend)
    neo4j_memory = await Neo4jMemoryStore.open(store) if isinstance(store, Neo4jStore) else None
    yield Runtime(settings, state, memory, stores={store.backend: store}, neo4j_memory=neo4j_memory)
    await memory.aclose()


@pytest.fixture(scope="session")
def schema() -> strawberry.Schema:
    return build_schema()


class GraphQLClient:
    """Executes documents against the schema with a context built on the test's store."""

    def __init__(self, schema: strawberry.Schema, runtime: Runtime) -> None:
        self.schema = schema
        self.runtime = runtime

    async def execute(
        self, document: str, *, can_write: bool = True, **variables: Any
    ) -> dict[str, Any]:
        """The ``data`` of a successful execution; fails the test on top-level errors."""
        result = await self.schema.execute(
            document,
            variable_values=variables,
            context_value=GraphContext(runtime=self.runtime, can_write=can_write),
        )
        assert result.errors is None, result.errors
        assert result.data is not None
        return result.data

    async def raw(self, document: str, *, can_write: bool = True, **variables: Any) -> Any:
        return await self.schema.execute(
            document,
            variable_values=variables,
            context_value=GraphContext(runtime=self.runtime, can_write=can_write),
        )


@pytest.fixture
def gql(schema: strawberry.Schema, runtime: Runtime) -> GraphQLClient:
    return GraphQLClient(schema, runtime)


# The developer's quick loop, `pytest -m fast -n 2`: everything but the Neo4j backend, the
# browser and client builds, the generated (property-based) suites and the long load, crash and
# outage runs. The full suite (no -m) is what CI runs.
SLOW_FOLDERS = ("e2e", "fuzz", "bench", "model", "docs")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.relative_to(item.config.rootpath / "tests").parts
        callspec = getattr(item, "callspec", None)
        on_neo4j = parts[:2] == ("stores", "neo4j") or (
            callspec is not None and "neo4j" in map(str, callspec.params.values())
        )
        slow = item.get_closest_marker("slow") is not None
        if on_neo4j:
            item.add_marker(pytest.mark.neo4j)
        if not (on_neo4j or slow or parts[0] in SLOW_FOLDERS):
            item.add_marker(pytest.mark.fast)
