"""Cleanups on Neo4j. Two replicas on one Neo4j: replica A journals a session's observes while
Neo4j is out of its reach, and replica B cleans the session (or a project) up meanwhile. A's
replay must not write again what the cleanup removed (the events were acknowledged before it),
and must still write what the session sends after it. A cleanup that meets a deadlock with
concurrent writers runs again."""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest
from neo4j.exceptions import Neo4jError

from gateway.live.bus import EventBus
from gateway.live.publishing import PublishingStore
from gateway.runtime import replay as replay_module
from gateway.runtime.replay import apply_batch, apply_one
from gateway.stores.neo4j.store import _Neo4jTransaction
from resolvers import cleanup as cleanup_module
from resolvers.cleanup import cleanup_project, cleanup_session
from resolvers.errors import StoreUnavailableError
from resolvers.events import ArtifactVersionRef, ExecutionObserved, ProducedArtifact
from resolvers.records import Direction, EdgeType
from resolvers.store import SessionCleanups
from tests.stores.neo4j.conftest import open_store
from tests.test_replay import events

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Coroutine
    from typing import Any

    from gateway.stores.neo4j import Neo4jStore
    from resolvers.events import Event
    from resolvers.store import GraphStore


@asynccontextmanager
async def two_replicas(
    store: Neo4jStore, connection: dict[str, str]
) -> AsyncIterator[tuple[GraphStore, GraphStore]]:
    """Replica A on ``store`` and replica B on a connection of its own, as gateways wrap them."""
    replica_b = PublishingStore(await open_store(connection), EventBus())
    try:
        yield PublishingStore(store, EventBus()), replica_b
    finally:
        await replica_b.aclose()


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
    async with two_replicas(neo4j_store, connection) as (replica_a, replica_b):
        first, *journal = events("s1")  # received (and acknowledged) now
        await apply_one(replica_a, first)  # written before the outage
        await cleanup(replica_b)
        removed = await live_ids(neo4j_store, "s1")

        with caplog.at_level(logging.WARNING):
            await replay(replica_a, journal)

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
    async with two_replicas(neo4j_store, connection) as (replica_a, replica_b):
        await apply_one(replica_a, earlier("s1"))
        await cleanup_session(replica_b, "s1")
        journal = events("s1")  # received after the cleanup
        await replay(replica_a, journal)
        await replay_batch(replica_b, events("s2"))  # the same, never cleaned up
        fresh = await live_ids(neo4j_store, "s2")

    assert await live_ids(neo4j_store, "s1") == [node_id.replace("s2", "s1") for node_id in fresh]
    assert fresh


async def test_the_latest_cleanup_noted_wins(neo4j_store: Neo4jStore) -> None:
    await cleanup_session(neo4j_store, "s1")
    async with neo4j_store.transaction("s1") as tx:
        first = (await tx.cleaned_at("s1")).at
        assert first is not None
        older = first.replace(year=first.year - 1)  # an older clock's
        await tx.note_cleanup("s1", older, emptied=True)

    async with neo4j_store.transaction("s1") as tx:
        assert await tx.cleaned_at("s1") == SessionCleanups(first, older)
        assert await tx.cleaned_at("never-cleaned") == SessionCleanups()


def with_project(event: Event, project: str) -> Event:
    """``event`` (an execution) with its artifacts in ``project``."""
    assert isinstance(event, ExecutionObserved)
    artifacts = tuple(replace(a, project_id=project) for a in event.produced_artifacts)
    return replace(event, produced_artifacts=artifacts)


@pytest.mark.parametrize("replay", REPLAYS)
async def test_a_replay_leaves_out_the_artifacts_of_a_project_cleaned_up_since(
    neo4j_store: Neo4jStore,
    connection: dict[str, str],
    replay: Callable[[GraphStore, list[Event]], Coroutine[Any, Any, None]],
) -> None:
    # The session is not among the cleanup's: its steps stay, its project's Artifacts go,
    # as they would have, had the events been applied before the cleanup.
    async with two_replicas(neo4j_store, connection) as (replica_a, replica_b):
        before = [with_project(event, "p1") for event in events("s1") if event.kind == "execution"]
        await cleanup_project(replica_b, "p1", ["other"])
        after = with_project(earlier("s1"), "p1")  # received after the cleanup
        await replay(replica_a, [*before, after])

    live = await live_ids(neo4j_store, "s1")
    assert [i for i in live if i.startswith("Artifact:")] == ["Artifact:s1-old-fig#v1"]
    assert {f"Code:s1-e{n}" for n in range(3)} <= set(live)
    assert [a.id for a in await neo4j_store.project_artifacts("p1")] == ["Artifact:s1-old-fig#v1"]


