"""Each tool's arguments as a pydantic model: the JSON schema a client sees and its validation.

Names are snake_case like the reference agent's tools; labels and chain kinds are the domain
spellings (``Paper``, ``viewCitedPaper``). The field descriptions are read by an LLM: they say
what to put there and where the value comes from. Bounds that the use cases enforce anyway
(lengths, ``first``, ``max_hops``) are left to them, so a bad value gets the same error as over
GraphQL. Integers are taken only as JSON integers: not ``"5"``, not ``true``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict

from resolvers.chains import ChainKind
from resolvers.memory import MemoryRecordType
from resolvers.provenance import DEFAULT_MAX_HOPS, DEFAULT_TARGET, MAX_HOPS_LIMIT
from resolvers.records import Label

_SESSION = Field(description="The id of the research session you are working in.")
Integer = Annotated[int, Strict()]


class ToolArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", use_enum_values=False)


class QueryGraphArguments(ToolArguments):
    session_id: str = _SESSION
    query: str | None = Field(
        default=None,
        description="Search terms, matched case-insensitively against titles, abstracts, "
        "contents, links, file names and tool names; nodes matching more terms come first.",
    )
    labels: list[Label] | None = Field(
        default=None,
        description='Only nodes of these labels, e.g. ["Paper"] to list the papers your '
        'searches found, ["Evidence"] for declared evidence, ["Artifact"] for produced '
        "files. Alone (without query) it lists the newest nodes of those labels.",
    )
    node_id: str | None = Field(
        default=None,
        description="One node to look at, its texts whole (a list cuts texts over 400 "
        "characters and names them in cut_properties): its id as returned by this tool, or "
        "a domain key (an artifact id, `<artifactId>#v<n>`, an evidence id, a Paper link, a "
        "file id).",
    )
    chain: ChainKind | None = Field(
        default=None,
        description="With node_id: walk this chain from the node instead, e.g. viewCitedPaper "
        "from a report Artifact, viewSourcePaper from an Evidence, viewProducingCode from an "
        "Artifact. The answer is empty when the chain does not exist for that node.",
    )
    first: Integer = Field(default=20, description="At most this many nodes (1-500).")


class DeclareEvidenceArguments(ToolArguments):
    session_id: str = _SESSION
    content: str = Field(description="The passage, quoted or closely paraphrased.")
    locator: str = Field(description="Where in the source it is: a section, page, figure or table.")
    evidence_type: str = Field(
        description="What kind of evidence, e.g. experimental, statistical, review, method."
    )
    confidence: str = Field(description="How sure you are it says this: high, medium or low.")
    strength: str = Field(
        description="How strongly it bears on the question: strong, moderate, weak."
    )
    source_paper_link: str | None = Field(
        default=None,
        description="The link of a Paper that a search of THIS session found (query_graph with "
        'labels ["Paper"] lists them; any spelling of the same DOI or URL works).',
    )
    source_file_id: str | None = Field(
        default=None,
        description="Instead of a paper: the file id of a PDF the user uploaded to this session.",
    )


class DeclareClaimArguments(ToolArguments):
    session_id: str = _SESSION
    content: str = Field(description="The assertion exactly as the report states it.")
    claim_type: str = Field(
        description="What kind of assertion, e.g. finding, hypothesis, comparison, limitation."
    )
    confidence: str = Field(description="high, medium or low.")
    locator: str = Field(description="Where the claim sits in the report, e.g. its section.")
    cites_evidence: dict[str, str] = Field(
        default_factory=dict,
        description="Chip alias → evidence_id returned by declare_evidence, e.g. "
        '{"E1": "<evidence_id>"}.',
    )
    cites_artifacts: dict[str, str] = Field(
        default_factory=dict,
        description="Chip alias → artifact id of a file produced in this session (a chart, a "
        'table), e.g. {"F1": "fig-survival"}. Its latest version is cited unless '
        "cites_artifact_versions pins one.",
    )
    cites_artifact_versions: dict[str, Integer] = Field(
        default_factory=dict,
        description="Optional: chip alias (of cites_artifacts) → the version to cite.",
    )
    cites_source_files: dict[str, str] = Field(
        default_factory=dict,
        description="Chip alias → file id of a non-PDF file the user uploaded (a CSV, a "
        "spreadsheet). PDFs are cited through declare_evidence instead.",
    )
    artifact_id: str | None = Field(
        default=None,
        description="The report artifact the claim will be stated in, when you know it; it is "
        "linked as soon as that report version exists.",
    )
    artifact_version: Integer | None = Field(
        default=None, description="With artifact_id: the report's version."
    )


class TraceProvenanceArguments(ToolArguments):
    node_id: str = Field(
        description="The artifact, claim or evidence under review: an id from query_graph or "
        "a domain key such as `<artifactId>#v<n>`."
    )
    session_id: str | None = Field(
        default=None, description="The session under review (default: the node's own)."
    )
    target_label: Label = Field(
        default=DEFAULT_TARGET,
        description="Trace until a node of this label (default: the session's ResearchGoal).",
    )
    max_hops: Integer = Field(
        default=DEFAULT_MAX_HOPS, description=f"How far to walk upstream (1-{MAX_HOPS_LIMIT})."
    )


class RecallArguments(ToolArguments):
    topic: str = Field(
        description="What you are about to work on, in a few words (a gene, a disease, a "
        "method); records matching more of its words come first."
    )
    types: list[MemoryRecordType] | None = Field(
        default=None,
        description="Only these record types: finding, ideation (directions judged before, "
        "with their feasibility), strategy, pitfall. Default: all four.",
    )
    limit_per_type: Integer = Field(default=10, description="At most this many per type (1-100).")


class LessonsArguments(ToolArguments):
    limit: Integer = Field(default=20, description="At most this many lessons (1-200).")
