"""Observe use cases: mirror execution events into the graph (SPEC §3).

Every function applies one event in one transaction, idempotently and order-independently:
a re-sent event changes nothing, and events arriving in any order converge to the graph of the
in-order stream (late goals, scopes, versions and inputs are attached when they arrive).
Which observation's facts a node keeps is decided by ``resolvers.merging``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from resolvers.errors import KeyOwnedByOtherSessionError
from resolvers.events import (
    ArtifactDeclared,
    Event,
    ExecutionObserved,
    FirstMessageObserved,
    PaperProduct,
    ProducedArtifact,
    SubagentObserved,
    ToolCallObserved,
    UploadFileObserved,
)
from resolvers.links import normalize_link
from resolvers.merging import (
    TERMINAL_STATUSES,
    artifact_rank,
    end_rank,
    goal_rank,
    observation_rank,
    paper_metadata,
    pick_fields,
    rank_text,
    start_rank,
    wins,
)
from resolvers.plan import PlanBuilder
from resolvers.records import (
    SUBAGENT_TASK_TYPE,
    Direction,
    EdgeType,
    Label,
    NodeRecord,
    artifact_key,
    node_id,
)
from resolvers.steps import (
    attach_main_head,
    attach_scope_head,
    child_key,
    place_step,
    scope_key,
    unlink_step,
)
from resolvers.validate import RejectedRecord, validate_event
from resolvers.writes import Writer, iso

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

    from resolvers.plan import ReadPlan
    from resolvers.store import GraphStore, GraphTransaction

E = TypeVar("E", bound=Event)

SUBAGENT_FALLBACK_SUMMARY = "Subagent completed without a text response."


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What one event wrote: the number of nodes and edges created or changed, every node it
    touched (changed or not), and the records of a batch left out (``accept_products``)."""

    written: int
    node_ids: list[str]
    rejected: tuple[RejectedRecord, ...] = ()


async def run_write(
    store: GraphStore,
    event: E,
    body: Callable[[Writer, E], Awaitable[None]],
    plan: Callable[[E], ReadPlan] | None = None,
) -> WriteResult:
    """Validate ``event`` and apply ``body`` to it in one transaction (``GraphStore.write``),
    after loading what ``plan`` says the body reads. Every write is validated here, and only
    here, before the store is asked for anything. The store may run it again in a new
    transaction (a conflict with concurrent writers): only the last run counts."""
    validate_event(event)
    read_plan = plan(event) if plan is not None else None

    async def work(tx: GraphTransaction) -> WriteResult:
        if read_plan is not None:
            await tx.prefetch(read_plan)
        writer = Writer(tx, event.received_at)
        await body(writer, event)
        return WriteResult(writer.written, list(writer.touched))

    return await store.write(event.session_id, work)


def normalise_status(status: str) -> str:
    status = status.strip().lower()
    return "completed" if status == "succeeded" else status


# --- uploads and the goal ------------------------------------------------------------------


async def observe_upload_file(store: GraphStore, event: UploadFileObserved) -> WriteResult:
    return await run_write(store, event, _upload, _upload_plan)


def _upload_plan(e: UploadFileObserved) -> ReadPlan:
    plan = PlanBuilder(e.session_id).node(node_id(Label.SOURCE_FILE, e.file_id))
    return plan.listing(Label.RESEARCH_GOAL).build()


async def _upload(writer: Writer, e: UploadFileObserved) -> None:
    fields = {
        "name": e.name,
        "path": e.path,
        "media_type": e.media_type,
        "size": e.size,
        "content_hash": e.content_hash,
        "uploaded_at": iso(e.uploaded_at) if e.uploaded_at else None,
    }
    rank = rank_text(str(fields["uploaded_at"] or ""), fields=fields)
    source, _ = await writer.merge_node(
        Label.SOURCE_FILE,
        e.file_id,
        e.session_id,
        create={
            **pick_fields(None, fields, rank, origins="fields_from"),
            "file_id": e.file_id,
            "origin": "user_upload",
        },
        update=lambda old: pick_fields(old.props, fields, rank, origins="fields_from"),
    )
    for goal in await _goals(writer, e.session_id):
        await writer.connect(EdgeType.FEEDS, source.id, goal)


async def observe_session_first_message(
    store: GraphStore, event: FirstMessageObserved
) -> WriteResult:
    return await run_write(store, event, _first_message, _first_message_plan)


