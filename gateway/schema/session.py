"""``Session``: the scope grouping a session's goal, nodes, edges and main chain."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.types import Info

from gateway.schema.context import GraphContext
from gateway.schema.enums import EdgeType, NodeLabel
from gateway.schema.errors import (
    InvalidInput,
    MemoryGraphDisabled,
    MemoryGraphUnreachable,
    NodeNotFound,
    QueryLimitExceeded,
)
from gateway.schema.nodes import GraphEdge, GraphNode, to_node
from gateway.schema.pacing import Paced
from gateway.schema.results import EdgeList, NodeList
from resolvers import search
from resolvers.records import EdgeRecord, Label, NodeRecord, Page
from resolvers.records import EdgeType as DomainEdgeType
from resolvers.validate import check_first

Ctx = Info[GraphContext, None]


def node_list(page: Page[NodeRecord]) -> NodeList:
    return NodeList(
        nodes=Paced(to_node(node) for node in page.items),
        total=page.total,
        truncated=page.truncated,
        end_cursor=page.end_cursor,
    )


def edge_list(page: Page[EdgeRecord], nodes: list[NodeRecord]) -> EdgeList:
    return EdgeList(
        edges=Paced(GraphEdge.from_record(edge) for edge in page.items),
        nodes=Paced(to_node(node) for node in nodes),
        total=page.total,
        truncated=page.truncated,
        end_cursor=page.end_cursor,
    )


@strawberry.type(description="A session: its goal, nodes, edges and main chain.")
class Session:
    session_id: str

    @strawberry.field(description="The session's research goal, once the first message arrived.")
    async def goal(self, info: Ctx) -> GraphNode | None:
        page = await info.context.store.list_nodes(
            labels=[Label.RESEARCH_GOAL], session_id=self.session_id, limit=1
        )
        return to_node(page.items[0]) if page.items else None

    @strawberry.field(description="Live nodes, newest first.")
    async def nodes(
        self,
        info: Ctx,
        labels: list[NodeLabel] | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> NodeList:
        wanted = [label.to_domain() for label in labels] if labels else list(Label)
        page = await search.nodes_by_type(
            info.context.store,
            wanted,
            session_id=self.session_id,
            first=first or search.DEFAULT_FIRST,
            after=after,
        )
        return node_list(page)

    @strawberry.field(description="Edges among the session's live nodes, newest first.")
    async def edges(
        self,
        info: Ctx,
        types: list[EdgeType] | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> EdgeList:
        wanted = [t.to_domain() for t in types] if types else list(DomainEdgeType)
        page, nodes = await search.edges_by_type(
            info.context.store,
            wanted,
            session_id=self.session_id,
            first=first or search.DEFAULT_FIRST,
            after=after,
        )
        return edge_list(page, nodes)

    @strawberry.field(description="Top-level steps (tool calls and subagent scopes) in order.")
    async def chain(self, info: Ctx, first: int | None = None) -> list[GraphNode]:
        limit = check_first(first, search.MAX_FIRST, search.MAX_FIRST)
        steps = await info.context.store.chain_members(self.session_id, None)
        return Paced(to_node(step) for step in steps[:limit])


SessionResult = Annotated[
    Session
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | NodeNotFound
    | InvalidInput
    | QueryLimitExceeded,
    strawberry.union("SessionResult"),
]
