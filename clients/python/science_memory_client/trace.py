from typing import Literal, Optional, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import EdgeType, ErrorCode, NodeLabel


class Trace(BaseModel):
    trace_provenance: Union[
        "TraceTraceProvenanceProvenanceTrace",
        "TraceTraceProvenanceMemoryGraphDisabled",
        "TraceTraceProvenanceMemoryGraphUnreachable",
        "TraceTraceProvenanceNodeNotFound",
        "TraceTraceProvenanceInvalidInput",
        "TraceTraceProvenanceQueryLimitExceeded",
    ] = Field(alias="traceProvenance", discriminator="typename__")


class TraceTraceProvenanceProvenanceTrace(BaseModel):
    typename__: Literal["ProvenanceTrace"] = Field(alias="__typename")
    broken: bool
    truncated: bool
    reason: Optional[str]
    path: list["TraceTraceProvenanceProvenanceTracePath"]
    chain: list["TraceTraceProvenanceProvenanceTraceChain"]


class TraceTraceProvenanceProvenanceTracePath(BaseModel):
    hop: int
    via_edge: EdgeType = Field(alias="viaEdge")
    reached_from: str = Field(alias="reachedFrom")
    node: "TraceTraceProvenanceProvenanceTracePathNode"


class TraceTraceProvenanceProvenanceTracePathNode(BaseModel):
    typename__: Literal[
        "Artifact",
        "Claim",
        "Code",
        "Evidence",
        "GraphNode",
        "Paper",
        "ResearchGoal",
        "SourceFile",
        "Task",
        "ToolCall",
    ] = Field(alias="__typename")
    id: str
    label: NodeLabel


class TraceTraceProvenanceProvenanceTraceChain(BaseModel):
    hop: int
    via_edge: EdgeType = Field(alias="viaEdge")
    reached_from: str = Field(alias="reachedFrom")
    is_terminal: bool = Field(alias="isTerminal")
    node: "TraceTraceProvenanceProvenanceTraceChainNode"


class TraceTraceProvenanceProvenanceTraceChainNode(BaseModel):
    typename__: Literal[
        "Artifact",
        "Claim",
        "Code",
        "Evidence",
        "GraphNode",
        "Paper",
        "ResearchGoal",
        "SourceFile",
        "Task",
        "ToolCall",
    ] = Field(alias="__typename")
    id: str
    label: NodeLabel


class TraceTraceProvenanceMemoryGraphDisabled(BaseModel):
    typename__: Literal["MemoryGraphDisabled"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class TraceTraceProvenanceMemoryGraphUnreachable(BaseModel):
    typename__: Literal["MemoryGraphUnreachable"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class TraceTraceProvenanceNodeNotFound(BaseModel):
    typename__: Literal["NodeNotFound"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class TraceTraceProvenanceInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class TraceTraceProvenanceQueryLimitExceeded(BaseModel):
    typename__: Literal["QueryLimitExceeded"] = Field(alias="__typename")
    code: ErrorCode
    message: str


Trace.model_rebuild()
TraceTraceProvenanceProvenanceTrace.model_rebuild()
TraceTraceProvenanceProvenanceTracePath.model_rebuild()
TraceTraceProvenanceProvenanceTraceChain.model_rebuild()
