"""A server restart the driver reconnects to unseen: the store notices it and plans again what
it planned at connect and the read statements it sent lately (``gateway.stores.neo4j.restarts``),
so the first reads after it do not each plan for seconds.

The restart test stops and starts the real test server (``tools/neo4j-test-server/run.sh``),
keeping its data and port, as ``test_outage`` does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from gateway.stores.neo4j import store as store_module
from gateway.stores.neo4j.restarts import RecentReads
from resolvers.chains import ChainKind, chain_exists
from resolvers.observe import APPLY
from tests.stores.neo4j.conftest import cached_plans, open_store
from tests.stores.neo4j.test_outage import _server
from tests.test_replay import events

if TYPE_CHECKING:
    import pytest

    from gateway.stores.neo4j import Neo4jStore

REPLANNED = "neo4j restarted: planning the statements again"


async def write_session(store: Neo4jStore) -> None:
    for event in events("s1"):
        await APPLY[type(event)](store, event)


async def ask_every_kind(store: Neo4jStore) -> None:
    for node_id in ("Artifact:s1-fig#v2", "ToolCall:subtask:s1-e1", "Code:s1-e0"):
        await chain_exists(store, node_id, list(ChainKind))


def test_the_recent_reads_forget_the_least_recently_sent_first() -> None:
    reads = RecentReads(size=2)
    reads.note("A", {"x": 1}, "r")
    reads.note("B", {"x": 2}, "r")
    reads.note("A", {"x": 3}, "w")  # sent again: the latest parameters, the most recent
    reads.note("C", {"x": 4}, "r")

    assert reads.restarted() == [("C", {"x": 4}, "r"), ("A", {"x": 3}, "w")]


def test_a_statement_sent_after_a_restart_was_planned_by_its_request() -> None:
    reads = RecentReads()
    reads.note("A", {}, "r")
    reads.note("B", {}, "r")

    before = reads.restarted()
    reads.note("B", {}, "r")

    assert [statement for statement, _, _ in before] == ["B", "A"]
    assert (reads.sent_again("A"), reads.sent_again("B")) == (False, True)


async def test_the_statements_planned_again_are_the_ones_the_reads_use(
    neo4j_store: Neo4jStore,
) -> None:
    # Planned again, a statement must be cached as its next run needs it: the same reads
    # after a re-plan add no plan to the server's caches.
    await write_session(neo4j_store)
    await ask_every_kind(neo4j_store)
    await cached_plans(neo4j_store)  # emptied
    await neo4j_store._replan()
    replanned = await cached_plans(neo4j_store)
    await neo4j_store._replan()
    await ask_every_kind(neo4j_store)
    after_reads = await cached_plans(neo4j_store)

    assert len(neo4j_store._reads.restarted()) > len(ChainKind)
    assert after_reads == replanned


async def test_a_restart_no_request_saw_is_noticed_and_planned_again(
    connection: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(store_module, "CHECK_SECONDS", 0.2)
    store = await open_store(connection, watch_restarts=True)
    try:
        await store.wipe()
        await write_session(store)
        await ask_every_kind(store)
        sent = len(store._reads.restarted())
        with caplog.at_level(logging.INFO, logger=store_module.__name__):
            _server("stop", "--keep-data")
            _server("start", "--same-port")
            async with asyncio.timeout(120):
                while not any(REPLANNED in r.getMessage() for r in caplog.records):  # noqa: ASYNC110 -- a log line, no event to await
                    await asyncio.sleep(0.1)
                while not any("planned again" in r.getMessage() for r in caplog.records):  # noqa: ASYNC110
                    await asyncio.sleep(0.1)
        held = await cached_plans(store)
    finally:
        await store.aclose()

    assert held >= sent  # the restarted server had none
