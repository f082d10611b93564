"""``exportSession``: a session rendered as PROV, GraphML or Mermaid text, for frontends."""

from __future__ import annotations

import asyncio
from enum import Enum
from typing import Annotated

import strawberry
from strawberry.types import Info

from gateway.exports import formats as exports
from gateway.schema.context import GraphContext
from gateway.schema.errors import (
    InvalidInput,
    MemoryGraphDisabled,
    MemoryGraphUnreachable,
    NodeNotFound,
    QueryLimitExceeded,
)

Ctx = Info[GraphContext, None]


@strawberry.enum(name="ExportFormat")
class GraphExportFormat(Enum):
    PROV_JSON = "prov-json"
    PROV_JSONLD = "prov-jsonld"
    GRAPHML = "graphml"
    MERMAID = "mermaid"

    def to_domain(self) -> exports.ExportFormat:
        return exports.ExportFormat(self.value)


@strawberry.type(description="A session rendered in an export format.")
class SessionExport:
    format: GraphExportFormat
    media_type: str = strawberry.field(description="The IANA media type of `content`.")
    content: str


ExportResult = Annotated[
    SessionExport
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | NodeNotFound
    | InvalidInput
    | QueryLimitExceeded,
    strawberry.union("ExportResult"),
]


@strawberry.type
class ExportQuery:
    @strawberry.field(
        description="Every live node and edge of a session as PROV-JSON, PROV-JSON-LD, GraphML "
        f"or Mermaid (up to {exports.GRAPHQL_MAX_NODES} nodes; the `science-memory export` "
        "command has no limit). The PROV mapping is in docs/exports.md."
    )
    async def export_session(
        self, info: Ctx, session_id: str, format: GraphExportFormat
    ) -> ExportResult:
        records = await exports.load_session(info.context.store, session_id)
        # Rendering a large session is CPU work: keep it off the event loop.
        rendered = await asyncio.to_thread(exports.export_session, records, format.to_domain())
        return SessionExport(
            format=format, media_type=rendered.media_type, content=rendered.content
        )
