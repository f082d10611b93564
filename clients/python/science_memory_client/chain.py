from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import ErrorCode, NodeLabel


class Chain(BaseModel):
    get_chain: Union[
        "ChainGetChainChain",
        "ChainGetChainMemoryGraphDisabled",
        "ChainGetChainMemoryGraphUnreachable",
        "ChainGetChainNodeNotFound",
        "ChainGetChainInvalidInput",
        "ChainGetChainQueryLimitExceeded",
    ] = Field(alias="getChain", discriminator="typename__")


class ChainGetChainChain(BaseModel):
    typename__: Literal["Chain"] = Field(alias="__typename")
    total: int
    nodes: list["ChainGetChainChainNodes"]


class ChainGetChainChainNodes(BaseModel):
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


class ChainGetChainMemoryGraphDisabled(BaseModel):
    typename__: Literal["MemoryGraphDisabled"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class ChainGetChainMemoryGraphUnreachable(BaseModel):
    typename__: Literal["MemoryGraphUnreachable"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class ChainGetChainNodeNotFound(BaseModel):
    typename__: Literal["NodeNotFound"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class ChainGetChainInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class ChainGetChainQueryLimitExceeded(BaseModel):
    typename__: Literal["QueryLimitExceeded"] = Field(alias="__typename")
    code: ErrorCode
    message: str


Chain.model_rebuild()
ChainGetChainChain.model_rebuild()
