"""Cleanup use cases: mirror session and project deletion (SPEC §3.6).

A deleted session keeps its Artifacts, soft-marked (``deleted_session``), because later
sessions may still read them as inputs; every other node of the session is deleted with its
edges. A deleted project removes its sessions' nodes and its Artifacts physically. A store
that keeps a ledger of cleanups (``resolvers.store.CleanupLedger``) notes each session's and
each project's. A cleanup that meets a deadlock with concurrent writers runs again.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final

from resolvers.errors import InvalidInputError, StoreUnavailableError
from resolvers.events import (
    ArtifactDeclared,
    ArtifactVersionRef,
    ExecutionObserved,
    ProducedArtifact,
)
from resolvers.observe import APPLY, artifact_ids, claimed_ids
from resolvers.records import Label, artifact_key, node_id, split_node_id, utc_now
from resolvers.store import CleanupLedger, SessionCleanups
from resolvers.validate import check_text

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping
    from datetime import datetime

    from resolvers.events import Event
    from resolvers.store import GraphStore, GraphTransaction

ATTEMPTS: Final = 5
RETRY_PAUSE: Final = 0.05  # seconds, times the attempt number, jittered


@dataclass(frozen=True, slots=True)
class CleanupCounts:
    marked: int
    deleted: int


async def cleanup_session(store: GraphStore, session_id: str) -> CleanupCounts:
    _check_id("sessionId", session_id)
    return await _retried(lambda: _cleanup_session(store, session_id))


async def _cleanup_session(store: GraphStore, session_id: str) -> CleanupCounts:
    marked = deleted = 0
    async with store.transaction(session_id) as tx:
        if isinstance(tx, CleanupLedger):
            await tx.note_cleanup(session_id, utc_now(), emptied=False)
        for node in await tx.get_nodes(await tx.session_node_ids(session_id)):
            if node is None:
                continue
            if node.label is Label.ARTIFACT:
                if not node.deleted:
                    await tx.put_node(node.with_props(deleted_session=True))
                    marked += 1
            elif await tx.delete_node(node.id):
                deleted += 1
    return CleanupCounts(marked, deleted)


async def cleanup_project(
    store: GraphStore, project_id: str, session_ids: list[str]
) -> CleanupCounts:
    _check_id("projectId", project_id)
    for index, session_id in enumerate(session_ids):
        _check_id(f"sessionIds[{index}]", session_id)
    return await _retried(lambda: _cleanup_project(store, project_id, session_ids))


async def _cleanup_project(
    store: GraphStore, project_id: str, session_ids: list[str]
) -> CleanupCounts:
    deleted = 0
    artifacts: list[str] = []
    async with store.transaction() as tx:
        ledger = tx if isinstance(tx, CleanupLedger) else None
        at = utc_now()
        if ledger:
            for session_id in sorted(set(session_ids)):  # the order writers lock sessions in
                await ledger.note_cleanup(session_id, at, emptied=True)
            await ledger.note_project_cleanup(project_id, at)  # after sessions, as a replay does
        for session_id in dict.fromkeys(session_ids):
            for node_id in await tx.session_node_ids(session_id):
                if await tx.delete_node(node_id):
                    deleted += 1
                    if _is_artifact(node_id):
                        artifacts.append(node_id)
        for artifact in await tx.project_artifacts(project_id):
            if await tx.delete_node(artifact.id):
                deleted += 1
                artifacts.append(artifact.id)
        if ledger:
            await ledger.note_artifacts_cleaned(artifacts, at)
    return CleanupCounts(0, deleted)


def _is_artifact(node_id: str) -> bool:
    parsed = split_node_id(node_id)
    return parsed is not None and parsed[0] is Label.ARTIFACT


async def _retried(run: Callable[[], Awaitable[CleanupCounts]]) -> CleanupCounts:
    """``run`` again, in a new transaction, when the store gave way to concurrent writers (a
    deadlock, a lock wait: ``transient``; the transaction was rolled back), a few times with a
    growing pause: a cleanup deletes across many nodes, which writers of its sessions and
    another replica's replay lock in other orders."""
    attempt = 1
    while True:
        try:
            return await run()
        except StoreUnavailableError as exc:
            if not exc.transient or attempt == ATTEMPTS:
                raise
        await asyncio.sleep(random.uniform(0.5, 1.5) * RETRY_PAUSE * attempt)
        attempt += 1


def _check_id(field: str, value: str) -> None:
    if not value.strip():
        raise InvalidInputError(field, "must not be empty")
    check_text("id", value, field)


def project_artifacts_of(event: Event) -> dict[str, str]:
    """The ids of the Artifacts ``event`` writes in a project, and their project."""
    return {
        artifact_id: project
        for artifact_id, artifact in _written(event).items()
        if (project := artifact.project_id)
    }


def artifacts_named_by(event: Event) -> set[str]:
    """The ids of the Artifacts ``event`` writes or names as inputs."""
    written = _written(event)
    return set(written).union(*(_inputs(artifact) for artifact in written.values()))


def _written(event: Event) -> dict[str, ProducedArtifact]:
    if isinstance(event, ExecutionObserved):
        artifacts = event.produced_artifacts
    elif isinstance(event, ArtifactDeclared):
        artifacts = (event.artifact,)
    else:
        return {}
    return dict(zip(artifact_ids(artifacts), artifacts, strict=True))


