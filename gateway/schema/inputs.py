"""Mutation inputs: the reference request fields in camelCase, each turned into one event."""

from __future__ import annotations

from datetime import datetime

import strawberry

from gateway.schema.errors import GraphBackend
from resolvers import events
from resolvers.errors import InvalidInputError
from resolvers.validate import MAX_ID_LENGTH, check_text

# The task id of an MCP search: ``subtask:mcp:<invocationId>``, an id like any other.
MCP_TASK_PREFIX = "subtask:mcp:"


@strawberry.input
class ArtifactVersionInput:
    artifact_id: str
    version: int


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
        # The two fields the event's are derived from, checked as the client wrote them: the
        # derived ``subtask:mcp:<id>`` would hide an empty invocationId from the validation of
        # the event. Records become products, accepted one by one (``accept_products``).
        if len(MCP_TASK_PREFIX) + len(self.invocation_id) > MAX_ID_LENGTH:
            most = MAX_ID_LENGTH - len(MCP_TASK_PREFIX)
            raise InvalidInputError(
                "input.invocationId",
                f"at most {most} characters (the task id `{MCP_TASK_PREFIX}<invocationId>` "
                f"at most {MAX_ID_LENGTH})",
            )
        check_text("invocation_id", self.invocation_id, "input.invocationId")
        check_text("source", self.source, "input.source")
        return events.from_input(
            events.ToolCallObserved,
            self,
            task_id=MCP_TASK_PREFIX + self.invocation_id,
            tool_name=self.tool_name or f"mcp__{self.source}__search",
            products=tuple(
                events.from_input(events.PaperProduct, r, link=r.url) for r in self.records or ()
            ),
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


@strawberry.input(description="Register an artifact version produced by an execution's Code.")
class DeclareArtifactInput:
    session_id: str
    execution_id: str
    artifact: ProducedArtifactInput


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


@strawberry.input
class AliasInput:
    alias: str
    id: str


@strawberry.input
class ArtifactAliasInput:
    alias: str
    artifact_id: str
    version: int | None = strawberry.field(default=None, description="Latest when absent.")


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


@strawberry.input
class LinkClaimsToReportInput:
    session_id: str
    artifact_id: str
    artifact_version: int
    claim_ids: list[str]


@strawberry.input(description="Runtime settings; omitted fields keep their value.")
class MemoryGraphSettingsInput:
    enabled: bool | None = None
    backend: GraphBackend | None = None
    neo4j_uri: str | None = None
    neo4j_user: str | None = None
    neo4j_password: str | None = strawberry.field(
        default=None, description="Stored in the data directory; never returned or logged."
    )
