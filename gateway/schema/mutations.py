"""Root mutation fields: each parses its input into one event, names the use case that applies
it (through ``Runtime.record``, the one write entrance) and maps the result."""

from __future__ import annotations

from functools import partial

import strawberry
from strawberry.types import Info

from gateway.schema.context import GraphContext
from gateway.schema.inputs import (
    DeclareArtifactInput,
    DeclareClaimInput,
    DeclareEvidenceInput,
    LinkClaimsToReportInput,
    MemoryGraphSettingsInput,
    ObserveExecutionInput,
    ObserveMcpSearchInput,
    ObserveSessionFirstMessageInput,
    ObserveSubagentInput,
    ObserveToolCallInput,
    ObserveUploadFileInput,
)
from gateway.schema.results import (
    ArtifactRegistered,
    ClaimDeclaredPayload,
    ClaimsLinkedPayload,
    Cleanup,
    CleanupResult,
    DeclareArtifactResult,
    DeclareClaimResult,
    DeclareEvidenceResult,
    EvidenceDeclaredPayload,
    Health,
    HealthResult,
    LinkClaimsResult,
    Observed,
    ObserveResult,
)
from resolvers import cleanup, declare, events, observe
from resolvers.validate import accept_products

Ctx = Info[GraphContext, None]


@strawberry.type
class GraphMutation:
    @strawberry.mutation(description="Mirror a user upload (SourceFile, fed into the goal).")
    async def observe_upload_file(self, info: Ctx, input: ObserveUploadFileInput) -> ObserveResult:
        event = events.from_input(events.UploadFileObserved, input)
        result = await info.context.runtime.record(observe.observe_upload_file, event)
        return Observed.from_record(result)

    @strawberry.mutation(description="The session's research goal, from its first message.")
    async def observe_session_first_message(
        self, info: Ctx, input: ObserveSessionFirstMessageInput
    ) -> ObserveResult:
        event = events.from_input(events.FirstMessageObserved, input)
        result = await info.context.runtime.record(observe.observe_session_first_message, event)
        return Observed.from_record(result)

    @strawberry.mutation(description="Mirror one code execution and the artifacts it produced.")
    async def observe_execution(self, info: Ctx, input: ObserveExecutionInput) -> ObserveResult:
        event = events.from_input(events.ExecutionObserved, input)
        result = await info.context.runtime.record(observe.observe_execution, event)
        return Observed.from_record(result)

    @strawberry.mutation(description="Mirror one MCP literature search and its Papers.")
    async def observe_mcp_search(self, info: Ctx, input: ObserveMcpSearchInput) -> ObserveResult:
        event, rejected = accept_products(
            input.to_event(), prefix="input.records", link_field="url"
        )
        result = await info.context.runtime.record(observe.observe_tool_call, event)
        return Observed.from_record(result, rejected)

    @strawberry.mutation(description="Mirror one search/fetch tool call and its Papers.")
    async def observe_tool_call(self, info: Ctx, input: ObserveToolCallInput) -> ObserveResult:
        event, rejected = accept_products(events.from_input(events.ToolCallObserved, input))
        result = await info.context.runtime.record(observe.observe_tool_call, event)
        return Observed.from_record(result, rejected)

    @strawberry.mutation(description="Mirror a subagent's start or end (its scope Task).")
    async def observe_subagent(self, info: Ctx, input: ObserveSubagentInput) -> ObserveResult:
        event = events.from_input(events.SubagentObserved, input)
        result = await info.context.runtime.record(observe.observe_subagent, event)
        return Observed.from_record(result)

    @strawberry.mutation(description="Register an artifact version produced by an execution.")
    async def declare_artifact(
        self, info: Ctx, input: DeclareArtifactInput
    ) -> DeclareArtifactResult:
        event = events.from_input(events.ArtifactDeclared, input)
        result = await info.context.runtime.record(observe.declare_artifact, event)
        return ArtifactRegistered.from_record(result)

    @strawberry.mutation(description="Declare a passage from a Paper or PDF of this session.")
    async def declare_evidence(
        self, info: Ctx, input: DeclareEvidenceInput
    ) -> DeclareEvidenceResult:
        event = events.from_input(events.EvidenceDeclared, input)
        result = await info.context.runtime.record(declare.declare_evidence, event)
        return EvidenceDeclaredPayload.from_record(result)

    @strawberry.mutation(description="Declare a claim citing evidence, artifacts or files.")
    async def declare_claim(self, info: Ctx, input: DeclareClaimInput) -> DeclareClaimResult:
        event = events.from_input(events.ClaimDeclared, input)
        result = await info.context.runtime.record(declare.declare_claim, event)
        return ClaimDeclaredPayload.from_record(result)

    @strawberry.mutation(description="State claims in a report version (waits for it briefly).")
    async def link_claims_to_report(
        self, info: Ctx, input: LinkClaimsToReportInput
    ) -> LinkClaimsResult:
        event = events.from_input(events.ClaimsLinked, input)
        wait = info.context.runtime.settings.link_wait_seconds
        use_case = partial(declare.link_claims_to_report, wait_seconds=wait)
        linked = await info.context.runtime.record(use_case, event)
        return ClaimsLinkedPayload(linked=linked)

    @strawberry.mutation(description="Mirror a session deletion (Artifacts are soft-marked).")
    async def cleanup_session(self, info: Ctx, session_id: str) -> CleanupResult:
        result = await info.context.runtime.after_sessions(
            [session_id], partial(cleanup.cleanup_session, session_id=session_id)
        )
        return Cleanup.from_record(result)

    @strawberry.mutation(description="Mirror a project deletion (everything is removed).")
    async def cleanup_project(
        self, info: Ctx, project_id: str, session_ids: list[str] | None = None
    ) -> CleanupResult:
        # Every session's queued observes first: any of them may belong to the project.
        result = await info.context.runtime.after_sessions(
            None,
            partial(
                cleanup.cleanup_project, project_id=project_id, session_ids=list(session_ids or ())
            ),
        )
        return Cleanup.from_record(result)

    @strawberry.mutation(description="Switch ScienceMemory on or off, or change the backend.")
    async def configure_memory_graph(
        self, info: Ctx, input: MemoryGraphSettingsInput
    ) -> HealthResult:
        report = await info.context.runtime.configure(
            enabled=input.enabled,
            backend=input.backend.to_domain() if input.backend else None,
            neo4j_uri=input.neo4j_uri,
            neo4j_user=input.neo4j_user,
            neo4j_password=input.neo4j_password,
        )
        return Health.from_record(report)
