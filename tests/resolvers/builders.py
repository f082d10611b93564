"""Small builders that write through the real observe / declare use cases.

Times are seconds after ``T0``; a step's place in its chain follows them. Every builder returns
the global id of the node the test cares about.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from resolvers import declare, observe
from resolvers.events import (
    Alias,
    ArtifactAlias,
    ArtifactVersionRef,
    ClaimDeclared,
    EvidenceDeclared,
    ExecutionObserved,
    FirstMessageObserved,
    PaperProduct,
    ProducedArtifact,
    SubagentObserved,
    ToolCallObserved,
    UploadFileObserved,
)
from resolvers.links import normalize_link
from resolvers.records import Label, artifact_key, node_id

if TYPE_CHECKING:
    from collections.abc import Sequence

    from resolvers.store import GraphStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
S1 = "s1"
CSV = "text/csv"
PDF = "application/pdf"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def goal_id(session: str = S1) -> str:
    return node_id(Label.RESEARCH_GOAL, f"goal:session:{session}")


def artifact(artifact_id: str, version: int = 1) -> str:
    return node_id(Label.ARTIFACT, artifact_key(artifact_id, version))


def paper(link: str, session: str = S1) -> str:
    return node_id(Label.PAPER, normalize_link(link), session)


def code(execution_id: str) -> str:
    return node_id(Label.CODE, execution_id)


def call(execution_id: str, scope: str | None = None) -> str:
    key = f"subtask:subagent:{scope}:exec:{execution_id}" if scope else f"subtask:{execution_id}"
    return node_id(Label.TOOL_CALL, key)


def scope_id(subagent_id: str) -> str:
    return node_id(Label.TASK, f"subtask:subagent:{subagent_id}")


def file_id(path: str, session: str = S1) -> str:
    return f"source_file:session:{session}:{path}"


async def goal(store: GraphStore, session: str = S1, objective: str = "Study TP53") -> str:
    await observe.observe_session_first_message(
        store,
        FirstMessageObserved(
            session_id=session, goal_id=f"goal:session:{session}", core_objective=objective
        ),
    )
    return goal_id(session)


def execution_event(
    execution_id: str,
    finished: float,
    *,
    produces: Sequence[tuple[str, int] | ProducedArtifact] = (),
    reads: Sequence[tuple[str, int]] = (),
    reads_files: Sequence[str] = (),
    session: str = S1,
    scope: str | None = None,
) -> ExecutionObserved:
    """An execution finished at ``finished``; ``reads`` are input versions of each product,
    ``reads_files`` the paths of uploads it read."""
    inputs = tuple(ArtifactVersionRef(a, v) for a, v in reads)
    products = tuple(
        p
        if isinstance(p, ProducedArtifact)
        else ProducedArtifact(p[0], p[1], logical_name=p[0], input_artifact_versions=inputs)
        for p in produces
    )
    return ExecutionObserved(
        session_id=session,
        execution_id=execution_id,
        turn_id="turn-1",
        tool="run_python",
        code_hash=f"hash-{execution_id}",
        status="succeeded",
        started_at=at(finished - 1),
        finished_at=at(finished),
        produced_artifacts=products,
        input_source_files=tuple(file_id(f, session) for f in reads_files),
        parent_subagent_id=scope,
    )


async def execution(store: GraphStore, execution_id: str, finished: float, **options: Any) -> str:
    """``execution_event`` (with its ``options``) applied; the id of its ToolCall."""
    await observe.observe_execution(store, execution_event(execution_id, finished, **options))
    return call(execution_id, options.get("scope"))


async def search(
    store: GraphStore,
    invocation: str,
    retrieved: float,
    papers: Sequence[str | PaperProduct],
    *,
    session: str = S1,
    scope: str | None = None,
) -> str:
    products = tuple(p if isinstance(p, PaperProduct) else PaperProduct(p) for p in papers)
    await observe.observe_tool_call(
        store,
        ToolCallObserved(
            session_id=session,
            task_id=f"subtask:mcp:{invocation}",
            turn_id="turn-1",
            tool_name="mcp__europe-pmc__search",
            tool_type="search",
            retrieved_at=at(retrieved),
            products=products,
            parent_subagent_id=scope,
        ),
    )
    if scope:
        return call(invocation, scope)
    return node_id(Label.TOOL_CALL, f"subtask:mcp:{invocation}")


async def subagent(
    store: GraphStore,
    subagent_id: str,
    started: float,
    *,
    summary: str | None = None,
    session: str = S1,
) -> str:
    await observe.observe_subagent(
        store,
        SubagentObserved(
            session_id=session,
            subagent_id=subagent_id,
            turn_id="turn-1",
            objective=f"objective of {subagent_id}",
            started_at=at(started),
            status="completed" if summary else "running",
            subagent_type="literature",
            summary=summary,
        ),
    )
    return scope_id(subagent_id)


async def upload(store: GraphStore, path: str, *, media_type: str = CSV, session: str = S1) -> str:
    await observe.observe_upload_file(
        store,
        UploadFileObserved(
            session_id=session,
            file_id=file_id(path, session),
            name=path,
            path=path,
            media_type=media_type,
        ),
    )
    return node_id(Label.SOURCE_FILE, file_id(path, session))


async def evidence(
    store: GraphStore,
    content: str,
    *,
    link: str | None = None,
    source_file: str | None = None,
    session: str = S1,
) -> str:
    result = await declare.declare_evidence(
        store,
        EvidenceDeclared(
            session_id=session,
            content=content,
            locator="p. 1",
            evidence_type="quote",
            confidence="high",
            strength="strong",
            source_paper_link=link,
            source_file_id=file_id(source_file, session) if source_file else None,
        ),
    )
    return result.evidence.id


async def claim(
    store: GraphStore,
    content: str,
    *,
    evidence_ids: Sequence[str] = (),
    artifacts: Sequence[tuple[str, int]] = (),
    files: Sequence[str] = (),
    report: tuple[str, int] | None = None,
    session: str = S1,
) -> str:
    """A claim citing evidence (global ids), artifact versions and files, stated in ``report``."""
    result = await declare.declare_claim(
        store,
        ClaimDeclared(
            session_id=session,
            content=content,
            claim_type="finding",
            confidence="high",
            locator="§1",
            cites_evidence=tuple(
                Alias(f"e{i}", e.partition(":")[2]) for i, e in enumerate(evidence_ids)
            ),
            cites_artifacts=tuple(
                ArtifactAlias(f"a{i}", a, v) for i, (a, v) in enumerate(artifacts)
            ),
            cites_source_files=tuple(
                Alias(f"f{i}", file_id(f, session)) for i, f in enumerate(files)
            ),
            artifact_id=report[0] if report else None,
            artifact_version=report[1] if report else None,
        ),
    )
    return result.claim.id