def _inputs(artifact: ProducedArtifact) -> dict[str, ArtifactVersionRef]:
    return {
        node_id(Label.ARTIFACT, artifact_key(ref.artifact_id, ref.version)): ref
        for ref in artifact.input_artifact_versions
    }


@dataclass(frozen=True, slots=True)
class Cleanups:
    """What was cleaned up, and when, of what a batch of queued events names
    (``CleanupLedger``)."""

    session: SessionCleanups = field(default_factory=SessionCleanups)
    projects: Mapping[str, datetime] = field(default_factory=dict)
    artifacts: Mapping[str, datetime] = field(default_factory=dict)  # tombstones


async def apply_after_cleanups(
    store: GraphStore, tx: GraphTransaction, event: Event, cleanups: Cleanups
) -> dict[str, datetime] | None:
    """Apply ``event`` on ``store`` (whose writes go to ``tx``) as if it had come before the
    cleanups made since it was received (``CleanupLedger``: noted by another replica, say,
    while this one journalled it); applied now whole, it would undo them. ``None`` when its
    session was cleaned up since: nothing of it is applied but, after a ``cleanupSession``, the
    Artifacts it makes, soft-marked (``_as_cleaned``). Else, of the Artifacts it writes, those a
    cleanup since deleted (a tombstone) or would have deleted (it puts them in a project
    cleaned up since) are removed again, and returned with that cleanup's time; one made again
    after that cleanup is left alone (this event's write went to the one deleted), and so is an
    input edge to an Artifact deleted since (it went with the Artifact)."""
    received = event.received_at
    emptied, cleaned = cleanups.session.emptied, cleanups.session.at
    if emptied is not None and received <= emptied:
        return None
    if cleaned is not None and received <= cleaned:
        await _as_cleaned(store, tx, event)
        return None
    doomed: dict[str, tuple[datetime, str | None]] = {}  # id -> (cleaned at, project or None)
    for artifact, project in project_artifacts_of(event).items():
        at = cleanups.projects.get(project)
        if at is not None and received <= at:
            doomed[artifact] = (at, project)
    for artifact in _written(event):
        deleted = cleanups.artifacts.get(artifact)
        if deleted is not None and received <= deleted:  # gone, whatever project it names
            doomed[artifact] = (max(deleted, doomed.get(artifact, (deleted, None))[0]), None)
    stored = await tx.get_nodes(list(doomed)) if doomed else []
    remade = {
        artifact
        for (artifact, (at, _)), node in zip(doomed.items(), stored, strict=True)
        if node is not None and node.created_at > at
    }
    stale = remade | {
        artifact
        for artifact, at in cleanups.artifacts.items()
        if received <= at and artifact not in doomed
    }
    await APPLY[type(event)](store, _without(event, remade, stale))
    removed: dict[str, datetime] = {}
    kept = [artifact for artifact in doomed if artifact not in remade]
    written = await tx.get_nodes(kept) if kept else []
    for artifact, node in zip(kept, written, strict=True):
        at, into = doomed[artifact]
        # In time, the event wrote it before the cleanup deleted it, or put it in the
        # project the cleanup emptied (unless it stays in the one it is already in).
        if node is not None and (into is None or node.get("project_id") == into):
            await tx.delete_node(artifact)
            removed[artifact] = at
            if isinstance(tx, CleanupLedger):
                await tx.note_artifacts_cleaned([artifact], at)
    return removed


async def _as_cleaned(store: GraphStore, tx: GraphTransaction, event: Event) -> None:
    """Apply ``event``, of a session cleaned up since, as that cleanup left it: the nodes it
    makes deleted but its Artifacts, soft-marked (``cleanup_session``). Nothing of it when it
    writes a node of its own that the session made again since (the write went to the one
    deleted): whatever the cleanup left of it is there already."""
    session = event.session_id
    before = set(await tx.session_node_ids(session))  # soft-marked Artifacts, and since
    marked = await tx.get_nodes([i for i in claimed_ids(event) if i in before])
    for node in marked:
        if node is not None and not (node.label is Label.ARTIFACT and node.deleted):
            return
    await APPLY[type(event)](store, event)
    # Those it made, and the soft-marked Artifacts it made again (which revives them).
    made = [i for i in await tx.session_node_ids(session) if i not in before]
    made += [node.id for node in marked if node is not None]
    for node in await tx.get_nodes(made):
        if node is None:
            continue
        if node.label is not Label.ARTIFACT:
            await tx.delete_node(node.id)
        elif not node.deleted:
            await tx.put_node(node.with_props(deleted_session=True))


def _without(event: Event, remade: set[str], stale: set[str]) -> Event:
    """``event`` without the Artifacts ``remade`` and the inputs ``stale``."""
    if not isinstance(event, ExecutionObserved) or not (remade or stale):
        return event
    artifacts = tuple(
        replace(
            artifact,
            input_artifact_versions=tuple(
                ref for input_id, ref in _inputs(artifact).items() if input_id not in stale
            ),
        )
        for artifact_id, artifact in _written(event).items()
        if artifact_id not in remade
    )
    return replace(event, produced_artifacts=artifacts)