def _first_message_plan(e: FirstMessageObserved) -> ReadPlan:
    plan = PlanBuilder(e.session_id).node(node_id(Label.RESEARCH_GOAL, e.goal_id))
    return plan.listing(Label.SOURCE_FILE).chain_start(None).build()


async def _first_message(writer: Writer, e: FirstMessageObserved) -> None:
    fields = {
        "core_objective": e.core_objective,
        "domain": e.domain,
        "topic_scope": list(e.topic_scope),
        "sent_at": iso(e.sent_at) if e.sent_at else None,
    }
    rank = goal_rank(fields)
    goal, created = await writer.merge_node(
        Label.RESEARCH_GOAL,
        e.goal_id,
        e.session_id,
        create={"goal_id": e.goal_id, **fields},
        update=lambda old: fields if wins(rank, goal_rank(old.props)) else {},
        erase=True,
    )
    if not created:
        return
    offset = 0
    while True:
        page = await writer.tx.list_nodes(
            labels=[Label.SOURCE_FILE], session_id=e.session_id, limit=500, offset=offset
        )
        for source in page.items:
            await writer.connect(EdgeType.FEEDS, source.id, goal.id)
        offset += len(page.items)
        if not page.truncated:
            break
    await attach_main_head(writer, goal)


async def _goals(writer: Writer, session_id: str) -> list[str]:
    page = await writer.tx.list_nodes(labels=[Label.RESEARCH_GOAL], session_id=session_id, limit=16)
    return [goal.id for goal in page.items]


# --- executions and artifacts ---------------------------------------------------------------


async def observe_execution(store: GraphStore, event: ExecutionObserved) -> WriteResult:
    return await run_write(store, event, _execution, _execution_plan)


def _execution_plan(e: ExecutionObserved) -> ReadPlan:
    parent = e.parent_subagent_id
    key = _execution_key(e)
    scope = scope_key(parent) if parent else None
    step, code = node_id(Label.TOOL_CALL, key), node_id(Label.CODE, e.execution_id)
    plan = PlanBuilder(e.session_id).step(step, scope, iso(e.finished_at)).node(code)
    plan.adjacency(code, EdgeType.PRODUCES, Direction.IN)
    for artifact in e.produced_artifacts:
        _artifact_plan(plan, artifact)
    plan.node(*(node_id(Label.SOURCE_FILE, file_id) for file_id in e.input_source_files))
    return plan.build()


def _execution_key(e: ExecutionObserved) -> str:
    """The key of the execution's ToolCall step."""
    parent = e.parent_subagent_id
    return child_key(parent, e.execution_id) if parent else f"subtask:{e.execution_id}"


def _artifact_plan(plan: PlanBuilder, artifact: ProducedArtifact) -> None:
    plan.node(node_id(Label.ARTIFACT, artifact_key(artifact.artifact_id, artifact.version)))
    plan.versions(artifact.artifact_id)
    for ref in artifact.input_artifact_versions:
        plan.node(node_id(Label.ARTIFACT, artifact_key(ref.artifact_id, ref.version)))


async def _execution(writer: Writer, e: ExecutionObserved) -> None:
    status = normalise_status(e.status)
    parent = e.parent_subagent_id
    key = _execution_key(e)
    finished = iso(e.finished_at)
    fields = _code_fields(e, status)
    rank = observation_rank(fields)
    (stored,) = await writer.tx.get_nodes([node_id(Label.CODE, e.execution_id)])
    newer = stored is None or wins(rank, observation_rank(stored.props))
    call_fields = {
        "tool_type": "execution" if parent else e.tool_type,
        "tool_name": e.tool_name or e.tool,
        "started_at": iso(e.started_at),
        "parent_subtask_id": scope_key(parent) if parent else None,
        "chain_at": finished,
        "status": status,
        "finished_at": finished,
        "turn_id": e.turn_id,
    }
    call = await _other_scope(
        writer, e, key, stored, (rank, call_fields["parent_subtask_id"] or "")
    )
    if call is None:
        update = _ranked(call_fields, call=False)
        call, _ = await _merge_step(writer, Label.TOOL_CALL, key, e.session_id, call_fields, update)
    code, _ = await writer.merge_node(
        Label.CODE,
        e.execution_id,
        e.session_id,
        create={"code_id": e.execution_id, **fields},
        update=fields if newer else None,
        erase=True,
    )
    await writer.connect(EdgeType.PRODUCES, call.id, code.id)
    for artifact in e.produced_artifacts:
        await record_artifact(writer, e.session_id, code.id, artifact, produced_at=finished)
    for file_id in e.input_source_files:
        await writer.connect(EdgeType.INPUT, node_id(Label.SOURCE_FILE, file_id), code.id)


