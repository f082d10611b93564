"""Success payloads and the ``…Result`` unions of every root field."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

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
    to_node,
)
from gateway.schema.pacing import Paced, paced_map

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from gateway.runtime.state import HealthReport
    from gateway.schema.selection import Fields
    from resolvers.artifacts import ArtifactProvenance
    from resolvers.cleanup import CleanupCounts
    from resolvers.declare import Chip, ClaimResult, EvidenceResult
    from resolvers.observe import ArtifactResult, WriteResult
    from resolvers.provenance import ProvenanceStep, ProvenanceTrace
    from resolvers.records import GraphSlice
    from resolvers.subgraph import ProductGroup, SessionGraph
    from resolvers.validate import RejectedRecord


@strawberry.type(description="The gateway's state.")
class Health:
    status: HealthStatus
    backend: GraphBackend
    enabled: bool
    reachable: bool
    pending_writes: int = strawberry.field(description="Observe events waiting for replay.")
    refused_writes: int = strawberry.field(
        description=(
            "Observe events answered `queued: true` that Neo4j refused or failed on when "
            "replayed (e.g. another session took their key first): never applied, each kept "
            "whole in `<dataDir>/outbox/refused.jsonl` to be read and sent again."
        )
    )
    version: str
    reason: str | None = strawberry.field(
        default=None,
        description="Why the status is DEGRADED (e.g. the file store's disk is full); null else.",
    )

    @classmethod
    def from_record(cls, report: HealthReport) -> Health:
        return cls(
            status=HealthStatus(report.status),
            backend=GraphBackend.from_domain(report.backend),
            enabled=report.enabled,
            reachable=report.reachable,
            pending_writes=report.pending_writes,
            refused_writes=report.refused_writes,
            version=report.version,
            reason=report.reason,
        )


@strawberry.type(
    name="ProductGroup",
    description="Several products of one kind made inside one subagent scope.",
)
class ProductGroupPayload:
    id: strawberry.ID = strawberry.field(description="`_group:<scope task id>:<kind>`")
    scope_id: strawberry.ID
    kind: NodeLabel
    count: int
    members: list[strawberry.ID]

    @classmethod
    def from_record(cls, group: ProductGroup) -> ProductGroupPayload:
        return cls(
            id=strawberry.ID(group.id),
            scope_id=strawberry.ID(group.scope_id),
            kind=NodeLabel.from_domain(group.kind),
            count=len(group.members),
            members=[strawberry.ID(member) for member in group.members],
        )


@strawberry.type(
    description="A session's nodes and the edges among them. Every edge's `source` and "
    "`target` is the id of a node in `nodes` or, with `fold`, of a group in `groups` "
    "(`_group:…`); a group's scope and members are in `nodes`."
)
class Subgraph:
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    groups: list[ProductGroupPayload] = strawberry.field(
        description="Folded products of subagent scopes (when `fold` is on)."
    )
    total: int
    truncated: bool

    @classmethod
    async def from_session_graph(
        cls, graph: SessionGraph, nodes: Fields = None, edges: Fields = None
    ) -> Subgraph:
        """``nodes``, ``edges``: the attributes the request reads of each (``selection``)."""
        return cls(
            # Up to 5,000 nodes: converted in steps too, not only serialised in steps.
            nodes=await paced_map(to_node, graph.nodes, nodes),
            edges=await paced_map(GraphEdge.from_record, graph.edges, edges),
            groups=[ProductGroupPayload.from_record(group) for group in graph.groups],
            total=graph.total,
            truncated=graph.truncated,
        )

    @classmethod
    def from_record(cls, found: GraphSlice, nodes: Fields = None, edges: Fields = None) -> Subgraph:
        """A slice without folded groups (a scope's or a group's expansion)."""
        return cls(
            nodes=[to_node(node, nodes) for node in found.nodes],
            edges=[GraphEdge.from_record(edge, edges) for edge in found.edges],
            groups=[],
            total=found.total,
            truncated=found.truncated,
        )


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

    @classmethod
    def from_record(cls, found: GraphSlice, nodes: Fields = None, edges: Fields = None) -> Chain:
        """``nodes``, ``edges``: the attributes the request reads of each (``selection``)."""
        return cls(
            nodes=Paced(to_node(node, nodes) for node in found.nodes),
            edges=Paced(GraphEdge.from_record(edge, edges) for edge in found.edges),
            total=found.total,
            truncated=found.truncated,
            end_cursor=found.end_cursor,
        )


@strawberry.type
class ChainKindAvailability:
    kind: ChainKind
    exists: bool


@strawberry.type
class ChainAvailability:
    entries: list[ChainKindAvailability]

    @classmethod
    def from_record(cls, found: Mapping[ChainKind, bool]) -> ChainAvailability:
        return cls(
            entries=[
                ChainKindAvailability(kind=kind, exists=exists) for kind, exists in found.items()
            ]
        )


@strawberry.type(
    name="ProvenanceStep",
    description="A node a trace reached, and the stored edge it was reached by.",
)
class ProvenanceStepPayload:
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

    @classmethod
    def from_record(cls, step: ProvenanceStep) -> ProvenanceStepPayload:
        return cls(
            hop=step.hop,
            node=to_node(step.node),
            via_edge=EdgeType.from_domain(step.via_edge),
            reached_from=strawberry.ID(step.reached_from),
            is_terminal=step.is_terminal,
        )


@strawberry.type(
    name="ProvenanceTrace",
    description="An upstream exploration with a verdict; it never outputs a decision.",
)
class ProvenanceTracePayload:
    start_node: GraphNode
    path: list[ProvenanceStepPayload] = strawberry.field(
        description="The witness: a shortest upstream path from the start to a target node, "
        "every stored edge walked, ending on the terminal; empty when broken or truncated."
    )
    chain: list[ProvenanceStepPayload] = strawberry.field(
        description="The exploration, hop by hop: the nodes reached over single edges, the "
        "ends of each run of `next` edges; the last hop only its terminal nodes when it "
        "reached the target."
    )
    broken: bool
    truncated: bool
    reason: str | None

    @classmethod
    def from_record(cls, trace: ProvenanceTrace) -> ProvenanceTracePayload:
        return cls(
            start_node=to_node(trace.start),
            path=Paced(ProvenanceStepPayload.from_record(step) for step in trace.path),
            chain=Paced(ProvenanceStepPayload.from_record(step) for step in trace.chain),
            broken=trace.broken,
            truncated=trace.truncated,
            reason=trace.reason,
        )


@strawberry.type(
    name="ArtifactProvenance",
    description="Addressing information of one artifact version and its inputs.",
)
class ArtifactProvenancePayload:
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

    @classmethod
    def from_record(cls, found: ArtifactProvenance) -> ArtifactProvenancePayload:
        return cls(
            artifact=Artifact.from_record(found.artifact),
            producing_code=Code.from_record(found.code) if found.code else None,
            tool_call=ToolCall.from_record(found.tool_call) if found.tool_call else None,
            dependencies=[to_node(node) for node in found.dependencies],
        )


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

    @classmethod
    def from_record(cls, result: WriteResult, rejected: Sequence[RejectedRecord] = ()) -> Observed:
        """``rejected``: the records of a batch left out before the write (``accept_products``)."""
        return cls(
            written=result.written,
            node_ids=[strawberry.ID(node) for node in result.node_ids],
            rejected=[Rejected(index=r.index, field=r.field, message=r.message) for r in rejected],
        )


@strawberry.type
class ArtifactRegistered:
    artifact: Artifact
    written: int

    @classmethod
    def from_record(cls, result: ArtifactResult) -> ArtifactRegistered:
        return cls(artifact=Artifact.from_record(result.artifact), written=result.written)


@strawberry.type(name="EvidenceDeclared")
class EvidenceDeclaredPayload:
    evidence_id: str
    evidence: Evidence

    @classmethod
    def from_record(cls, result: EvidenceResult) -> EvidenceDeclaredPayload:
        return cls(evidence_id=result.evidence.key, evidence=Evidence.from_record(result.evidence))


@strawberry.type(name="Chip")
class ChipPayload:
    alias: str
    kind: ChipKind
    id: str = strawberry.field(description="The bare domain id (evidence, artifact or file id).")
    node_id: strawberry.ID
    label: str
    version: int | None

    @classmethod
    def from_record(cls, chip: Chip) -> ChipPayload:
        return cls(
            alias=chip.alias,
            kind=ChipKind(chip.kind.value),
            id=chip.id,
            node_id=strawberry.ID(chip.node_id),
            label=chip.alias,
            version=chip.version,
        )


@strawberry.type(name="ClaimDeclared")
class ClaimDeclaredPayload:
    claim_id: str
    claim: Claim
    chip_map: list[ChipPayload]

    @classmethod
    def from_record(cls, result: ClaimResult) -> ClaimDeclaredPayload:
        return cls(
            claim_id=result.claim.key,
            claim=Claim.from_record(result.claim),
            chip_map=[ChipPayload.from_record(chip) for chip in result.chips],
        )


@strawberry.type(name="ClaimsLinked")
class ClaimsLinkedPayload:
    linked: int


@strawberry.type
class Cleanup:
    marked: int
    deleted: int

    @classmethod
    def from_record(cls, result: CleanupCounts) -> Cleanup:
        return cls(marked=result.marked, deleted=result.deleted)


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
    | InvalidInput
    | QueryLimitExceeded,
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
    ProvenanceTracePayload
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | NodeNotFound
    | InvalidInput
    | QueryLimitExceeded,
    strawberry.union("ProvenanceResult"),
]
ArtifactProvenanceResult = Annotated[
    ArtifactProvenancePayload
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
    EvidenceDeclaredPayload
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | InvalidInput
    | DeclareRejected,
    strawberry.union("DeclareEvidenceResult"),
]
DeclareClaimResult = Annotated[
    ClaimDeclaredPayload
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | InvalidInput
    | DeclareRejected
    | KeyOwnedByOtherSession,
    strawberry.union("DeclareClaimResult"),
]
LinkClaimsResult = Annotated[
    ClaimsLinkedPayload
    | MemoryGraphDisabled
    | MemoryGraphUnreachable
    | InvalidInput
    | DeclareRejected
    | KeyOwnedByOtherSession,
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
