from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import ErrorCode


class ObserveExecution(BaseModel):
    observe_execution: Union[
        "ObserveExecutionObserveExecutionObserved",
        "ObserveExecutionObserveExecutionMemoryGraphDisabled",
        "ObserveExecutionObserveExecutionMemoryGraphUnreachable",
        "ObserveExecutionObserveExecutionInvalidInput",
        "ObserveExecutionObserveExecutionKeyOwnedByOtherSession",
    ] = Field(alias="observeExecution", discriminator="typename__")


class ObserveExecutionObserveExecutionObserved(BaseModel):
    typename__: Literal["Observed"] = Field(alias="__typename")
    written: int
    node_ids: list[str] = Field(alias="nodeIds")


class ObserveExecutionObserveExecutionMemoryGraphDisabled(BaseModel):
    typename__: Literal["MemoryGraphDisabled"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class ObserveExecutionObserveExecutionMemoryGraphUnreachable(BaseModel):
    typename__: Literal["MemoryGraphUnreachable"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class ObserveExecutionObserveExecutionInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class ObserveExecutionObserveExecutionKeyOwnedByOtherSession(BaseModel):
    typename__: Literal["KeyOwnedByOtherSession"] = Field(alias="__typename")
    code: ErrorCode
    message: str


ObserveExecution.model_rebuild()