async def _other_scope(
    writer: Writer,
    e: ExecutionObserved,
    key: str,
    stored: NodeRecord | None,
    rank: tuple[tuple[bool, str, str], str],
) -> NodeRecord | None:
    """The step of an execution observed before in another scope (top level or another
    subagent), when it stays there; ``None`` when this observation's step is to be merged. One
    execution has one step (SPEC §3.9: a re-observed step moves): the observation ranked
    higher (``rank``: ``observation_rank``, then the scope's key, so that any order gives one
    answer) places it, and the step in the other scope is unlinked from its chain and
    deleted (kept when it is also a tool call's, which produced something else: a subagent's
    steps share their keys)."""
    code = node_id(Label.CODE, e.execution_id)
    step = node_id(Label.TOOL_CALL, key)
    producers = await writer.tx.expand([code], EdgeType.PRODUCES, Direction.IN)
    others = [
        node
        for node in await writer.tx.get_nodes([p.source for p in producers if p.source != step])
        if node is not None and node.label is Label.TOOL_CALL and node.session_id == e.session_id
    ]
    if not others or stored is None:
        return None
    placed = (observation_rank(stored.props), others[0].get("parent_subtask_id") or "")
    if not wins(rank, placed):
        return others[0]
    for other in others:
        await writer.disconnect(EdgeType.PRODUCES, other.id, code)
        if not await writer.tx.expand([other.id], EdgeType.PRODUCES, Direction.OUT):
            await unlink_step(writer, other)  # the execution's alone: it goes
            await writer.tx.delete_node(other.id)
        elif (aside := _call_aside(other.props)) is not None:  # a tool call's: given back
            restored = other.with_props(**aside, **{CALL_OBSERVATION: None})
            await writer.replace_node(restored)
            await place_step(writer, restored, other)
    return None


def _ranked(
    fields: Mapping[str, Any], *, call: bool, keep_time: bool = False
) -> Callable[[NodeRecord], Mapping[str, Any]]:
    """The update of a stored step by an observation's ``fields``: all of them when the
    observation ranks higher than the one stored (``observation_rank``), else none. A step's
    key can be observed by an execution and by a tool call (a subagent's steps share
    ``<scope>:exec:<ref>``; a ``taskId`` may be ``subtask:<executionId>``): whichever ranks
    higher holds it, in any order (SPEC §3.9). ``keep_time``: the observation's time is only
    when it arrived (a search without ``retrievedAt``), so a step already stored keeps its
    own if it was stored by such a search too (``result_count`` and no ``retrieved_at``):
    sent again, the search changes nothing.

    ``call``: the observation is a tool call's. While an execution's observation holds the
    step, the highest-ranked tool call's is kept aside (``CALL_OBSERVATION``), so that the step
    can be given back to it if the execution moves to another scope (``_other_scope``)."""

    def update(old: NodeRecord) -> Mapping[str, Any]:
        own = _timed(dict.fromkeys(_STEP_FIELDS) | dict(fields), old.props, keep_time)
        held_by_call = old.get("result_count") is not None
        if wins(observation_rank(own), observation_rank(old.props)):
            if call:
                return own | {CALL_OBSERVATION: None}
            aside = (
                json.dumps(_step_fields(old.props)) if held_by_call else old.get(CALL_OBSERVATION)
            )
            return own | {CALL_OBSERVATION: aside}
        if call and not held_by_call:
            aside = _call_aside(old.props)
            if aside is not None:
                own = _timed(own, aside, keep_time)
            if aside is None or wins(observation_rank(own), observation_rank(aside)):
                return {CALL_OBSERVATION: json.dumps(own)}
        return {}

    return update


