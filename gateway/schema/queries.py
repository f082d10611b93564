"""Root query fields: parse arguments, call one use case, map the records to GraphQL types."""

from __future__ import annotations

from typing import TYPE_CHECKING

import strawberry
from strawberry.types import Info

from gateway.schema.context import GraphContext
from gateway.schema.enums import ChainKind, EdgeType, HealthStatus, MatchMode, NodeLabel
from gateway.schema.errors import GraphBackend
from gateway.schema.nodes import Artifact, Code, GraphEdge, ToolCall, to_node
from gateway.schema.pacing import Paced, paced_map
from gateway.schema.results import (
    ArtifactProvenance,
    ArtifactProvenanceResult,
    Chain,
    ChainAvailability,
    ChainExistsResult,
    ChainKindAvailability,
    ChainResult,
    EdgeListResult,
    Health,
    NodeListResult,
    NodeResult,
    ProductGroup,
    ProvenanceResult,
    ProvenanceStep,
    ProvenanceTrace,
    Subgraph,
    SubgraphResult,
)
from gateway.schema.session import Session, SessionResult, edge_list, node_list
from resolvers import artifacts, chains, provenance, resolve, search, subgraph
from resolvers.errors import NodeNotFoundError
from resolvers.validate import check_text

if TYPE_CHECKING:
    from gateway.runtime.state import HealthReport
    from resolvers.records import GraphSlice, Label

Ctx = Info[GraphContext, None]


def health_of(report: HealthReport) -> Health:
    return Health(
        status=HealthStatus(report.status),
        backend=GraphBackend.from_domain(report.backend),
        enabled=report.enabled,
        reachable=report.reachable,
        pending_writes=report.pending_writes,
        version=report.version,
        reason=report.reason,
    )


def chain_of(found: GraphSlice) -> Chain:
    return Chain(
        nodes=Paced(to_node(node) for node in found.nodes),
        edges=Paced(GraphEdge.from_record(edge) for edge in found.edges),
        total=found.total,
        truncated=found.truncated,
        end_cursor=found.end_cursor,
    )


def _labels(labels: list[NodeLabel] | None) -> list[Label] | None:
    return [label.to_domain() for label in labels] if labels else None


