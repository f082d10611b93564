from typing import Literal, Optional, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import ErrorCode


class DeclareEvidence(BaseModel):
    declare_evidence: Union[
        "DeclareEvidenceDeclareEvidenceEvidenceDeclared",
        "DeclareEvidenceDeclareEvidenceMemoryGraphDisabled",
        "DeclareEvidenceDeclareEvidenceMemoryGraphUnreachable",
        "DeclareEvidenceDeclareEvidenceInvalidInput",
        "DeclareEvidenceDeclareEvidenceDeclareRejected",
    ] = Field(alias="declareEvidence", discriminator="typename__")


class DeclareEvidenceDeclareEvidenceEvidenceDeclared(BaseModel):
    typename__: Literal["EvidenceDeclared"] = Field(alias="__typename")
    evidence_id: str = Field(alias="evidenceId")
    evidence: "DeclareEvidenceDeclareEvidenceEvidenceDeclaredEvidence"


class DeclareEvidenceDeclareEvidenceEvidenceDeclaredEvidence(BaseModel):
    id: str
    source_paper_link: Optional[str] = Field(alias="sourcePaperLink")


class DeclareEvidenceDeclareEvidenceMemoryGraphDisabled(BaseModel):
    typename__: Literal["MemoryGraphDisabled"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class DeclareEvidenceDeclareEvidenceMemoryGraphUnreachable(BaseModel):
    typename__: Literal["MemoryGraphUnreachable"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class DeclareEvidenceDeclareEvidenceInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    code: ErrorCode
    message: str


class DeclareEvidenceDeclareEvidenceDeclareRejected(BaseModel):
    typename__: Literal["DeclareRejected"] = Field(alias="__typename")
    instruction: Optional[str]
    code: ErrorCode
    message: str


DeclareEvidence.model_rebuild()
DeclareEvidenceDeclareEvidenceEvidenceDeclared.model_rebuild()
