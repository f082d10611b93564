"""Two replicas on one Neo4j: replica A journals a session's observes while Neo4j is out of its
reach, and replica B cleans the session up meanwhile. A's replay must not write again what the
cleanup removed (the events were acknowledged before it), and must still write what the
session sends after it."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from gateway.live.bus import EventBus
from gateway.live.publishing import PublishingStore
from gateway.runtime.replay import apply_batch, apply_one
from resolvers.cleanup import cleanup_project, cleanup_session
from resolvers.events import ExecutionObserved, ProducedArtifact
from tests.stores.neo4j.conftest import open_store
from tests.test_replay import events

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any

    from gateway.stores.neo4j import Neo4jStore
    from resolvers.events import Event
    from resolvers.store import GraphStore


async def live_ids(store: GraphStore, session: str) -> list[str]:
    nodes = await store.get_nodes(await store.session_node_ids(session))
    return sorted(node.id for node in nodes if node is not None and not node.deleted)


async def replay_batch(store: GraphStore, journal: list[Event]) -> None:
    assert await apply_batch(store, journal) == []


async def replay_one_by_one(store: GraphStore, journal: list[Event]) -> None:
    for event in journal:
        assert await apply_one(store, event) is None


def clean_session(store: GraphStore) -> Coroutine[Any, Any, Any]:
    return cleanup_session(store, "s1")


def clean_project(store: GraphStore) -> Coroutine[Any, Any, Any]:
    return cleanup_project(store, "p1", ["s1"])


def earlier(session: str) -> Event:
    """An execution of ``session`` that ``events(session)`` does not send again."""
    execution = events(session)[0]
    assert isinstance(execution, ExecutionObserved)
    old = ProducedArtifact(f"{session}-old-fig", 1)
    return replace(execution, execution_id=f"{session}-old", produced_artifacts=(old,))


REPLAYS = [replay_batch, replay_one_by_one]
CLEANUPS = [clean_session, clean_project]


@pytest.mark.parametrize("replay", REPLAYS)
@pytest.mark.parametrize("cleanup", CLEANUPS)
async def test_a_replay_leaves_out_what_a_later_cleanup_through_another_replica_removed(
    neo4j_store: Neo4jStore,
    connection: dict[str, str],
    replay: Callable[[GraphStore, list[Event]], Coroutine[Any, Any, None]],
    cleanup: Callable[[GraphStore], Coroutine[Any, Any, Any]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    replica_a = PublishingStore(neo4j_store, EventBus())
    replica_b = PublishingStore(await open_store(connection), EventBus())
    try:
        first, *journal = events("s1")  # received (and acknowledged) now
        await apply_one(replica_a, first)  # written before the outage
        await cleanup(replica_b)
        removed = await live_ids(neo4j_store, "s1")

        with caplog.at_level(logging.WARNING):
            await replay(replica_a, journal)
    finally:
        await replica_b.aclose()

    assert await live_ids(neo4j_store, "s1") == removed == []
    left_out = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert len(left_out) == len(journal)
    assert all("session s1" in message for message in left_out)


@pytest.mark.parametrize("replay", REPLAYS)
async def test_what_a_session_sends_after_its_cleanup_is_replayed(
    neo4j_store: Neo4jStore,
    connection: dict[str, str],
    replay: Callable[[GraphStore, list[Event]], Coroutine[Any, Any, None]],
) -> None:
    replica_a = PublishingStore(neo4j_store, EventBus())
    replica_b = PublishingStore(await open_store(connection), EventBus())
    try:
        await apply_one(replica_a, earlier("s1"))
        await cleanup_session(replica_b, "s1")
        journal = events("s1")  # received after the cleanup
        await replay(replica_a, journal)
        expected = PublishingStore(await open_store(connection), EventBus())
        try:
            await replay_batch(expected, events("s2"))
            fresh = await live_ids(neo4j_store, "s2")
        finally:
            await expected.aclose()
    finally:
        await replica_b.aclose()

    assert await live_ids(neo4j_store, "s1") == [node_id.replace("s2", "s1") for node_id in fresh]
    assert fresh


async def test_the_latest_cleanup_noted_wins(neo4j_store: Neo4jStore) -> None:
    await cleanup_session(neo4j_store, "s1")
    async with neo4j_store.transaction("s1") as tx:
        first = await tx.cleaned_at("s1")
        assert first is not None
        await tx.note_cleanup("s1", first.replace(year=first.year - 1))  # an older clock's

    async with neo4j_store.transaction("s1") as tx:
        assert await tx.cleaned_at("s1") == first
        assert await tx.cleaned_at("never-cleaned") is None
