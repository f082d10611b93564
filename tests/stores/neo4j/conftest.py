"""Fixtures of the Neo4j adapter tests: the test server's connection and an empty store."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from gateway.stores.neo4j import Neo4jStore
from resolvers.records import Label, NodeRecord, node_id
from tests.conftest import neo4j_settings

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def connection() -> dict[str, str]:
    settings = neo4j_settings()
    assert settings is not None
    return settings


async def open_store(connection: dict[str, str], **options: Any) -> Neo4jStore:
    """A store on the test server. It does not watch for restarts unless asked: its poll
    would land among the statements and plans these tests count."""
    options.setdefault("watch_restarts", False)
    return await Neo4jStore.open(
        connection["uri"], connection["user"], connection["password"], **options
    )


@pytest.fixture
async def neo4j_store(connection: dict[str, str]) -> AsyncIterator[Neo4jStore]:
    opened = await open_store(connection)
    try:
        await opened.wipe()
        yield opened
    finally:
        await opened.aclose()


def make_node(
    label: Label, key: str, session: str = "s1", *, seq: int = 0, **props: Any
) -> NodeRecord:
    return NodeRecord(node_id(label, key, session), label, key, session, T0, props, seq)


async def cached_plans(store: Neo4jStore) -> int:
    """How many plans the server's caches held; they are emptied (the next statements plan
    anew, nothing else changes)."""
    async with store._driver.session() as session:
        record = await (await session.run("CALL db.clearQueryCaches()")).single()
    assert record is not None
    found = re.search(r"(\d+) quer", str(record[0]))
    assert found is not None, record
    return int(found.group(1))
