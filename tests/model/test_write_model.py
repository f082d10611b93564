"""Write semantics against the model (SPEC §3): random streams for two sessions sharing keys,
delivered in any order and duplicated, leave the graph the model describes, on every backend.

One store serves all examples of a test; each example's ids carry their own prefix, so examples
never see each other's nodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from hypothesis import HealthCheck, given, settings

from gateway.runtime.outbox import Outbox
from gateway.runtime.replay import apply_batch
from resolvers.errors import KeyOwnedByOtherSessionError
from resolvers.observe import APPLY, claimed_ids
from resolvers.records import Label
from tests.model.write_model import Goal, Run, Search, Upload, Version, WriteModel
from tests.model.write_streams import SESSIONS, answers, apply, delivered, graph, to_domain

if TYPE_CHECKING:
    from resolvers.store import GraphStore
    from tests.model.write_model import Event

settings.register_profile(
    "write-model",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile(
    "write-model-long", settings.get_profile("write-model"), max_examples=1000
)
PROFILE = settings.get_profile(
    "write-model-long" if os.environ.get("HYPOTHESIS_PROFILE") == "long" else "write-model"
)
_EXAMPLES = itertools.count()


async def _check(store: GraphStore, events: list[Event]) -> None:
    prefix = f"m{next(_EXAMPLES)}x"
    model = WriteModel()
    expected_accepted = [model.apply(event) for event in events]

    accepted = await apply(store, events, prefix)
    nodes, edges = await graph(store, prefix)

    assert accepted == expected_accepted
    assert nodes == model.nodes()
    assert edges == model.edges()


@PROFILE
@given(events=delivered())
async def test_any_delivery_leaves_the_graph_of_the_model(
    store: GraphStore, events: list[Event]
) -> None:
    await _check(store, events)


@PROFILE
@given(events=delivered())
async def test_a_burst_of_one_session_leaves_the_graph_of_the_model(
    store: GraphStore, events: list[Event]
) -> None:
    # Sent at once: one session's events keep the order they were sent in, whatever batches
    # a store makes of them (several in one transaction on Neo4j), so each answers as it
    # does sent alone, one after the other.
    own = [event for event in events if event.session == "A"]
    alone, burst = f"m{next(_EXAMPLES)}x", f"m{next(_EXAMPLES)}x"
    model = WriteModel()
    for event in own:
        model.apply(event)

    one_by_one = await answers(store, own, alone)
    at_once = await answers(store, own, burst, at_once=True)
    nodes, edges = await graph(store, burst)

    assert at_once == one_by_one
    assert nodes == model.nodes()
    assert edges == model.edges()


@PROFILE
@given(events=delivered())
async def test_bursts_of_several_sessions_at_once_each_leave_the_graph_of_the_model(
    store: GraphStore, events: list[Event]
) -> None:
    # Session B's events stored first, then session A's sent at once, in four copies of the
    # example at the same moment: a Neo4j store shares its transactions between the sessions,
    # and an A event that takes a key B owns is refused alone; the others apply, in order.
    first = [event for event in events if event.session == "B"]
    then = [event for event in events if event.session == "A"]
    model = WriteModel()
    for event in first:
        model.apply(event)
    expected = [model.apply(event) for event in then]
    prefixes = [f"m{next(_EXAMPLES)}x" for _ in range(4)]
    for prefix in prefixes:
        await apply(store, first, prefix)

    bursts = [apply(store, then, prefix, at_once=True) for prefix in prefixes]
    accepted = await asyncio.gather(*bursts)

    for prefix, answered in zip(prefixes, accepted, strict=True):
        nodes, edges = await graph(store, prefix)
        assert answered == expected
        assert nodes == model.nodes()
        assert edges == model.edges()


@PROFILE
@given(events=delivered())
async def test_a_stream_journalled_and_replayed_leaves_the_graph_of_the_model(
    store: GraphStore, events: list[Event]
) -> None:
    # Acknowledged queued (while Neo4j was away) in this order, then replayed: sessions side
    # by side, in batches, and a key both sessions claim goes to the one journalled first.
    prefix = f"m{next(_EXAMPLES)}x"
    model = WriteModel()
    for event in events:
        model.apply(event)

    with tempfile.TemporaryDirectory() as directory:
        outbox = await Outbox.open(Path(directory), fsync=False)
        try:
            for event in events:
                await outbox.append(to_domain(event, prefix))
            await outbox.drain(lambda chunk: apply_batch(store, chunk), sessions=2, batch=3)
        finally:
            await outbox.aclose()
    nodes, edges = await graph(store, prefix)

    assert nodes == model.nodes()
    assert edges == model.edges()


@PROFILE
@given(events=delivered())
async def test_an_event_creates_no_node_of_its_session_it_does_not_claim(
    store: GraphStore, events: list[Event]
) -> None:
    # The outbox keeps two sessions' events in order only where they claim a node in common.
    prefix = f"m{next(_EXAMPLES)}x"
    sessions = [f"{prefix}{session}" for session in SESSIONS]
    unclaimed: list[tuple[str, set[str]]] = []
    for event in events:
        domain = to_domain(event, prefix)
        before = {i for session in sessions for i in await store.session_node_ids(session)}
        with contextlib.suppress(KeyOwnedByOtherSessionError):
            await APPLY[type(domain)](store, domain)
        created = {
            node.id
            for node in await store.get_nodes(await store.session_node_ids(domain.session_id))
            if node is not None and node.id not in before and node.label is not Label.PAPER
        }
        if not created <= set(claimed_ids(domain)):
            unclaimed.append((domain.kind, created - set(claimed_ids(domain))))

    assert unclaimed == []


async def test_a_shared_execution_id_is_refused_and_a_shared_input_allowed(
    store: GraphStore,
) -> None:
    events: list[Event] = [
        Run("B", "x1", 20, "completed", reads=(("f0", 1),)),
        Goal("A"),
        Run("A", "x0", 10, "completed", (Version("f0", 1, "f0-v1.png"),)),
        Run("B", "x0", 30, "failed"),
        Search("A", "q0", 5),
        Upload("A", "a.csv", 1, 10),
    ]

    await _check(store, events)


async def test_versions_of_one_artifact_in_two_sessions_keep_two_lineages(
    store: GraphStore,
) -> None:
    events: list[Event] = [
        Run("B", "x1", 20, "completed", (Version("f0", 2, "f0-v2.png"),)),
        Run("A", "x0", 10, "completed", (Version("f0", 1, "f0-v1.png"),)),
        Run("A", "x2", 30, "completed", (Version("f0", 3, "f0-v3.png"),)),
        Run("B", "x3", 40, "completed", (Version("f0", 4, "f0-v4.png"),)),
    ]

    await _check(store, events)
