from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import EdgeType, ErrorCode, NodeLabel


class SessionGraph(BaseModel):
    session: Union[
        "SessionGraphSessionSession",
        "SessionGraphSessionMemoryGraphDisabled",
        "SessionGraphSessionMemoryGraphUnreachable",
        "SessionGraphSessionNodeNotFound",
        "SessionGraphSessionInvalidInput",
        "SessionGraphSessionQueryLimitExceeded",
    ] = Field(discriminator="typename__")


class SessionGraphSessionSession(BaseModel):
    typename__: Literal["Session"] = Field(alias="__typename")
    session_id: str = Field(alias="sessionId")
    chain: list["SessionGraphSessionSessionChain"]
    edges: "SessionGraphSessionSessionEdges"


class SessionGraphSessionSessionChain(BaseModel):
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


class SessionGraphSessionSessionEdges(BaseModel):
    total: int
    edges: list["SessionGraphSessionSessionEdgesEdges"]


class SessionGraphSessionSessionEdgesEdges(BaseModel):
    type_: EdgeType = Field(alias="type")
    source: str
    target: str


class SessionGraphSessionMemoryGraphDisabled(BaseModel):
    typename__: Literal["MemoryGraphDisabled"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class SessionGraphSessionMemoryGraphUnreachable(BaseModel):
    typename__: Literal["MemoryGraphUnreachable"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class SessionGraphSessionNodeNotFound(BaseModel):
    typename__: Literal["NodeNotFound"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class SessionGraphSessionInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class SessionGraphSessionQueryLimitExceeded(BaseModel):
    typename__: Literal["QueryLimitExceeded"] = Field(alias="__typename")
    code: ErrorCode
    message: str


SessionGraph.model_rebuild()
SessionGraphSessionSession.model_rebuild()
SessionGraphSessionSessionEdges.model_rebuild()
