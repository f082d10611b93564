"""Root query fields: parse arguments, call one use case, map the records to GraphQL types."""

from __future__ import annotations

from typing import TYPE_CHECKING

import strawberry
from strawberry.types import Info

from gateway.schema.context import GraphContext
from gateway.schema.enums import ChainKind, EdgeType, MatchMode, NodeLabel
from gateway.schema.nodes import EDGE_TYPE_NAMES, NODE_TYPE_NAMES, to_node
from gateway.schema.results import (
    ArtifactProvenancePayload,
    ArtifactProvenanceResult,
    Chain,
    ChainAvailability,
    ChainExistsResult,
    ChainResult,
    EdgeListResult,
    Health,
    NodeListResult,
    NodeResult,
    ProvenanceResult,
    ProvenanceTracePayload,
    Subgraph,
    SubgraphResult,
)
from gateway.schema.selection import Fields, read_fields
from gateway.schema.session import Session, SessionResult, edge_list, node_list
from resolvers import artifacts, chains, provenance, resolve, search, sessions, subgraph

if TYPE_CHECKING:
    from resolvers.records import Label

Ctx = Info[GraphContext, None]


def _labels(labels: list[NodeLabel] | None) -> list[Label] | None:
    return [label.to_domain() for label in labels] if labels else None


def _listed_fields(info: Ctx) -> tuple[Fields, Fields]:
    """What the request reads of the nodes and the edges its answer lists (a ``Subgraph``, a
    ``Chain``)."""
    return (
        read_fields(info, "nodes", NODE_TYPE_NAMES),
        read_fields(info, "edges", EDGE_TYPE_NAMES),
    )


@strawberry.type
class GraphQuery:
    @strawberry.field(description="The gateway's state; answers even when disabled.")
    async def health(self, info: Ctx) -> Health:
        return Health.from_record(await info.context.runtime.health())

    @strawberry.field(description="One node by global id or domain key.")
    async def node(
        self, info: Ctx, node_id: strawberry.ID, session_id: str | None = None
    ) -> NodeResult:
        record = await resolve.resolve_node(info.context.store, node_id, session_id=session_id)
        return to_node(record)  # type: ignore[return-value]

    @strawberry.field(description="A session's goal, nodes, edges and chain.")
    async def session(self, info: Ctx, session_id: str) -> SessionResult:
        return Session(session_id=await sessions.get_session(info.context.store, session_id))

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
            first=first,
            fold=fold is not False,
        )
        return await Subgraph.from_session_graph(graph, *_listed_fields(info))

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
            first=first,
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
            first=first,
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
            first=first,
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
        return Chain.from_record(found, *_listed_fields(info))

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
        return ChainAvailability.from_record(found)

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
            target_label=target_label.to_domain() if target_label else None,
            max_hops=max_hops,
            session_id=session_id,
        )
        return ProvenanceTracePayload.from_record(trace)

    @strawberry.field(description="Unfold one subagent scope: its children and their products.")
    async def scope_expansion(
        self, info: Ctx, scope_task_id: str, session_id: str
    ) -> SubgraphResult:
        found = await subgraph.scope_expansion(info.context.store, scope_task_id, session_id)
        return Subgraph.from_record(found, *_listed_fields(info))

    @strawberry.field(description="Unfold one folded product group of the subgraph.")
    async def group_expansion(self, info: Ctx, group_id: str, session_id: str) -> SubgraphResult:
        found = await subgraph.group_expansion(info.context.store, group_id, session_id)
        return Subgraph.from_record(found, *_listed_fields(info))

    @strawberry.field(description="One artifact version, the code that wrote it and its inputs.")
    async def artifact_provenance(
        self, info: Ctx, artifact_id: str, version: int, session_id: str | None = None
    ) -> ArtifactProvenanceResult:
        found = await artifacts.artifact_provenance(
            info.context.store, artifact_id, version, session_id=session_id
        )
        return ArtifactProvenancePayload.from_record(found)
