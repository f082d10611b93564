"""Root subscription: ``graphEvents(sessionId)``, the session's nodes and edges as they commit."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from enum import Enum
from typing import TYPE_CHECKING

import strawberry
from graphql import GraphQLError
from strawberry.types import Info

from gateway.live.bus import SubscriberLaggedError
from gateway.schema.context import GraphContext
from gateway.schema.nodes import GraphEdge, GraphNode, to_node
from resolvers.errors import MemoryGraphDisabledError
from resolvers.validate import check_text

if TYPE_CHECKING:
    from gateway.live.bus import GraphChange

Ctx = Info[GraphContext, None]


@strawberry.enum
class GraphEventKind(Enum):
    NODE = "NODE"
    EDGE = "EDGE"


@strawberry.type(description="One node or edge written to a session, in commit order.")
class GraphEvent:
    kind: GraphEventKind
    session_id: str
    seq: int = strawberry.field(
        description="Numbers the session's events from 1 while anyone subscribes to it in this "
        "gateway process; a gap means events were missed. Not a durable offset."
    )
    removed: bool = strawberry.field(
        description="True when the node or edge was deleted (session cleanup, version relinking)."
    )
    node: GraphNode | None = strawberry.field(description="The node's state after the write.")
    edge: GraphEdge | None

    @classmethod
    def from_change(cls, change: GraphChange) -> GraphEvent:
        return cls(
            kind=GraphEventKind.NODE if change.node is not None else GraphEventKind.EDGE,
            session_id=change.session_id,
            seq=change.seq,
            removed=change.removed,
            node=to_node(change.node) if change.node is not None else None,
            edge=GraphEdge.from_record(change.edge) if change.edge is not None else None,
        )


@strawberry.type
class GraphSubscription:
    @strawberry.subscription(
        description="Every node and edge written to the session from now on, in commit order. "
        "A subscriber that falls too far behind is dropped with the error code "
        "SUBSCRIBER_LAGGED (fetch the session again, then resubscribe)."
    )
    async def graph_events(self, info: Ctx, session_id: str) -> AsyncGenerator[GraphEvent, None]:
        check_text("session_id", session_id, "sessionId")
        runtime = info.context.runtime
        if not runtime.state.enabled:
            raise MemoryGraphDisabledError()
        with runtime.events.subscribe(session_id) as subscription:
            try:
                async for change in subscription:
                    info.context.fresh_loaders()
                    yield GraphEvent.from_change(change)
            except SubscriberLaggedError as exc:
                raise GraphQLError(
                    str(exc), extensions={"code": "SUBSCRIBER_LAGGED", "capacity": exc.capacity}
                ) from exc
