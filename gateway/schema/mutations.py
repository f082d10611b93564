"""Root mutation fields: each turns its input into one event and applies it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import strawberry
from strawberry.types import Info

from gateway.schema.context import GraphContext
from gateway.schema.enums import ChipKind
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
from gateway.schema.nodes import Artifact, Claim, Evidence
from gateway.schema.queries import health_of
from gateway.schema.results import (
    ArtifactRegistered,
    Chip,
    ClaimDeclared,
    ClaimsLinked,
    Cleanup,
    CleanupResult,
    DeclareArtifactResult,
    DeclareClaimResult,
    DeclareEvidenceResult,
    EvidenceDeclared,
    HealthResult,
    LinkClaimsResult,
    Observed,
    ObserveResult,
    Rejected,
)
from resolvers import cleanup, declare, observe
from resolvers.records import Label, artifact_key, node_id
from resolvers.validate import accept_products

if TYPE_CHECKING:
    from collections.abc import Sequence

    from resolvers.events import Event
    from resolvers.validate import RejectedRecord

Ctx = Info[GraphContext, None]


async def _observe(info: Ctx, event: Event, rejected: Sequence[RejectedRecord] = ()) -> Observed:
    result = await info.context.runtime.record(event)
    return Observed(
        written=result.written,
        node_ids=[strawberry.ID(node) for node in result.node_ids],
        rejected=[Rejected(index=r.index, field=r.field, message=r.message) for r in rejected],
    )


@strawberry.type
class GraphMutation:
    @strawberry.mutation(description="Mirror a user upload (SourceFile, fed into the goal).")
    async def observe_upload_file(self, info: Ctx, input: ObserveUploadFileInput) -> ObserveResult:
        return await _observe(info, input.to_event())

    @strawberry.mutation(description="The session's research goal, from its first message.")
    async def observe_session_first_message(
        self, info: Ctx, input: ObserveSessionFirstMessageInput
    ) -> ObserveResult:
        return await _observe(info, input.to_event())

    @strawberry.mutation(description="Mirror one code execution and the artifacts it produced.")
    async def observe_execution(self, info: Ctx, input: ObserveExecutionInput) -> ObserveResult:
        return await _observe(info, input.to_event())

    @strawberry.mutation(description="Mirror one MCP literature search and its Papers.")
    async def observe_mcp_search(self, info: Ctx, input: ObserveMcpSearchInput) -> ObserveResult:
        event, rejected = accept_products(
            input.to_event(), prefix="input.records", link_field="url"
        )
        return await _observe(info, event, rejected)

    @strawberry.mutation(description="Mirror one search/fetch tool call and its Papers.")
    async def observe_tool_call(self, info: Ctx, input: ObserveToolCallInput) -> ObserveResult:
        event, rejected = accept_products(input.to_event())
        return await _observe(info, event, rejected)

    @strawberry.mutation(description="Mirror a subagent's start or end (its scope Task).")
    async def observe_subagent(self, info: Ctx, input: ObserveSubagentInput) -> ObserveResult:
        return await _observe(info, input.to_event())

    @strawberry.mutation(description="Register an artifact version produced by an execution.")
    async def declare_artifact(
        self, info: Ctx, input: DeclareArtifactInput
    ) -> DeclareArtifactResult:
        event = input.to_event()
        result = await observe.declare_artifact(info.context.store, event)
        artifact = artifact_key(event.artifact.artifact_id, event.artifact.version)
        (node,) = await info.context.store.get_nodes([node_id(Label.ARTIFACT, artifact)])
        assert node is not None
        return ArtifactRegistered(artifact=Artifact.from_record(node), written=result.written)

    @strawberry.mutation(description="Declare a passage from a Paper or PDF of this session.")
    async def declare_evidence(
        self, info: Ctx, input: DeclareEvidenceInput
    ) -> DeclareEvidenceResult:
        result = await declare.declare_evidence(info.context.store, input.to_event())
        return EvidenceDeclared(
            evidence_id=result.evidence.key, evidence=Evidence.from_record(result.evidence)
        )

    @strawberry.mutation(description="Declare a claim citing evidence, artifacts or files.")
    async def declare_claim(self, info: Ctx, input: DeclareClaimInput) -> DeclareClaimResult:
        result = await declare.declare_claim(info.context.store, input.to_event())
        return ClaimDeclared(
            claim_id=result.claim.key,
            claim=Claim.from_record(result.claim),
            chip_map=[
                Chip(
                    alias=chip.alias,
                    kind=ChipKind(chip.kind.value),
                    id=chip.id,
                    node_id=strawberry.ID(chip.node_id),
                    label=chip.alias,
                    version=chip.version,
                )
                for chip in result.chips
            ],
        )

    @strawberry.mutation(description="State claims in a report version (waits for it briefly).")
    async def link_claims_to_report(
        self, info: Ctx, input: LinkClaimsToReportInput
    ) -> LinkClaimsResult:
        linked = await declare.link_claims_to_report(
            info.context.store,
            input.to_event(),
            wait_seconds=info.context.runtime.settings.link_wait_seconds,
        )
        return ClaimsLinked(linked=linked)

    @strawberry.mutation(description="Mirror a session deletion (Artifacts are soft-marked).")
    async def cleanup_session(self, info: Ctx, session_id: str) -> CleanupResult:
        result = await cleanup.cleanup_session(info.context.store, session_id)
        return Cleanup(marked=result.marked, deleted=result.deleted)

    @strawberry.mutation(description="Mirror a project deletion (everything is removed).")
    async def cleanup_project(
        self, info: Ctx, project_id: str, session_ids: list[str] | None = None
    ) -> CleanupResult:
        result = await cleanup.cleanup_project(
            info.context.store, project_id, list(session_ids or ())
        )
        return Cleanup(marked=result.marked, deleted=result.deleted)

    @strawberry.mutation(description="Switch ScienceMemory on or off, or change the backend.")
    async def configure_memory_graph(
        self, info: Ctx, input: MemoryGraphSettingsInput
    ) -> HealthResult:
        input.check()
        report = await info.context.runtime.configure(
            enabled=input.enabled,
            backend=input.backend.to_domain() if input.backend else None,
            neo4j_uri=input.neo4j_uri,
            neo4j_user=input.neo4j_user,
            neo4j_password=input.neo4j_password,
        )
        return health_of(report)