def _timed(own: dict[str, Any], stored: Mapping[str, Any], keep_time: bool) -> dict[str, Any]:
    """``own`` with the times of ``stored`` when both are searches without ``retrievedAt``."""
    if keep_time and stored.get("result_count") is not None and not stored.get("retrieved_at"):
        return own | {name: stored.get(name) for name in ("finished_at", "chain_at")}
    return own


def _step_fields(props: Mapping[str, Any]) -> dict[str, Any]:
    return {name: props.get(name) for name in _STEP_FIELDS}


def _call_aside(props: Mapping[str, Any]) -> dict[str, Any] | None:
    """The tool call's observation kept aside on a step, ``None`` when there is none (or
    what is stored is not one: a step's fields as a JSON object)."""
    try:
        aside = json.loads(props.get(CALL_OBSERVATION) or "null")
    except (TypeError, ValueError):
        return None
    return _step_fields(aside) if isinstance(aside, dict) else None


# A step an execution's observation holds keeps the tool call's it replaced (or that ranked
# lower) here, as JSON text: a property like any other, so every backend stores it.
CALL_OBSERVATION = "call_observation"


# The fields of a step that an execution or a tool call observes: one that ranks higher
# replaces them all (those it does not have are erased), whichever kind stored the others.
_STEP_FIELDS = (
    "tool_type",
    "tool_name",
    "source",
    "started_at",
    "finished_at",
    "retrieved_at",
    "parent_subtask_id",
    "chain_at",
    "status",
    "result_count",
    "turn_id",
)


async def _merge_step(
    writer: Writer,
    label: Label,
    key: str,
    session_id: str,
    fields: Mapping[str, Any],
    newer: bool | Callable[[NodeRecord], Mapping[str, Any]],
) -> tuple[NodeRecord, bool]:
    """Merge a step (``newer``: whether ``fields`` replace the stored ones, or the update to
    apply) and keep its chain position (``resolvers.steps.place_step``).

    A step inside a subagent's scope (``parent_subtask_id``) joins that scope's chain: a scope
    another session created, or whose steps named it first while it was not observed yet, is
    refused (``KeyOwnedByOtherSessionError``), as any write that would change that session's
    graph. A scope nobody observed or named yet accepts it (order-independence), and the step
    claims it for its session (``Writer.claim_scope``)."""
    scope = fields.get("parent_subtask_id")
    task: NodeRecord | None = None
    if scope:
        scope_id = node_id(Label.TASK, scope)
        (task,) = await writer.tx.get_nodes([scope_id])
        owner = task.session_id if task is not None else await writer.scope_claimant(scope_id)
        if owner is not None and owner != session_id:
            raise KeyOwnedByOtherSessionError(scope_id, scope, owner, session_id)
    before: list[NodeRecord] = []

    def update(old: NodeRecord) -> Mapping[str, Any]:
        before.append(old)
        if callable(newer):
            return newer(old)
        return fields if newer else {}

    step, created = await writer.merge_node(
        label, key, session_id, create=fields, update=update, step=True, erase=True
    )
    if scope and task is None and created:
        await writer.claim_scope(node_id(Label.TASK, scope), step.id)
    await place_step(writer, step, before[0] if before else None)
    return step, created


async def _set(writer: Writer, node: NodeRecord, **props: Any) -> NodeRecord:
    updated = node.with_props(**props)
    if updated != node:
        await writer.replace_node(updated)
    return updated


def _code_fields(e: ExecutionObserved, status: str) -> dict[str, Any]:
    return {
        "tool": e.tool,
        "language": e.language,
        "code_hash": e.code_hash,
        "exit_code": e.exit_code,
        "status": status,
        "started_at": iso(e.started_at),
        "finished_at": iso(e.finished_at),
        "stdout_hash": e.stdout_hash,
        "stderr_hash": e.stderr_hash,
        "env_hash": e.env_hash,
        "turn_id": e.turn_id,
    }


@dataclass(frozen=True, slots=True)
class ArtifactResult:
    """The declared artifact version as stored, and what the declare wrote."""

    artifact: NodeRecord
    written: int


async def declare_artifact(store: GraphStore, event: ArtifactDeclared) -> ArtifactResult:
    found: list[NodeRecord] = []

    async def body(writer: Writer, e: ArtifactDeclared) -> None:
        found.append(await _declare_artifact(writer, e))

    result = await run_write(store, event, body, _declare_artifact_plan)
    return ArtifactResult(found[-1], result.written)  # the last run's (it may be retried)


