"""Artifact provenance: one artifact version, the Code and ToolCall that made it, and the
inputs that Code read (reference §5.7).

Dependencies are the live Artifact versions and SourceFiles with an ``input`` edge into the
producing Code, ordered by ``logical_name`` (Artifacts) / ``name`` (SourceFiles), then key. When
several Codes or ToolCalls claim the artifact, the most recent (``seq``, ``created_at``, id) wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from resolvers.errors import InvalidInputError, NodeNotFoundError
from resolvers.merging import newest
from resolvers.records import Direction, EdgeType, Label, NodeRecord, artifact_key, node_id
from resolvers.resolve import in_scope

if TYPE_CHECKING:
    from resolvers.store import GraphReader

INPUT_LABELS = frozenset({Label.ARTIFACT, Label.SOURCE_FILE})


@dataclass(frozen=True, slots=True)
class ArtifactProvenance:
    artifact: NodeRecord
    code: NodeRecord | None
    tool_call: NodeRecord | None
    dependencies: list[NodeRecord]


async def artifact_provenance(
    store: GraphReader, artifact_id: str, version: int, *, session_id: str | None = None
) -> ArtifactProvenance:
    """The version's producing Code and ToolCall and the Code's inputs."""
    artifact_id = artifact_id.strip()
    if not artifact_id:
        raise InvalidInputError("artifactId", "must not be empty")
    if version < 1:
        raise InvalidInputError("version", "must be 1 or more")
    key = artifact_key(artifact_id, version)
    (artifact,) = await store.get_nodes([node_id(Label.ARTIFACT, key)])
    if not in_scope(artifact, session_id):
        raise NodeNotFoundError(key, "artifact version")
    code = await _producer(store, artifact.id, Label.CODE, session_id)
    tool_call = await _producer(store, code.id, Label.TOOL_CALL, session_id) if code else None
    dependencies = await _inputs(store, code.id, session_id) if code else []
    return ArtifactProvenance(artifact, code, tool_call, dependencies)


async def _producer(
    store: GraphReader, product: str, label: Label, session_id: str | None
) -> NodeRecord | None:
    edges = await store.expand([product], EdgeType.PRODUCES, Direction.IN)
    nodes = await store.get_nodes([edge.source for edge in edges])
    found = [node for node in nodes if in_scope(node, session_id) and node.label is label]
    return max(found, key=newest) if found else None


async def _inputs(store: GraphReader, code: str, session_id: str | None) -> list[NodeRecord]:
    edges = await store.expand([code], EdgeType.INPUT, Direction.IN)
    nodes = await store.get_nodes([edge.source for edge in edges])
    found = [node for node in nodes if in_scope(node, session_id) and node.label in INPUT_LABELS]
    return sorted(
        found, key=lambda node: (str(node.get("logical_name", node.get("name", ""))), node.key)
    )
