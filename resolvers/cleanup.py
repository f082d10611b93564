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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from resolvers.errors import InvalidInputError, StoreUnavailableError
from resolvers.events import ArtifactDeclared, ExecutionObserved
from resolvers.observe import APPLY, artifact_ids
from resolvers.records import Label, utc_now
from resolvers.store import CleanupLedger
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
            await tx.note_cleanup(session_id, utc_now())
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
    async with store.transaction() as tx:
        if isinstance(tx, CleanupLedger):
            at = utc_now()
            for session_id in sorted(set(session_ids)):  # the order writers lock sessions in
                await tx.note_cleanup(session_id, at)
            await tx.note_project_cleanup(project_id, at)  # after sessions, as a replay does
        for session_id in dict.fromkeys(session_ids):
            for node_id in await tx.session_node_ids(session_id):
                deleted += await tx.delete_node(node_id)
        for artifact in await tx.project_artifacts(project_id):
            deleted += await tx.delete_node(artifact.id)
    return CleanupCounts(0, deleted)


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
    if isinstance(event, ExecutionObserved):
        artifacts = event.produced_artifacts
    elif isinstance(event, ArtifactDeclared):
        artifacts = (event.artifact,)
    else:
        return {}
    return {
        artifact_id: project
        for artifact_id, artifact in zip(artifact_ids(artifacts), artifacts, strict=True)
        if (project := artifact.project_id)
    }


async def apply_after_cleanups(
    store: GraphStore,
    tx: GraphTransaction,
    event: Event,
    session_cleaned: datetime | None,
    projects_cleaned: Mapping[str, datetime],
) -> list[str] | None:
    """Apply ``event`` on ``store`` (whose writes go to ``tx``) as if it had come before the
    cleanups made since it was received (``CleanupLedger``: noted by another replica, say,
    while this one journalled it): ``None``, nothing applied, when its session was cleaned up
    since; else the Artifacts it creates in, or moves into, a project cleaned up since, which
    are removed again. Applied now whole, it would undo the cleanup. An Artifact made after the
    cleanup stays: this event only touches it."""
    received = event.received_at
    if session_cleaned is not None and received <= session_cleaned:
        return None
    doomed = {
        artifact: project
        for artifact, project in project_artifacts_of(event).items()
        if project in projects_cleaned and received <= projects_cleaned[project]
    }
    if doomed:
        stored = zip(doomed, await tx.get_nodes(list(doomed)), strict=True)
        doomed = {
            artifact: doomed[artifact]
            for artifact, node in stored
            if node is None or node.created_at <= projects_cleaned[doomed[artifact]]
        }
    await APPLY[type(event)](store, event)
    removed: list[str] = []
    written = await tx.get_nodes(list(doomed)) if doomed else []
    for (artifact, project), node in zip(doomed.items(), written, strict=True):
        # In time, the event would have put it in the project the cleanup emptied.
        if node is not None and node.get("project_id") == project:
            await tx.delete_node(artifact)
            removed.append(artifact)
    return removed