def _declare_artifact_plan(e: ArtifactDeclared) -> ReadPlan:
    plan = PlanBuilder(e.session_id).node(node_id(Label.CODE, e.execution_id))
    _artifact_plan(plan, e.artifact)
    return plan.build()


async def _declare_artifact(writer: Writer, e: ArtifactDeclared) -> NodeRecord:
    code = node_id(Label.CODE, e.execution_id)
    (producer,) = await writer.tx.get_nodes([code])
    if producer is not None and producer.session_id != e.session_id:
        # Its products are part of the producing session's graph: only that session adds any.
        raise KeyOwnedByOtherSessionError(code, e.execution_id, producer.session_id, e.session_id)
    return await record_artifact(writer, e.session_id, code, e.artifact)


async def record_artifact(
    writer: Writer,
    session_id: str,
    code: str,
    artifact: ProducedArtifact,
    *,
    produced_at: str | None = None,
) -> NodeRecord:
    """Merge one artifact version produced by ``code`` (at ``produced_at``, the execution's
    finish, when known) with its lineage and inputs."""
    fields: Mapping[str, Any] = {
        "produced_at": produced_at,
        "path": artifact.path,
        "media_type": artifact.media_type,
        "logical_name": artifact.logical_name,
        "project_id": artifact.project_id,
        "turn_id": artifact.turn_id,
        "content_hash": artifact.content_hash,
    }
    rank = artifact_rank(fields)
    key = artifact_key(artifact.artifact_id, artifact.version)
    (stored,) = await writer.tx.get_nodes([node_id(Label.ARTIFACT, key)])
    # A cleaned session's late event producing one of its soft-marked versions again brings it
    # back: an acknowledged write is one its reads answer (another session's is refused below).
    revived = stored is not None and stored.deleted and stored.session_id == session_id

    def update(old: NodeRecord) -> Mapping[str, Any]:
        own = fields if wins(rank, artifact_rank(old.props)) else {}
        return {**own, "deleted_session": None} if revived else own

    node, created = await writer.merge_node(
        Label.ARTIFACT,
        key,
        session_id,
        create={"artifact_id": artifact.artifact_id, "version": artifact.version, **fields},
        update=update,
        erase=True,
    )
    await writer.connect(EdgeType.PRODUCES, code, node.id)
    if created or revived:
        await _link_versions(writer, node, live_only=revived)
    for ref in artifact.input_artifact_versions:
        source = node_id(Label.ARTIFACT, artifact_key(ref.artifact_id, ref.version))
        await writer.connect(EdgeType.INPUT, source, code)
    return node


async def _link_versions(writer: Writer, node: NodeRecord, *, live_only: bool) -> None:
    """``supersedes`` runs from each version to the nearest older stored one of its session. A
    revived version (``live_only``) is linked among the live ones, as reads see them; a new one
    among all, as it was in time (a replay after a cleanup then gives the graph of the events
    before it, ``resolvers.cleanup``).

    Lineage stays inside the session (SPEC §3.8): another session's versions of the same
    artifact id are its own nodes, and linking them would change that session's graph."""
    stored = await writer.tx.artifact_versions(
        str(node.get("artifact_id")), session_id=node.session_id
    )
    versions = [version for version in stored if not (live_only and version.deleted)]
    numbers = [int(v.get("version")) for v in versions]
    index = numbers.index(int(node.get("version")))
    older = versions[index - 1] if index > 0 else None
    newer = versions[index + 1] if index + 1 < len(versions) else None
    if older is not None and newer is not None:
        await writer.disconnect(EdgeType.SUPERSEDES, newer.id, older.id)
    if older is not None:
        await writer.connect(EdgeType.SUPERSEDES, node.id, older.id)
    if newer is not None:
        await writer.connect(EdgeType.SUPERSEDES, newer.id, node.id)


# --- searches and tool calls ----------------------------------------------------------------


async def observe_tool_call(store: GraphStore, event: ToolCallObserved) -> WriteResult:
    return await run_write(store, event, _tool_call, _tool_call_plan)


