"""Success payloads and the ``…Result`` unions of every root field."""

from __future__ import annotations

from typing import Annotated

import strawberry

from gateway.schema.enums import ChainKind, ChipKind, EdgeType, HealthStatus, NodeLabel
from gateway.schema.errors import (
    DeclareRejected,
    GraphBackend,
    InvalidInput,
    KeyOwnedByOtherSession,
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
    backend: GraphBackend
    enabled: bool
    reachable: bool
    pending_writes: int = strawberry.field(description="Observe events waiting for replay.")
    version: str
    reason: str | None = strawberry.field(
        default=None,
        description="Why the status is DEGRADED (e.g. the file store's disk is full); null else.",
    )


@strawberry.type(description="Several products of one kind made inside one subagent scope.")
class ProductGroup:
    id: strawberry.ID = strawberry.field(description="`_group:<scope task id>:<kind>`")
    scope_id: strawberry.ID
    kind: NodeLabel
    count: int
    members: list[strawberry.ID]


@strawberry.type(
    description="A session's nodes and the edges among them. Every edge's `source` and "
    "`target` is the id of a node in `nodes` or, with `fold`, of a group in `groups` "
    "(`_group:…`); a group's scope and members are in `nodes`."
)
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


@strawberry.type(
    description="A chain, paged: up to `first` nodes, always with the source node and the "
    "chain's anchor (the goal of VIEW_GOAL); `endCursor` continues when `truncated`."
)
class Chain:
    nodes: list[GraphNode]
    edges: list[GraphEdge] = strawberry.field(description="The walked edges among `nodes`.")
    total: int = strawberry.field(description="Every node of the whole chain.")
    truncated: bool
    end_cursor: str | None = None


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
    producing_code: Code | None = strawberry.field(description="The Code that produced it.")
    tool_call: ToolCall | None
    dependencies: list[GraphNode]

    @strawberry.field(
        deprecation_reason="Use `producingCode`: `code` clashes with `Error.code` in client "
        "documents that select both."
    )
    def code(self) -> Code | None:
        return self.producing_code


@strawberry.type(
    name="RejectedRecord",
    description="A record of a batch that was left out; the other records were recorded.",
)
class Rejected:
    index: int = strawberry.field(description="Its position in the batch, from 0.")
    field: str = strawberry.field(description="The field at fault, e.g. `input.records[3].url`.")
    message: str


@strawberry.type(description="What an observe wrote.")
class Observed:
    written: int = strawberry.field(description="Nodes and edges created or changed.")
    node_ids: list[strawberry.ID] = strawberry.field(description="Every node the event touched.")
    rejected: list[Rejected] = strawberry.field(
        default_factory=list,
        description="Records of a batch (a search's records or products) left out as invalid; "
        "the valid ones were recorded. Empty when every record was accepted.",
    )


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
    Observed | MemoryGraphDisabled | MemoryGraphUnreachable | InvalidInput | KeyOwnedByOtherSession,
    strawberry.union("ObserveResult"),
]
DeclareArtifactResult = Annotated[
    ArtifactRegistered
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | InvalidInput
    | KeyOwnedByOtherSession,
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
