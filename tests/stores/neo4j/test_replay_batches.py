"""On Neo4j a replayed batch within its time is one transaction: one change-feed entry for all
its events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.live.bus import EventBus
from gateway.live.publishing import PublishingStore
from gateway.runtime import replay
from gateway.runtime.replay import apply_batch
from tests.test_replay import events

if TYPE_CHECKING:
    import pytest

    from gateway.stores.neo4j import Neo4jStore


async def test_a_batch_commits_once(
    neo4j_store: Neo4jStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay, "BATCH_SECONDS", 3600.0)  # however slow the server is
    published = PublishingStore(neo4j_store, EventBus())

    await apply_batch(published, events("s1"))
    await apply_batch(published, events("s2")[:1])

    assert await neo4j_store.feed_heads(["s1", "s2"]) == {"s1": 1, "s2": 1}
    assert (
        len(await neo4j_store.session_node_ids("s1")) == 1 + 3 * 3
    )  # the goal, 3 calls, codes, figures
