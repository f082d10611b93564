from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import ErrorCode


class ObserveSessionFirstMessage(BaseModel):
    observe_session_first_message: Union[
        "ObserveSessionFirstMessageObserveSessionFirstMessageObserved",
        "ObserveSessionFirstMessageObserveSessionFirstMessageMemoryGraphDisabled",
        "ObserveSessionFirstMessageObserveSessionFirstMessageMemoryGraphUnreachable",
        "ObserveSessionFirstMessageObserveSessionFirstMessageInvalidInput",
        "ObserveSessionFirstMessageObserveSessionFirstMessageKeyOwnedByOtherSession",
    ] = Field(alias="observeSessionFirstMessage", discriminator="typename__")


class ObserveSessionFirstMessageObserveSessionFirstMessageObserved(BaseModel):
    typename__: Literal["Observed"] = Field(alias="__typename")
    written: int
    node_ids: list[str] = Field(alias="nodeIds")


class ObserveSessionFirstMessageObserveSessionFirstMessageMemoryGraphDisabled(
    BaseModel
):
    typename__: Literal["MemoryGraphDisabled"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class ObserveSessionFirstMessageObserveSessionFirstMessageMemoryGraphUnreachable(
    BaseModel
):
    typename__: Literal["MemoryGraphUnreachable"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class ObserveSessionFirstMessageObserveSessionFirstMessageInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class ObserveSessionFirstMessageObserveSessionFirstMessageKeyOwnedByOtherSession(
    BaseModel
):
    typename__: Literal["KeyOwnedByOtherSession"] = Field(alias="__typename")
    code: ErrorCode
    message: str


ObserveSessionFirstMessage.model_rebuild()
