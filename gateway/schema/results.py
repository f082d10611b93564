"""Success payloads and the ``…Result`` unions of every root field."""

from __future__ import annotations

from typing import Annotated

import strawberry

from gateway.schema.enums import ChainKind, ChipKind, EdgeType, HealthStatus, NodeLabel
from gateway.schema.errors import (
    Backend,
    DeclareRejected,
    InvalidInput,
    MemoryGraphDisabled,
    MemoryGraphUnreachable,
    NodeNotFound,
    QueryLimitExceeded,
)
from gateway.schema.nodes import (
    Artifact,
    Claim,
    Code,
    Evidence,
    GraphEdge,
    GraphNode,
    Paper,
    ResearchGoal,
    SourceFile,
    Task,
    ToolCall,
)


@strawberry.type(description="The gateway's state.")
class Health:
    status: HealthStatus
    backend: Backend
    enabled: bool
    reachable: bool
    pending_writes: int = strawberry.field(description="Observe events waiting for replay.")
    version: str


@strawberry.type(description="A session's nodes and the edges among them.")
class ProductGroup:
    id: strawberry.ID = strawberry.field(description="`_group:<scope task id>:<kind>`")
    scope_id: strawberry.ID
    kind: NodeLabel
    count: int
    members: list[strawberry.ID]


@strawberry.type
class Subgraph:
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    groups: list[ProductGroup] = strawberry.field(
        description="Folded products of subagent scopes (when `fold` is on)."
    )
    total: int
    truncated: bool


@strawberry.type
class NodeList:
    nodes: list[GraphNode]
    total: int
    truncated: bool
    end_cursor: str | None


@strawberry.type
class EdgeList:
    edges: list[GraphEdge]
    nodes: list[GraphNode]
    total: int
    truncated: bool
    end_cursor: str | None


@strawberry.type
class Chain:
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    total: int
    truncated: bool


@strawberry.type
class ChainKindAvailability:
    kind: ChainKind
    exists: bool


@strawberry.type
class ChainAvailability:
    entries: list[ChainKindAvailability]


@strawberry.type(description="A node a trace reached, and the stored edge it was reached by.")
class ProvenanceStep:
    hop: int = strawberry.field(
        description="The hop it was first reached at (a run of `next` edges is one hop)."
    )
    node: GraphNode
    via_edge: EdgeType = strawberry.field(
        description="The type of the stored edge from `node` to `reachedFrom`."
    )
    reached_from: strawberry.ID = strawberry.field(
        description="The id of the node it was reached from (downstream of it)."
    )
    is_terminal: bool = strawberry.field(description="Whether `node` has the target label.")


@strawberry.type(description="An upstream exploration with a verdict; it never outputs a decision.")
class ProvenanceTrace:
    start_node: GraphNode
    path: list[ProvenanceStep] = strawberry.field(
        description="The witness: a shortest upstream path from the start to a target node, "
        "every stored edge walked, ending on the terminal; empty when broken or truncated."
    )
    chain: list[ProvenanceStep] = strawberry.field(
        description="The exploration, hop by hop: the nodes reached over single edges, the "
        "ends of each run of `next` edges; the last hop only its terminal nodes when it "
        "reached the target."
    )
    broken: bool
    truncated: bool
    reason: str | None


@strawberry.type(description="Addressing information of one artifact version and its inputs.")
class ArtifactProvenance:
    artifact: Artifact
    code: Code | None
    tool_call: ToolCall | None
    dependencies: list[GraphNode]


@strawberry.type(description="What an observe wrote.")
class Observed:
    written: int = strawberry.field(description="Nodes and edges created or changed.")
    node_ids: list[strawberry.ID] = strawberry.field(description="Every node the event touched.")


@strawberry.type
class ArtifactRegistered:
    artifact: Artifact
    written: int


@strawberry.type
class EvidenceDeclared:
    evidence_id: str
    evidence: Evidence


@strawberry.type
class Chip:
    alias: str
    kind: ChipKind
    id: str = strawberry.field(description="The bare domain id (evidence, artifact or file id).")
    node_id: strawberry.ID
    label: str
    version: int | None


@strawberry.type
class ClaimDeclared:
    claim_id: str
    claim: Claim
    chip_map: list[Chip]


@strawberry.type
class ClaimsLinked:
    linked: int


@strawberry.type
class Cleanup:
    marked: int
    deleted: int


NodeResult = Annotated[
    ResearchGoal
    | Task
    | ToolCall
    | Code
    | Artifact
    | Paper
    | Evidence
    | Claim
    | SourceFile
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | NodeNotFound
    | InvalidInput,
    strawberry.union("NodeResult"),
]


SubgraphResult = Annotated[
    Subgraph
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | NodeNotFound
    | InvalidInput
    | QueryLimitExceeded,
    strawberry.union("SubgraphResult"),
]
NodeListResult = Annotated[
    NodeList
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | NodeNotFound
    | InvalidInput
    | QueryLimitExceeded,
    strawberry.union("NodeListResult"),
]
EdgeListResult = Annotated[
    EdgeList
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | NodeNotFound
    | InvalidInput
    | QueryLimitExceeded,
    strawberry.union("EdgeListResult"),
]
ChainResult = Annotated[
    Chain
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | NodeNotFound
    | InvalidInput
    | QueryLimitExceeded,
    strawberry.union("ChainResult"),
]
ChainExistsResult = Annotated[
    ChainAvailability
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | NodeNotFound
    | InvalidInput
    | QueryLimitExceeded,
    strawberry.union("ChainExistsResult"),
]
ProvenanceResult = Annotated[
    ProvenanceTrace
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | NodeNotFound
    | InvalidInput
    | QueryLimitExceeded,
    strawberry.union("ProvenanceResult"),
]
ArtifactProvenanceResult = Annotated[
    ArtifactProvenance
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | NodeNotFound
    | InvalidInput
    | QueryLimitExceeded,
    strawberry.union("ArtifactProvenanceResult"),
]
ObserveResult = Annotated[
    Observed | MemoryGraphDisabled | MemoryGraphUnreachable | InvalidInput,
    strawberry.union("ObserveResult"),
]
DeclareArtifactResult = Annotated[
    ArtifactRegistered | MemoryGraphDisabled | MemoryGraphUnreachable | InvalidInput,
    strawberry.union("DeclareArtifactResult"),
]
DeclareEvidenceResult = Annotated[
    EvidenceDeclared
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | InvalidInput
    | DeclareRejected,
    strawberry.union("DeclareEvidenceResult"),
]
DeclareClaimResult = Annotated[
    ClaimDeclared | MemoryGraphDisabled | MemoryGraphUnreachable | InvalidInput | DeclareRejected,
    strawberry.union("DeclareClaimResult"),
]
LinkClaimsResult = Annotated[
    ClaimsLinked | MemoryGraphDisabled | MemoryGraphUnreachable | InvalidInput | DeclareRejected,
    strawberry.union("LinkClaimsResult"),
]
CleanupResult = Annotated[
    Cleanup | MemoryGraphDisabled | MemoryGraphUnreachable | InvalidInput,
    strawberry.union("CleanupResult"),
]
HealthResult = Annotated[
    Health | MemoryGraphDisabled | MemoryGraphUnreachable | InvalidInput,
    strawberry.union("HealthResult"),
]