# As the driver builds it from the server's failure message (a bare constructor sets no code).
DEADLOCK = Neo4jError._hydrate_neo4j(
    code="Neo.TransientError.Transaction.DeadlockDetected",
    message="ForsetiClient[7] can't acquire ExclusiveLock{owner=ForsetiClient[9]}",
)


@pytest.mark.parametrize("cleanup", CLEANUPS)
async def test_a_cleanup_that_meets_a_deadlock_runs_again(
    neo4j_store: Neo4jStore,
    monkeypatch: pytest.MonkeyPatch,
    cleanup: Callable[[GraphStore], Coroutine[Any, Any, Any]],
) -> None:
    await replay_batch(neo4j_store, events("s1"))
    original = _Neo4jTransaction.delete_node
    failures = [2]

    async def deadlocked(self: _Neo4jTransaction, node_id: str) -> bool:
        if failures[0]:
            failures[0] -= 1
            async with self._errors():  # where the server's answer is read
                raise DEADLOCK
        return await original(self, node_id)

    monkeypatch.setattr(_Neo4jTransaction, "delete_node", deadlocked)

    counts = await cleanup(neo4j_store)

    assert failures == [0]
    assert counts.deleted > 0
    assert await live_ids(neo4j_store, "s1") == []


async def test_a_cleanup_that_keeps_meeting_deadlocks_says_so_without_the_servers_words(
    neo4j_store: Neo4jStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await replay_batch(neo4j_store, events("s1"))

    async def deadlocked(self: _Neo4jTransaction, node_id: str) -> bool:
        async with self._errors():  # where the server's answer is read
            raise DEADLOCK

    monkeypatch.setattr(_Neo4jTransaction, "delete_node", deadlocked)
    monkeypatch.setattr(cleanup_module, "RETRY_PAUSE", 0.0)

    with pytest.raises(StoreUnavailableError) as refused:
        await cleanup_session(neo4j_store, "s1")

    assert refused.value.transient
    assert "send it again" in refused.value.detail
    assert "Forseti" not in refused.value.detail
    assert await live_ids(neo4j_store, "s1") != []


@pytest.mark.parametrize("replay", REPLAYS)
async def test_an_artifact_a_queued_event_moves_into_a_project_cleaned_up_since_is_removed(
    neo4j_store: Neo4jStore,
    connection: dict[str, str],
    replay: Callable[[GraphStore, list[Event]], Coroutine[Any, Any, None]],
) -> None:
    # In time, the event would have put the Artifact in the project, and the cleanup deleted it.
    first = earlier("s1")
    assert isinstance(first, ExecutionObserved)
    (artifact,) = first.produced_artifacts
    richer = replace(artifact, project_id="p1", path="fig.png", media_type="image/png")
    async with two_replicas(neo4j_store, connection) as (replica_a, replica_b):
        await apply_one(replica_a, first)  # in no project before the outage
        queued = replace(first, produced_artifacts=(richer,))
        counts = await cleanup_project(replica_b, "p1", [])
        await replay(replica_a, [queued])

    assert counts.deleted == 0  # not in the project yet
    (node,) = await neo4j_store.get_nodes(["Artifact:s1-old-fig#v1"])
    assert node is None
    assert "Code:s1-old" in await live_ids(neo4j_store, "s1")


@pytest.mark.parametrize("replay", REPLAYS)
async def test_an_artifact_a_cleanup_deleted_stays_deleted_when_a_queued_event_names_no_project(
    neo4j_store: Neo4jStore,
    connection: dict[str, str],
    replay: Callable[[GraphStore, list[Event]], Coroutine[Any, Any, None]],
) -> None:
    # The event sent again touched the Artifact while it was in the project, in time; the
    # cleanup then deleted it. Without its tombstone the replay would make it anew.
    async with two_replicas(neo4j_store, connection) as (replica_a, replica_b):
        await apply_one(replica_a, with_project(earlier("s1"), "p1"))
        queued = earlier("s1")  # the same execution again, its Artifact in no project
        counts = await cleanup_project(replica_b, "p1", [])
        await replay(replica_a, [queued])

    assert counts.deleted == 1
    (node,) = await neo4j_store.get_nodes([FIGURE])
    assert node is None
    assert "Code:s1-old" in await live_ids(neo4j_store, "s1")


FIGURE = "Artifact:s1-old-fig#v1"


def made_by(session: str, inputs: tuple[ArtifactVersionRef, ...] = ()) -> ExecutionObserved:
    """An execution of ``session`` that makes ``FIGURE``'s key (or, with ``inputs``, its own
    figure from them)."""
    execution = earlier(session)
    assert isinstance(execution, ExecutionObserved)
    made = (
        ProducedArtifact(f"{session}-plot", 1, input_artifact_versions=inputs)
        if inputs
        else ProducedArtifact("s1-old-fig", 1)
    )
    return replace(execution, produced_artifacts=(made,))


@pytest.mark.parametrize("replay", REPLAYS)
async def test_a_queued_event_leaves_alone_an_artifact_made_again_after_the_cleanup(
    neo4j_store: Neo4jStore,
    connection: dict[str, str],
    replay: Callable[[GraphStore, list[Event]], Coroutine[Any, Any, None]],
) -> None:
    # Its write went to the Artifact the cleanup deleted; the one another session made since
    # is not its to touch, and the rest of the event is applied rather than refused whole.
    async with two_replicas(neo4j_store, connection) as (replica_a, replica_b):
        await apply_one(replica_a, with_project(earlier("s1"), "p1"))
        queued = with_project(earlier("s1"), "p1")
        await cleanup_project(replica_b, "p1", [])
        await apply_one(replica_b, made_by("s2"))  # received after the cleanup
        await replay(replica_a, [queued])

    (node,) = await neo4j_store.get_nodes([FIGURE])
    assert node is not None
    assert node.session_id == "s2"
    assert node.get("project_id") is None
    assert "Code:s1-old" in await live_ids(neo4j_store, "s1")
    produced = await neo4j_store.expand([FIGURE], EdgeType.PRODUCES, Direction.IN)
    assert [edge.source for edge in produced] == ["Code:s2-old"]


@pytest.mark.parametrize("replay", REPLAYS)
async def test_a_queued_input_edge_to_an_artifact_deleted_since_is_not_kept_for_a_later_one(
    neo4j_store: Neo4jStore,
    connection: dict[str, str],
    replay: Callable[[GraphStore, list[Event]], Coroutine[Any, Any, None]],
) -> None:
    # In time the edge went with the Artifact; parked, it would attach to one made later.
    async with two_replicas(neo4j_store, connection) as (replica_a, replica_b):
        await apply_one(replica_a, with_project(earlier("s1"), "p1"))
        queued = made_by("s3", inputs=(ArtifactVersionRef("s1-old-fig", 1),))
        await cleanup_project(replica_b, "p1", [])
        await replay(replica_a, [queued])
        await apply_one(replica_b, earlier("s1"))  # the Artifact made again, later

    assert (await neo4j_store.get_nodes([FIGURE]))[0] is not None
    assert "Artifact:s3-plot#v1" in await live_ids(neo4j_store, "s3")
    assert await neo4j_store.expand([FIGURE], EdgeType.INPUT, Direction.OUT) == []


async def test_a_project_cleanup_leaves_a_tombstone_per_artifact_it_deleted(
    neo4j_store: Neo4jStore,
) -> None:
    await apply_one(neo4j_store, with_project(earlier("s1"), "p1"))
    await replay_batch(neo4j_store, events("s2"))
    await cleanup_project(neo4j_store, "p1", ["s2"])

    figures = [f"Artifact:s2-fig#v{n}" for n in (1, 2, 3)]  # the listed session's
    async with neo4j_store.transaction() as tx:
        cleaned = await tx.artifacts_cleaned_at([FIGURE, *figures, "Code:s2-e1", "Artifact:x#v1"])
        noted = await tx.cleaned_at("s2")
    assert sorted(cleaned) == [FIGURE, *figures]
    assert set(cleaned.values()) == {noted.at} == {noted.emptied}


@pytest.mark.parametrize("replay", REPLAYS)
async def test_a_project_cleanup_while_a_replay_reads_its_ledger_waits_for_the_replay(
    neo4j_store: Neo4jStore,
    connection: dict[str, str],
    replay: Callable[[GraphStore, list[Event]], Coroutine[Any, Any, None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The queued event names no project; its Artifact is in p1 as stored. A cleanup of p1
    # started right after the replay read the tombstones must not commit before the replay
    # does (it would delete the Artifact, and the replay make it again): it waits, then
    # deletes what the replay wrote, as it would have had the event come first.
    cleanups: list[asyncio.Task[Any]] = []
    read = replay_module._cleanups

    async def then_a_cleanup(tx: Any, events: Any) -> Any:
        found = await read(tx, events)
        if not cleanups:  # once: a transaction that gave way reads again
            cleanups.append(asyncio.ensure_future(cleanup_project(replica_b, "p1", [])))
            await asyncio.sleep(1.0)  # long enough for an unhindered cleanup to commit
        return found

    async with two_replicas(neo4j_store, connection) as (replica_a, replica_b):
        await apply_one(replica_a, with_project(earlier("s1"), "p1"))
        monkeypatch.setattr(replay_module, "_cleanups", then_a_cleanup)
        await replay(replica_a, [earlier("s1")])
        (counts,) = await asyncio.gather(*cleanups)

    (node,) = await neo4j_store.get_nodes([FIGURE])
    assert node is None
    assert counts.deleted == 1
    assert "Code:s1-old" in await live_ids(neo4j_store, "s1")
