from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class AliasInput(BaseModel):
    alias: str
    id: str


class ArtifactAliasInput(BaseModel):
    alias: str
    artifact_id: str = Field(alias="artifactId")
    version: Optional[int] = None
    "Latest when absent."


class ArtifactVersionInput(BaseModel):
    artifact_id: str = Field(alias="artifactId")
    version: int


class DeclareClaimInput(BaseModel):
    session_id: str = Field(alias="sessionId")
    content: str
    claim_type: str = Field(alias="claimType")
    confidence: str
    locator: str
    cites_evidence: Optional[list["AliasInput"]] = Field(
        alias="citesEvidence", default=None
    )
    cites_artifacts: Optional[list["ArtifactAliasInput"]] = Field(
        alias="citesArtifacts", default=None
    )
    cites_source_files: Optional[list["AliasInput"]] = Field(
        alias="citesSourceFiles", default=None
    )
    artifact_id: Optional[str] = Field(alias="artifactId", default=None)
    "The report the claim is stated in (linked when it arrives)."
    artifact_version: Optional[int] = Field(alias="artifactVersion", default=None)


class DeclareEvidenceInput(BaseModel):
    session_id: str = Field(alias="sessionId")
    content: str
    locator: str
    evidence_type: str = Field(alias="evidenceType")
    confidence: str
    strength: str
    source_paper_link: Optional[str] = Field(alias="sourcePaperLink", default=None)
    "A Paper link found by a search in this session."
    source_file_id: Optional[str] = Field(alias="sourceFileId", default=None)
    "An uploaded PDF of this session."


class ObserveExecutionInput(BaseModel):
    execution_id: str = Field(alias="executionId")
    session_id: str = Field(alias="sessionId")
    turn_id: str = Field(alias="turnId")
    tool: str
    code_hash: str = Field(alias="codeHash")
    status: str
    "`succeeded` is stored as `completed`."
    started_at: datetime = Field(alias="startedAt")
    finished_at: datetime = Field(alias="finishedAt")
    language: Optional[str] = None
    exit_code: Optional[int] = Field(alias="exitCode", default=None)
    tool_type: str = Field(alias="toolType", default="execution")
    tool_name: Optional[str] = Field(alias="toolName", default=None)
    produced_artifacts: Optional[list["ProducedArtifactInput"]] = Field(
        alias="producedArtifacts", default=None
    )
    stdout_hash: Optional[str] = Field(alias="stdoutHash", default=None)
    stderr_hash: Optional[str] = Field(alias="stderrHash", default=None)
    env_hash: Optional[str] = Field(alias="envHash", default=None)
    parent_subagent_id: Optional[str] = Field(alias="parentSubagentId", default=None)
    input_source_files: Optional[list[str]] = Field(
        alias="inputSourceFiles", default=None
    )
    "fileIds of uploaded files the code read."


class ObserveSessionFirstMessageInput(BaseModel):
    session_id: str = Field(alias="sessionId")
    goal_id: str = Field(alias="goalId")
    "Normally `goal:session:<sessionId>`."
    core_objective: str = Field(alias="coreObjective")
    created_at: Optional[datetime] = Field(alias="createdAt", default=None)
    "When the message was sent (kept as `sentAt`)."
    domain: Optional[str] = None
    topic_scope: Optional[list[str]] = Field(alias="topicScope", default=None)


class ObserveToolCallInput(BaseModel):
    task_id: str = Field(alias="taskId")
    "e.g. `subtask:mcp:<invocationId>`."
    session_id: str = Field(alias="sessionId")
    tool_name: str = Field(alias="toolName")
    tool_type: str = Field(alias="toolType")
    turn_id: Optional[str] = Field(alias="turnId", default=None)
    source: Optional[str] = None
    status: str = "completed"
    result_count: Optional[int] = Field(alias="resultCount", default=None)
    retrieved_at: Optional[datetime] = Field(alias="retrievedAt", default=None)
    "Orders the step in its chain (receive time when absent)."
    products: Optional[list["PaperProductInput"]] = None
    parent_subagent_id: Optional[str] = Field(alias="parentSubagentId", default=None)


class PaperProductInput(BaseModel):
    """A Paper found by a search; `link` is normalised."""

    link: str
    title: Optional[str] = None
    identifier: Optional[str] = None
    identifier_type: Optional[str] = Field(alias="identifierType", default=None)
    year: Optional[str] = None
    authors: Optional[list[str]] = None
    abstract: Optional[str] = None
    source: Optional[str] = None


class ProducedArtifactInput(BaseModel):
    """One artifact version produced by an execution."""

    artifact_id: str = Field(alias="artifactId")
    version: int
    path: Optional[str] = None
    media_type: Optional[str] = Field(alias="mediaType", default=None)
    logical_name: Optional[str] = Field(alias="logicalName", default=None)
    project_id: Optional[str] = Field(alias="projectId", default=None)
    turn_id: Optional[str] = Field(alias="turnId", default=None)
    content_hash: Optional[str] = Field(alias="contentHash", default=None)
    input_artifact_versions: Optional[list["ArtifactVersionInput"]] = Field(
        alias="inputArtifactVersions", default=None
    )


DeclareClaimInput.model_rebuild()
ObserveExecutionInput.model_rebuild()
ObserveToolCallInput.model_rebuild()
ProducedArtifactInput.model_rebuild()