def _tool_call_plan(e: ToolCallObserved) -> ReadPlan:
    parent = e.parent_subagent_id
    key = _tool_call_key(e)
    scope = scope_key(parent) if parent else None
    at = iso(e.retrieved_at or e.received_at)
    plan = PlanBuilder(e.session_id).step(node_id(Label.TOOL_CALL, key), scope, at)
    for link in _unique_links(e.products):
        paper = node_id(Label.PAPER, link, e.session_id)
        plan.adjacency(paper, EdgeType.PRODUCES, Direction.IN)
    return plan.build()


def _tool_call_key(e: ToolCallObserved) -> str:
    """The key of the tool call's step."""
    parent = e.parent_subagent_id
    return child_key(parent, _ref(e.task_id)) if parent else e.task_id


def _ref(task_id: str) -> str:
    """``subtask:<scheme>:<ref>`` → ``ref``; any other task id is its own ref."""
    parts = task_id.split(":", 2)
    return parts[2] if len(parts) == 3 and parts[0] == "subtask" and parts[2] else task_id


async def _tool_call(writer: Writer, e: ToolCallObserved) -> None:
    parent = e.parent_subagent_id
    key = _tool_call_key(e)
    at = iso(e.retrieved_at or e.received_at)
    links = _unique_links(e.products)
    status = normalise_status(e.status)
    count = e.result_count if e.result_count is not None else len(links)
    fields = {
        "tool_type": e.tool_type,
        "tool_name": e.tool_name,
        "source": e.source,
        "finished_at": at,
        "retrieved_at": iso(e.retrieved_at) if e.retrieved_at else None,
        "parent_subtask_id": scope_key(parent) if parent else None,
        "chain_at": at,
        "status": status,
        "result_count": count,
        "turn_id": e.turn_id,
    }
    call, _ = await _merge_step(
        writer,
        Label.TOOL_CALL,
        key,
        e.session_id,
        fields,
        _ranked(fields, call=True, keep_time=not e.retrieved_at),
    )
    # Untimed, the call's time is when it first arrived (kept when it is sent again): so is
    # the time its Papers were found.
    found_at = at if e.retrieved_at else str(call.get("finished_at") or at)
    for link, product in links.items():
        await _record_paper(writer, e.session_id, call.id, link, product, found_at)


def _unique_links(products: tuple[PaperProduct, ...]) -> dict[str, PaperProduct]:
    links: dict[str, PaperProduct] = {}
    for product in products:
        link = normalize_link(product.link)
        if link:
            links.setdefault(link, product)
    return links


async def _record_paper(
    writer: Writer, session_id: str, call: str, link: str, p: PaperProduct, at: str
) -> None:
    metadata = {
        "title": p.title,
        "identifier": p.identifier,
        "identifier_type": p.identifier_type,
        "year": p.year,
        "authors": list(p.authors) or None,
        "abstract": p.abstract,
        "source": p.source,
    }
    paper, _ = await writer.merge_node(
        Label.PAPER,
        link,
        session_id,
        # A new Paper has exactly one finder: this call (counted once, not create + update).
        create={
            "link": link,
            **paper_metadata(None, metadata, at, call),
            "first_retrieved_at": at,
            "retrieved_at": at,
            "retrieval_count": 1,
        },
        update=lambda old: {
            **paper_metadata(old.props, metadata, at, call),
            "first_retrieved_at": min(str(old.get("first_retrieved_at", at)), at),
            # The latest of every observation's time, whichever arrived first (SPEC §3.9).
            "retrieved_at": max(str(old.get("retrieved_at", at)), at),
        },
    )
    await writer.connect(EdgeType.PRODUCES, call, paper.id)
    finders = await writer.neighbours(paper.id, EdgeType.PRODUCES, Direction.IN)
    if paper.get("retrieval_count") != len(finders):
        latest = max(str(paper.get("retrieved_at", "")), at)
        await _set(writer, paper, retrieval_count=len(finders), retrieved_at=latest)


# --- subagent scopes ------------------------------------------------------------------------


def _subagent_status(status: str) -> tuple[str, str | None]:
    status = normalise_status(status)
    return {
        "timed_out": ("failed", "timed_out"),
        "failed": ("failed", "error"),
        "cancelled": ("cancelled", "aborted"),
    }.get(status, (status, None))


async def observe_subagent(store: GraphStore, event: SubagentObserved) -> WriteResult:
    return await run_write(store, event, _subagent, _subagent_plan)


