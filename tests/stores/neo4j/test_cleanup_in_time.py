"""A cleanup through one replica while another journals, against the same events in time.

Random streams of two sessions (``tests.model.write_streams``: executions, artifact versions
and their inputs, B's also from A's Artifacts, searches, uploads), their Artifacts in a project
or none. Some are
written before the outage; the rest are journalled by replica A (acknowledged, so received
before the cleanup) and replayed after a cleanup made through replica B. The graph must be the
one the same events give in time, all of them before the cleanup, on an embedded store: what
the cleanup removed stays removed, what it kept (a session's Artifacts, soft-marked) is kept.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gateway.live.bus import EventBus
from gateway.live.publishing import PublishingStore
from gateway.runtime.replay import apply_one
from gateway.stores.sqlite.store import SqliteStore
from resolvers.cleanup import cleanup_project, cleanup_session
from resolvers.errors import KeyOwnedByOtherSessionError
from resolvers.events import ExecutionObserved, ToolCallObserved
from resolvers.observe import APPLY
from tests.model.write_model import Run, Version
from tests.model.write_streams import SESSIONS, delivered, to_domain
from tests.stores.neo4j.conftest import open_store

if TYPE_CHECKING:
    from gateway.stores.neo4j import Neo4jStore
    from resolvers.events import Event
    from resolvers.store import GraphStore
    from tests.model.write_model import Event as ModelEvent

_EXAMPLES = itertools.count()
ARTIFACTS = ("f0", "f1")  # the model's artifact names

Cleanup = tuple[str, tuple[str, ...]]  # ("session", (S,)) or ("project", listed sessions)

CLEANUPS = st.sampled_from(
    [
        ("session", ("A",)),
        ("session", ("B",)),
        ("project", ()),
        ("project", ("A",)),
        ("project", ("A", "B")),
    ]
)


def own_keys(event: Event, projects: dict[str, str | None], prefix: str) -> Event:
    """``event`` with the keys it claims made its session's own, and each Artifact it makes in
    the project ``projects`` gives its name. Its inputs stay session A's Artifacts, so that B
    reads A's across sessions. (Two sessions that claim one key are not compared here: in time
    the first holds it until a cleanup; a replay after the cleanup lets the other take it.)"""
    own = event.session_id[-1]
    if isinstance(event, ToolCallObserved):
        return replace(event, task_id=event.task_id + own)
    if not isinstance(event, ExecutionObserved):
        return event
    made = tuple(
        replace(
            a,
            artifact_id=a.artifact_id + own,
            project_id=projects[a.artifact_id.removeprefix(prefix)],
            input_artifact_versions=tuple(
                replace(ref, artifact_id=ref.artifact_id + "A") for ref in a.input_artifact_versions
            ),
        )
        for a in event.produced_artifacts
    )
    return replace(event, execution_id=event.execution_id + own, produced_artifacts=made)


async def send(store: GraphStore, event: Event) -> None:
    with contextlib.suppress(KeyOwnedByOtherSessionError):  # refused in time too
        await APPLY[type(event)](store, event)


async def clean(store: GraphStore, cleanup: Cleanup, prefix: str) -> None:
    kind, sessions = cleanup
    if kind == "session":
        await cleanup_session(store, f"{prefix}{sessions[0]}")
    else:
        await cleanup_project(store, f"{prefix}p", [f"{prefix}{s}" for s in sessions])


async def stored(store: GraphStore, prefix: str) -> tuple[set[tuple[str, bool]], set[str]]:
    """The example's nodes (id, soft-marked) and edges, ids without ``prefix``."""
    ids = [i for s in SESSIONS for i in await store.session_node_ids(f"{prefix}{s}")]
    ids += [a.id for a in await store.project_artifacts(f"{prefix}p")]
    ids = list(dict.fromkeys(ids))
    nodes = {
        (node.id.replace(prefix, ""), node.deleted)
        for node in await store.get_nodes(ids)
        if node is not None
    }
    edges = {
        f"{edge.type.value} {edge.source} {edge.target}".replace(prefix, "")
        for edge in await store.edges_among(ids)
    }
    return nodes, edges


@settings(
    max_examples=300 if os.environ.get("HYPOTHESIS_PROFILE") == "long" else 25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    events=delivered(),
    written=st.integers(0, 10),
    projects=st.fixed_dictionaries({a: st.sampled_from(["p", None]) for a in ARTIFACTS}),
    cleanup=CLEANUPS,
)
# Two versions queued, replayed after the cleanup: linked as in time, then soft-marked.
@example(
    events=[
        Run("A", "x0", t, "running", (Version("f0", t + 1, f"f0-v{t + 1}.png"),)) for t in (0, 1)
    ],
    written=0,
    projects={"f0": "p", "f1": "p"},
    cleanup=("session", ("A",)),
)
async def test_a_replay_after_a_cleanup_leaves_the_graph_of_the_events_in_time(
    neo4j_store: Neo4jStore,
    connection: dict[str, str],
    events: list[ModelEvent],
    written: int,
    projects: dict[str, str | None],
    cleanup: Cleanup,
) -> None:
    prefix = f"c{next(_EXAMPLES)}x"
    named = {a: f"{prefix}{p}" if p else None for a, p in projects.items()}

    def domain(event: ModelEvent) -> Event:
        return own_keys(to_domain(event, prefix), named, prefix)

    before, queued = [domain(e) for e in events[:written]], [domain(e) for e in events[written:]]

    with tempfile.TemporaryDirectory() as directory:  # the events in time, then the cleanup
        in_time = await SqliteStore.open(Path(directory) / "graph", fsync=False)
        try:
            for event in [*before, *queued]:
                await send(in_time, event)
            await clean(in_time, cleanup, prefix)
            expected = await stored(in_time, prefix)
        finally:
            await in_time.aclose()

    replica_a = PublishingStore(neo4j_store, EventBus())
    replica_b = PublishingStore(await open_store(connection), EventBus())
    try:
        for event in before:
            await send(replica_a, event)
        await clean(replica_b, cleanup, prefix)
        for event in queued:  # A's journal, in the order it was acknowledged
            await apply_one(replica_a, event)
    finally:
        await replica_b.aclose()

    assert await stored(neo4j_store, prefix) == expected
