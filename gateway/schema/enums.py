"""GraphQL enums (SPEC §5.1 names) and their domain counterparts."""

from __future__ import annotations

from enum import Enum
from typing import TypeAlias

import strawberry

from resolvers import records
from resolvers.chains import ChainKind as DomainChainKind
from resolvers.search import MatchMode as DomainMatchMode


@strawberry.enum
class NodeLabel(Enum):
    RESEARCH_GOAL = "ResearchGoal"
    TASK = "Task"
    TOOL_CALL = "ToolCall"
    CODE = "Code"
    ARTIFACT = "Artifact"
    PAPER = "Paper"
    EVIDENCE = "Evidence"
    CLAIM = "Claim"
    SOURCE_FILE = "SourceFile"

    def to_domain(self) -> records.Label:
        return records.Label(self.value)

    @classmethod
    def from_domain(cls, label: records.Label) -> NodeLabel:
        # A dict lookup: an Enum call costs a microsecond, paid per node of every answer.
        return _NODE_LABELS[label]


@strawberry.enum
class EdgeType(Enum):
    NEXT = "next"
    PRODUCES = "produces"
    EXTRACTS = "extracts"
    SUPPORTS = "supports"
    STATED_IN = "stated_in"
    SUPERSEDES = "supersedes"
    INPUT = "input"
    CONTAINS = "contains"
    FEEDS = "feeds"

    def to_domain(self) -> records.EdgeType:
        return records.EdgeType(self.value)

    @classmethod
    def from_domain(cls, edge_type: records.EdgeType) -> EdgeType:
        return _EDGE_TYPES[edge_type]


_NODE_LABELS = {label: NodeLabel(label.value) for label in records.Label}
_EDGE_TYPES = {edge_type: EdgeType(edge_type.value) for edge_type in records.EdgeType}


# The domain enums are exposed as they are (registering them returns the same classes).
strawberry.enum(DomainChainKind, name="ChainKind")
strawberry.enum(DomainMatchMode, name="MatchMode")
ChainKind: TypeAlias = DomainChainKind
MatchMode: TypeAlias = DomainMatchMode


@strawberry.enum
class HealthStatus(Enum):
    HEALTHY = "HEALTHY"
    DEGRADED = "DEGRADED"
    NEEDS_PASSWORD = "NEEDS_PASSWORD"
    DISABLED = "DISABLED"


@strawberry.enum
class ChipKind(Enum):
    EVIDENCE = "EVIDENCE"
    ARTIFACT = "ARTIFACT"
    SOURCE_FILE = "SOURCE_FILE"
