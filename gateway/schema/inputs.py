"""Mutation inputs: the reference request fields in camelCase, each turned into one event."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlsplit

import strawberry

from gateway.schema.errors import GraphBackend
from resolvers import events
from resolvers.errors import InvalidInputError
from resolvers.validate import check_text, check_unicode


@strawberry.input
class ArtifactVersionInput:
    artifact_id: str
    version: int

    def to_domain(self) -> events.ArtifactVersionRef:
        return events.ArtifactVersionRef(self.artifact_id, self.version)


@strawberry.input(description="One artifact version produced by an execution.")
class ProducedArtifactInput:
    artifact_id: str
    version: int
    path: str | None = None
    media_type: str | None = None
    logical_name: str | None = None
    project_id: str | None = None
    turn_id: str | None = None
    content_hash: str | None = None
    input_artifact_versions: list[ArtifactVersionInput] | None = None

    def to_domain(self) -> events.ProducedArtifact:
        return events.ProducedArtifact(
            artifact_id=self.artifact_id,
            version=self.version,
            path=self.path,
            media_type=self.media_type,
            logical_name=self.logical_name,
            project_id=self.project_id,
            turn_id=self.turn_id,
            content_hash=self.content_hash,
            input_artifact_versions=tuple(
                ref.to_domain() for ref in self.input_artifact_versions or ()
            ),
        )


@strawberry.input
class ObserveUploadFileInput:
    session_id: str
    file_id: str = strawberry.field(description="`source_file:session:<sessionId>:<path>`")
    name: str
    path: str
    created_at: datetime | None = strawberry.field(
        default=None, description="When the user uploaded the file (kept as `uploadedAt`)."
    )
    media_type: str | None = None
    size: int | None = None
    content_hash: str | None = None

    def to_event(self) -> events.UploadFileObserved:
        return events.UploadFileObserved(
            session_id=self.session_id,
            file_id=self.file_id,
            name=self.name,
            path=self.path,
            uploaded_at=self.created_at,
            media_type=self.media_type,
            size=self.size,
            content_hash=self.content_hash,
        )


@strawberry.input
class ObserveSessionFirstMessageInput:
    session_id: str
    goal_id: str = strawberry.field(description="Normally `goal:session:<sessionId>`.")
    core_objective: str
    created_at: datetime | None = strawberry.field(
        default=None, description="When the message was sent (kept as `sentAt`)."
    )
    domain: str | None = None
    topic_scope: list[str] | None = None

    def to_event(self) -> events.FirstMessageObserved:
        return events.FirstMessageObserved(
            session_id=self.session_id,
            goal_id=self.goal_id,
            core_objective=self.core_objective,
            domain=self.domain,
            topic_scope=tuple(self.topic_scope or ()),
            sent_at=self.created_at,
        )


@strawberry.input
class ObserveExecutionInput:
    execution_id: str
    session_id: str
    turn_id: str
    tool: str
    code_hash: str
    status: str = strawberry.field(description="`succeeded` is stored as `completed`.")
    started_at: datetime
    finished_at: datetime
    language: str | None = None
    exit_code: int | None = None
    tool_type: str = "execution"
    tool_name: str | None = None
    produced_artifacts: list[ProducedArtifactInput] | None = None
    stdout_hash: str | None = None
    stderr_hash: str | None = None
    env_hash: str | None = None
    parent_subagent_id: str | None = None
    input_source_files: list[str] | None = strawberry.field(
        default=None, description="fileIds of uploaded files the code read."
    )

    def to_event(self) -> events.ExecutionObserved:
        return events.ExecutionObserved(
            session_id=self.session_id,
            execution_id=self.execution_id,
            turn_id=self.turn_id,
            tool=self.tool,
            code_hash=self.code_hash,
            status=self.status,
            started_at=self.started_at,
            finished_at=self.finished_at,
            language=self.language,
            exit_code=self.exit_code,
            tool_type=self.tool_type,
            tool_name=self.tool_name,
            produced_artifacts=tuple(a.to_domain() for a in self.produced_artifacts or ()),
            stdout_hash=self.stdout_hash,
            stderr_hash=self.stderr_hash,
            env_hash=self.env_hash,
            parent_subagent_id=self.parent_subagent_id,
            input_source_files=tuple(self.input_source_files or ()),
        )


@strawberry.input(description="A Paper found by a search; `link` is normalised.")
class PaperProductInput:
    link: str
    title: str | None = None
    identifier: str | None = None
    identifier_type: str | None = None
    year: str | None = None
    authors: list[str] | None = None
    abstract: str | None = None
    source: str | None = None

    def to_domain(self) -> events.PaperProduct:
        return events.PaperProduct(
            link=self.link,
            title=self.title,
            identifier=self.identifier,
            identifier_type=self.identifier_type,
            year=self.year,
            authors=tuple(self.authors or ()),
            abstract=self.abstract,
            source=self.source,
        )


@strawberry.input
class ObserveToolCallInput:
    task_id: str = strawberry.field(description="e.g. `subtask:mcp:<invocationId>`.")
    session_id: str
    tool_name: str
    tool_type: str
    turn_id: str | None = None
    source: str | None = None
    status: str = "completed"
    result_count: int | None = None
    retrieved_at: datetime | None = strawberry.field(
        default=None, description="Orders the step in its chain (receive time when absent)."
    )
    products: list[PaperProductInput] | None = None
    parent_subagent_id: str | None = None

    def to_event(self) -> events.ToolCallObserved:
        return events.ToolCallObserved(
            session_id=self.session_id,
            task_id=self.task_id,
            turn_id=self.turn_id,
            tool_name=self.tool_name,
            tool_type=self.tool_type,
            source=self.source,
            status=self.status,
            result_count=self.result_count,
            retrieved_at=self.retrieved_at,
            products=tuple(p.to_domain() for p in self.products or ()),
            parent_subagent_id=self.parent_subagent_id,
        )


@strawberry.input(description="One literature record of an MCP search.")
class McpSearchRecordInput:
    url: str
    title: str | None = None
    identifier: str | None = None
    identifier_type: str | None = None
    year: str | None = None
    authors: list[str] | None = None
    abstract: str | None = None
    source: str | None = None


@strawberry.input(description="An MCP literature search; recorded as a ToolCall producing Papers.")
class ObserveMcpSearchInput:
    invocation_id: str
    session_id: str
    turn_id: str
    source: str
    tool_type: str = "search"
    tool_name: str | None = None
    retrieved_at: datetime | None = None
    records: list[McpSearchRecordInput] | None = None
    parent_subagent_id: str | None = None

    def to_event(self) -> events.ToolCallObserved:
        # Checked here so that an error names the field the client wrote, not the derived one
        # (taskId and toolName are built from invocationId and source). Records become products,
        # checked one by one by the mutation (``accept_products``).
        check_text("task_id", self.invocation_id, "input.invocationId")
        check_text("source", self.source, "input.source")
        products = tuple(
            events.PaperProduct(
                link=r.url,
                title=r.title,
                identifier=r.identifier,
                identifier_type=r.identifier_type,
                year=r.year,
                authors=tuple(r.authors or ()),
                abstract=r.abstract,
                source=r.source,
            )
            for r in self.records or ()
        )
        return events.ToolCallObserved(
            session_id=self.session_id,
            task_id=f"subtask:mcp:{self.invocation_id}",
            turn_id=self.turn_id,
            tool_name=self.tool_name or f"mcp__{self.source}__search",
            tool_type=self.tool_type,
            source=self.source,
            retrieved_at=self.retrieved_at,
            products=products,
            parent_subagent_id=self.parent_subagent_id,
        )


@strawberry.input(description="A subagent lifecycle event (sent at start and at the end).")
class ObserveSubagentInput:
    subagent_id: str
    session_id: str
    turn_id: str
    objective: str
    created_at: datetime = strawberry.field(description="When the subagent started.")
    status: str = strawberry.field(
        description="`running` at start; `completed`, `failed`, `cancelled` or `timed_out`."
    )
    task_type: str = "subagent"
    subagent_type: str | None = None
    finished_at: datetime | None = None
    summary: str | None = None

    def to_event(self) -> events.SubagentObserved:
        return events.SubagentObserved(
            session_id=self.session_id,
            subagent_id=self.subagent_id,
            turn_id=self.turn_id,
            objective=self.objective,
            started_at=self.created_at,
            status=self.status,
            task_type=self.task_type,
            subagent_type=self.subagent_type,
            finished_at=self.finished_at,
            summary=self.summary,
        )


@strawberry.input(description="Register an artifact version produced by an execution's Code.")
class DeclareArtifactInput:
    session_id: str
    execution_id: str
    artifact: ProducedArtifactInput

    def to_event(self) -> events.ArtifactDeclared:
        return events.ArtifactDeclared(
            session_id=self.session_id,
            execution_id=self.execution_id,
            artifact=self.artifact.to_domain(),
        )


@strawberry.input
class DeclareEvidenceInput:
    session_id: str
    content: str
    locator: str
    evidence_type: str
    confidence: str
    strength: str
    source_paper_link: str | None = strawberry.field(
        default=None, description="A Paper link found by a search in this session."
    )
    source_file_id: str | None = strawberry.field(
        default=None, description="An uploaded PDF of this session."
    )

    def to_event(self) -> events.EvidenceDeclared:
        return events.EvidenceDeclared(
            session_id=self.session_id,
            content=self.content,
            locator=self.locator,
            evidence_type=self.evidence_type,
            confidence=self.confidence,
            strength=self.strength,
            source_paper_link=self.source_paper_link,
            source_file_id=self.source_file_id,
        )


@strawberry.input
class AliasInput:
    alias: str
    id: str

    def to_domain(self) -> events.Alias:
        return events.Alias(self.alias, self.id)


@strawberry.input
class ArtifactAliasInput:
    alias: str
    artifact_id: str
    version: int | None = strawberry.field(default=None, description="Latest when absent.")

    def to_domain(self) -> events.ArtifactAlias:
        return events.ArtifactAlias(self.alias, self.artifact_id, self.version)


@strawberry.input
class DeclareClaimInput:
    session_id: str
    content: str
    claim_type: str
    confidence: str
    locator: str
    cites_evidence: list[AliasInput] | None = None
    cites_artifacts: list[ArtifactAliasInput] | None = None
    cites_source_files: list[AliasInput] | None = None
    artifact_id: str | None = strawberry.field(
        default=None, description="The report the claim is stated in (linked when it arrives)."
    )
    artifact_version: int | None = None

    def to_event(self) -> events.ClaimDeclared:
        return events.ClaimDeclared(
            session_id=self.session_id,
            content=self.content,
            claim_type=self.claim_type,
            confidence=self.confidence,
            locator=self.locator,
            cites_evidence=tuple(a.to_domain() for a in self.cites_evidence or ()),
            cites_artifacts=tuple(a.to_domain() for a in self.cites_artifacts or ()),
            cites_source_files=tuple(a.to_domain() for a in self.cites_source_files or ()),
            artifact_id=self.artifact_id,
            artifact_version=self.artifact_version,
        )


@strawberry.input
class LinkClaimsToReportInput:
    session_id: str
    artifact_id: str
    artifact_version: int
    claim_ids: list[str]

    def to_event(self) -> events.ClaimsLinked:
        return events.ClaimsLinked(
            session_id=self.session_id,
            artifact_id=self.artifact_id,
            artifact_version=self.artifact_version,
            claim_ids=tuple(self.claim_ids),
        )


@strawberry.input(description="Runtime settings; omitted fields keep their value.")
class MemoryGraphSettingsInput:
    enabled: bool | None = None
    backend: GraphBackend | None = None
    neo4j_uri: str | None = None
    neo4j_user: str | None = None
    neo4j_password: str | None = strawberry.field(
        default=None, description="Stored in the data directory; never returned or logged."
    )

    def check(self) -> None:
        """Refuse a connection that could never be opened, before anything is saved."""
        if self.neo4j_uri is not None:
            check_text("neo4j_uri", self.neo4j_uri, "input.neo4jUri")
            if not _is_bolt_uri(self.neo4j_uri):
                raise InvalidInputError(
                    "input.neo4jUri",
                    "must be a Bolt URI with a host, e.g. bolt://127.0.0.1:7687 "
                    f"(schemes: {', '.join(sorted(NEO4J_SCHEMES))})",
                )
        if self.neo4j_user is not None:
            check_text("neo4j_user", self.neo4j_user, "input.neo4jUser")
        if self.neo4j_password is not None:
            check_unicode(self.neo4j_password, "input.neo4jPassword")


NEO4J_SCHEMES = frozenset({"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"})


def _is_bolt_uri(uri: str) -> bool:
    try:
        parts = urlsplit(uri.strip())
        parts.port  # noqa: B018  (raises ValueError for a port out of range)
    except ValueError:
        return False
    return parts.scheme.lower() in NEO4J_SCHEMES and bool(parts.hostname)
