from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import ErrorCode


class ObserveToolCall(BaseModel):
    observe_tool_call: Union[
        "ObserveToolCallObserveToolCallObserved",
        "ObserveToolCallObserveToolCallMemoryGraphDisabled",
        "ObserveToolCallObserveToolCallMemoryGraphUnreachable",
        "ObserveToolCallObserveToolCallInvalidInput",
        "ObserveToolCallObserveToolCallKeyOwnedByOtherSession",
    ] = Field(alias="observeToolCall", discriminator="typename__")


class ObserveToolCallObserveToolCallObserved(BaseModel):
    typename__: Literal["Observed"] = Field(alias="__typename")
    written: int
    node_ids: list[str] = Field(alias="nodeIds")


class ObserveToolCallObserveToolCallMemoryGraphDisabled(BaseModel):
    typename__: Literal["MemoryGraphDisabled"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class ObserveToolCallObserveToolCallMemoryGraphUnreachable(BaseModel):
    typename__: Literal["MemoryGraphUnreachable"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class ObserveToolCallObserveToolCallInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class ObserveToolCallObserveToolCallKeyOwnedByOtherSession(BaseModel):
    typename__: Literal["KeyOwnedByOtherSession"] = Field(alias="__typename")
    code: ErrorCode
    message: str


ObserveToolCall.model_rebuild()