@strawberry.type
class GraphQuery:
    @strawberry.field(description="The gateway's state; answers even when disabled.")
    async def health(self, info: Ctx) -> Health:
        return health_of(await info.context.runtime.health())

    @strawberry.field(description="One node by global id or domain key.")
    async def node(
        self, info: Ctx, node_id: strawberry.ID, session_id: str | None = None
    ) -> NodeResult:
        record = await resolve.resolve_node(info.context.store, node_id, session_id=session_id)
        return to_node(record)  # type: ignore[return-value]

    @strawberry.field(description="A session's goal, nodes, edges and chain.")
    async def session(self, info: Ctx, session_id: str) -> SessionResult:
        check_text("session_id", session_id, "sessionId")
        page = await info.context.store.list_nodes(session_id=session_id, limit=1)
        if not page.items:
            raise NodeNotFoundError(session_id, "session")
        return Session(session_id=session_id)

    @strawberry.field(description="Every live node of a session and the edges among them.")
    async def subgraph(
        self,
        info: Ctx,
        session_id: str,
        first: int | None = None,
        fold: bool | None = True,
    ) -> SubgraphResult:
        graph = await subgraph.session_subgraph(
            info.context.store,
            session_id,
            first=subgraph.SUBGRAPH_DEFAULT_FIRST if first is None else first,
            fold=fold is not False,
        )
        return Subgraph(
            # Up to 5,000 nodes: converted in steps too, not only serialised in steps.
            nodes=await paced_map(to_node, graph.nodes),
            edges=await paced_map(GraphEdge.from_record, graph.edges),
            groups=[
                ProductGroup(
                    id=strawberry.ID(group.id),
                    scope_id=strawberry.ID(group.scope_id),
                    kind=NodeLabel.from_domain(group.kind),
                    count=len(group.members),
                    members=[strawberry.ID(member) for member in group.members],
                )
                for group in graph.groups
            ],
            total=graph.total,
            truncated=graph.truncated,
        )

    @strawberry.field(description="Term search over the nodes' text, best matches first.")
    async def search_nodes(
        self,
        info: Ctx,
        query: str,
        mode: MatchMode | None = None,
        session_id: str | None = None,
        labels: list[NodeLabel] | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> NodeListResult:
        page = await search.search_nodes(
            info.context.store,
            query,
            mode=mode or search.MatchMode.ANY_TERM,
            session_id=session_id,
            labels=_labels(labels),
            first=search.DEFAULT_FIRST if first is None else first,
            after=after,
        )
        return node_list(page)

    @strawberry.field(description="Live nodes of the given labels, newest first.")
    async def nodes_by_type(
        self,
        info: Ctx,
        labels: list[NodeLabel],
        session_id: str | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> NodeListResult:
        page = await search.nodes_by_type(
            info.context.store,
            [label.to_domain() for label in labels],
            session_id=session_id,
            first=search.DEFAULT_FIRST if first is None else first,
            after=after,
        )
        return node_list(page)

    @strawberry.field(description="Edges of the given types with their endpoints, newest first.")
    async def edges_by_type(
        self,
        info: Ctx,
        types: list[EdgeType],
        session_id: str | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> EdgeListResult:
        page, nodes = await search.edges_by_type(
            info.context.store,
            [t.to_domain() for t in types],
            session_id=session_id,
            first=search.DEFAULT_FIRST if first is None else first,
            after=after,
        )
        return edge_list(page, nodes)

    @strawberry.field(description="The chain behind one button of a node.")
    async def get_chain(
        self,
        info: Ctx,
        node_id: strawberry.ID,
        kind: ChainKind,
        session_id: str | None = None,
        version: int | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> ChainResult:
        found = await chains.get_chain(
            info.context.store,
            node_id,
            kind,
            session_id=session_id,
            version=version,
            first=first,
            after=after,
        )
        return chain_of(found)

    @strawberry.field(description="For each kind, whether getChain would be non-empty.")
    async def chain_exists(
        self,
        info: Ctx,
        node_id: strawberry.ID,
        kinds: list[ChainKind],
        session_id: str | None = None,
        version: int | None = None,
    ) -> ChainExistsResult:
        found = await chains.chain_exists(
            info.context.store, node_id, kinds, session_id=session_id, version=version
        )
        return ChainAvailability(
            entries=[
                ChainKindAvailability(kind=kind, exists=exists) for kind, exists in found.items()
            ]
        )

    @strawberry.field(
        description="Where a node comes from: a witness path upstream, the exploration, a verdict."
    )
    async def trace_provenance(
        self,
        info: Ctx,
        node_id: strawberry.ID,
        target_label: NodeLabel | None = None,
        max_hops: int | None = None,
        session_id: str | None = None,
    ) -> ProvenanceResult:
        trace = await provenance.trace_provenance(
            info.context.store,
            node_id,
            target_label=(target_label or NodeLabel.RESEARCH_GOAL).to_domain(),
            max_hops=8 if max_hops is None else max_hops,
            session_id=session_id,
        )
        return ProvenanceTrace(
            start_node=to_node(trace.start),
            path=Paced(_provenance_step(step) for step in trace.path),
            chain=Paced(_provenance_step(step) for step in trace.chain),
            broken=trace.broken,
            truncated=trace.truncated,
            reason=trace.reason,
        )

    @strawberry.field(description="Unfold one subagent scope: its children and their products.")
    async def scope_expansion(
        self, info: Ctx, scope_task_id: str, session_id: str
    ) -> SubgraphResult:
        found = await subgraph.scope_expansion(info.context.store, scope_task_id, session_id)
        return _plain_subgraph(found)

    @strawberry.field(description="Unfold one folded product group of the subgraph.")
    async def group_expansion(self, info: Ctx, group_id: str, session_id: str) -> SubgraphResult:
        found = await subgraph.group_expansion(info.context.store, group_id, session_id)
        return _plain_subgraph(found)

    @strawberry.field(description="One artifact version, the code that wrote it and its inputs.")
    async def artifact_provenance(
        self, info: Ctx, artifact_id: str, version: int, session_id: str | None = None
    ) -> ArtifactProvenanceResult:
        found = await artifacts.artifact_provenance(
            info.context.store, artifact_id, version, session_id=session_id
        )
        return ArtifactProvenance(
            artifact=Artifact.from_record(found.artifact),
            producing_code=Code.from_record(found.code) if found.code else None,
            tool_call=ToolCall.from_record(found.tool_call) if found.tool_call else None,
            dependencies=[to_node(node) for node in found.dependencies],
        )


def _plain_subgraph(found: GraphSlice) -> Subgraph:
    return Subgraph(
        nodes=[to_node(node) for node in found.nodes],
        edges=[GraphEdge.from_record(edge) for edge in found.edges],
        groups=[],
        total=found.total,
        truncated=found.truncated,
    )


def _provenance_step(step: provenance.ProvenanceStep) -> ProvenanceStep:
    return ProvenanceStep(
        hop=step.hop,
        node=to_node(step.node),
        via_edge=EdgeType.from_domain(step.via_edge),
        reached_from=strawberry.ID(step.reached_from),
        is_terminal=step.is_terminal,
    )
