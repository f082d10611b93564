from typing import Literal, Optional, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import ChipKind, ErrorCode


class DeclareClaim(BaseModel):
    declare_claim: Union[
        "DeclareClaimDeclareClaimClaimDeclared",
        "DeclareClaimDeclareClaimMemoryGraphDisabled",
        "DeclareClaimDeclareClaimMemoryGraphUnreachable",
        "DeclareClaimDeclareClaimInvalidInput",
        "DeclareClaimDeclareClaimDeclareRejected",
        "DeclareClaimDeclareClaimKeyOwnedByOtherSession",
    ] = Field(alias="declareClaim", discriminator="typename__")


class DeclareClaimDeclareClaimClaimDeclared(BaseModel):
    typename__: Literal["ClaimDeclared"] = Field(alias="__typename")
    claim_id: str = Field(alias="claimId")
    chip_map: list["DeclareClaimDeclareClaimClaimDeclaredChipMap"] = Field(
        alias="chipMap"
    )


class DeclareClaimDeclareClaimClaimDeclaredChipMap(BaseModel):
    alias: str
    kind: ChipKind
    id: str
    node_id: str = Field(alias="nodeId")
    version: Optional[int]


class DeclareClaimDeclareClaimMemoryGraphDisabled(BaseModel):
    typename__: Literal["MemoryGraphDisabled"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class DeclareClaimDeclareClaimMemoryGraphUnreachable(BaseModel):
    typename__: Literal["MemoryGraphUnreachable"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class DeclareClaimDeclareClaimInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class DeclareClaimDeclareClaimDeclareRejected(BaseModel):
    typename__: Literal["DeclareRejected"] = Field(alias="__typename")
    instruction: Optional[str]
    alias: Optional[str]
    code: ErrorCode
    message: str


class DeclareClaimDeclareClaimKeyOwnedByOtherSession(BaseModel):
    typename__: Literal["KeyOwnedByOtherSession"] = Field(alias="__typename")
    code: ErrorCode
    message: str


DeclareClaim.model_rebuild()
DeclareClaimDeclareClaimClaimDeclared.model_rebuild()