def _subagent_plan(e: SubagentObserved) -> ReadPlan:
    scope = scope_key(e.subagent_id)
    plan = PlanBuilder(e.session_id).step(node_id(Label.TASK, scope), None, iso(e.started_at))
    return plan.chain_start(scope).build()


async def _subagent(writer: Writer, e: SubagentObserved) -> None:
    status, failure_reason = _subagent_status(e.status)
    raw = normalise_status(e.status)
    terminal = raw in TERMINAL_STATUSES
    start_fields = {
        "objective": e.objective,
        "task_type": e.task_type or SUBAGENT_TASK_TYPE,
        "subagent_type": e.subagent_type,
        "started_at": iso(e.started_at),
        "turn_id": e.turn_id,
    }
    end_fields: dict[str, Any] = {}
    if terminal:
        summary = e.summary if e.summary and e.summary.strip() else None
        if status == "completed" and summary is None:
            summary = SUBAGENT_FALLBACK_SUMMARY
        end_fields = {
            "status": status,
            "finished_at": iso(e.finished_at) if e.finished_at else None,
            "summary": summary,
            "failure_reason": failure_reason,
        }

    started = start_rank(start_fields)
    ended = end_rank(end_fields)

    def update(old: NodeRecord) -> dict[str, Any]:
        changes: dict[str, Any] = {}
        stored_terminal = old.get("status") in TERMINAL_STATUSES
        if wins(started, start_rank(old.props)):
            changes |= {**start_fields, "chain_at": start_fields["started_at"]}
            if not terminal and not stored_terminal:
                changes["status"] = status
        if terminal and (not stored_terminal or wins(ended, end_rank(old.props))):
            changes |= end_fields
        return changes

    create = {**start_fields, "status": status, **end_fields, "chain_at": iso(e.started_at)}
    task, created = await _merge_step(
        writer, Label.TASK, scope_key(e.subagent_id), e.session_id, create, update
    )
    if created:
        await attach_scope_head(writer, task)


# The use case of each event kind, for events applied again from data (an outbox replay, a
# migration); a mutation names its use case itself.
APPLY: dict[type[Event], Callable[[GraphStore, Any], Awaitable[object]]] = {
    UploadFileObserved: observe_upload_file,
    FirstMessageObserved: observe_session_first_message,
    ExecutionObserved: observe_execution,
    ToolCallObserved: observe_tool_call,
    SubagentObserved: observe_subagent,
    ArtifactDeclared: declare_artifact,
}


def claimed_ids(event: Event) -> tuple[str, ...]:
    """The ids of the nodes whose owner decides whether ``event`` is accepted: those it merges
    as its session's own (Papers aside: their ids name the session), the subagent scope a
    step joins, and the execution a declared artifact is a product of. The first session to
    write one owns it (SPEC §3.8), so two sessions' events that claim one id must be applied
    in the order they were acknowledged; events that claim none in common give the same graph
    in either order. Only an observe (or a declared artifact) claims a node an observe may
    claim too: other declares claim none here."""
    match event:
        case UploadFileObserved():
            return (node_id(Label.SOURCE_FILE, event.file_id),)
        case FirstMessageObserved():
            return (node_id(Label.RESEARCH_GOAL, event.goal_id),)
        case ExecutionObserved():
            return (
                node_id(Label.TOOL_CALL, _execution_key(event)),
                node_id(Label.CODE, event.execution_id),
                *artifact_ids(event.produced_artifacts),
                *_scope_ids(event.parent_subagent_id),
            )
        case ToolCallObserved():
            return (
                node_id(Label.TOOL_CALL, _tool_call_key(event)),
                *_scope_ids(event.parent_subagent_id),
            )
        case SubagentObserved():
            return _scope_ids(event.subagent_id)
        case ArtifactDeclared():  # its producer's owner alone may add to its products
            return (node_id(Label.CODE, event.execution_id), *artifact_ids((event.artifact,)))
    return ()


def _scope_ids(subagent_id: str | None) -> tuple[str, ...]:
    return (node_id(Label.TASK, scope_key(subagent_id)),) if subagent_id else ()


def artifact_ids(artifacts: tuple[ProducedArtifact, ...]) -> tuple[str, ...]:
    """The node ids of ``artifacts`` (their versions)."""
    return tuple(
        node_id(Label.ARTIFACT, artifact_key(artifact.artifact_id, artifact.version))
        for artifact in artifacts
    )
