"""Declare use cases: evidence, claims and their report (SPEC §3.4).

Declares validate against the session before writing, inside the same transaction, so a
rejected declare writes nothing. Ids are derived from the declared content (UUIDv5), so an
agent that retries a declare gets the same node back instead of a duplicate.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from resolvers.errors import (
    DeclareCode,
    DeclareRejectedError,
    InvalidInputError,
    KeyOwnedByOtherSessionError,
)
from resolvers.links import normalize_link
from resolvers.observe import run_write
from resolvers.plan import PlanBuilder
from resolvers.records import (
    PDF_MEDIA_TYPE,
    EdgeType,
    Label,
    NodeRecord,
    artifact_key,
    node_id,
)
from resolvers.validate import validate_event

if TYPE_CHECKING:
    from resolvers.events import ClaimDeclared, ClaimsLinked, EvidenceDeclared
    from resolvers.plan import ReadPlan
    from resolvers.store import GraphReader, GraphStore
    from resolvers.writes import Writer

_NAMESPACE = uuid.UUID("6f1c1f0e-8a52-4d8e-9a53-2f3c9e1b7d40")
LINK_POLL_SECONDS = 0.1

_CITE_FIELDS = "citesEvidence, citesArtifacts or citesSourceFiles"


class ChipKind(StrEnum):
    EVIDENCE = "EVIDENCE"
    ARTIFACT = "ARTIFACT"
    SOURCE_FILE = "SOURCE_FILE"


@dataclass(frozen=True, slots=True)
class Chip:
    """How the report shows one cited alias: ``id`` is the bare domain id."""

    alias: str
    kind: ChipKind
    id: str
    node_id: str
    version: int | None = None


@dataclass(frozen=True, slots=True)
class EvidenceResult:
    evidence: NodeRecord
    written: int


@dataclass(frozen=True, slots=True)
class ClaimResult:
    claim: NodeRecord
    chips: list[Chip]
    written: int


def _derived_id(*parts: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join(parts)))


def _reject(code: DeclareCode, message: str, instruction: str, alias: str | None = None) -> None:
    raise DeclareRejectedError(code, message, instruction, alias)


# --- evidence --------------------------------------------------------------------------------


async def declare_evidence(store: GraphStore, event: EvidenceDeclared) -> EvidenceResult:
    found: list[NodeRecord] = []

    async def body(writer: Writer, e: EvidenceDeclared) -> None:
        source = await _evidence_source(writer.tx, e)
        found.append(await _write_evidence(writer, e, source))

    result = await run_write(store, event, body, _evidence_plan)
    return EvidenceResult(found[-1], result.written)  # the last run's (it may be retried)


def _evidence_plan(e: EvidenceDeclared) -> ReadPlan:
    plan = PlanBuilder(e.session_id)
    link = normalize_link((e.source_paper_link or "").strip())
    file_id = (e.source_file_id or "").strip()
    sources = []
    if link:
        plan.key(link, Label.PAPER)
        sources.append(node_id(Label.PAPER, link, e.session_id))
    if file_id:
        plan.key(file_id, Label.SOURCE_FILE)
        sources.append(node_id(Label.SOURCE_FILE, file_id))
    for source in sources:
        evidence_id = _derived_id(e.session_id, source, e.content, e.locator)
        plan.node(source, node_id(Label.EVIDENCE, evidence_id))
    return plan.build()


async def _evidence_source(tx: GraphReader, e: EvidenceDeclared) -> NodeRecord:
    link = (e.source_paper_link or "").strip()
    file_id = (e.source_file_id or "").strip()
    if not link and not file_id:
        _reject(
            DeclareCode.NO_SOURCE,
            "Evidence needs a source.",
            "Set exactly one of sourcePaperLink (a Paper found by a search in this session) "
            "or sourceFileId (an uploaded PDF).",
        )
    if link and file_id:
        _reject(
            DeclareCode.AMBIGUOUS_SOURCE,
            "Evidence has more than one source.",
            "Set only one of sourcePaperLink or sourceFileId, then declare again.",
        )
    if file_id:
        source = await _live_one(tx, file_id, Label.SOURCE_FILE, e.session_id)
        if source is None:
            _reject(
                DeclareCode.SOURCE_FILE_NOT_FOUND,
                f"No uploaded file {file_id} in this session.",
                "Use the fileId of a file uploaded to this session.",
            )
        elif source.get("media_type") != PDF_MEDIA_TYPE:
            _reject(
                DeclareCode.SOURCE_FILE_NOT_PDF,
                f"{file_id} is not a PDF; only PDFs are cited through Evidence.",
                "Cite this file directly from declareClaim with citesSourceFiles.",
            )
        assert source is not None
        return source
    paper = await _live_one(tx, normalize_link(link), Label.PAPER, e.session_id)
    if paper is None:
        _reject(
            DeclareCode.SOURCE_PAPER_NOT_FOUND,
            f"No Paper with link {link} was found by a search in this session.",
            "Search for the paper in this session first (its link must come from a search "
            "result), then declare the evidence with that link.",
        )
    assert paper is not None
    return paper


async def _live_one(
    tx: GraphReader, key: str, label: Label, session_id: str | None
) -> NodeRecord | None:
    if not key:
        return None
    nodes = await tx.nodes_by_key(key, labels=[label], session_id=session_id)
    live = [node for node in nodes if not node.deleted]
    return live[-1] if live else None


async def _write_evidence(writer: Writer, e: EvidenceDeclared, source: NodeRecord) -> NodeRecord:
    is_paper = source.label is Label.PAPER
    evidence_id = _derived_id(e.session_id, source.id, e.content, e.locator)
    evidence, _ = await writer.merge_node(
        Label.EVIDENCE,
        evidence_id,
        e.session_id,
        create={
            "evidence_id": evidence_id,
            "content": e.content,
            "source_paper_link": source.key if is_paper else None,
            "source_file_id": None if is_paper else source.key,
            "locator": e.locator,
            "evidence_type": e.evidence_type,
            "confidence": e.confidence,
            "strength": e.strength,
        },
    )
    await writer.connect(EdgeType.EXTRACTS, source.id, evidence.id)
    return evidence


# --- claims ----------------------------------------------------------------------------------


async def declare_claim(store: GraphStore, event: ClaimDeclared) -> ClaimResult:
    event = _without_blank_cites(event)
    found: list[tuple[NodeRecord, list[Chip]]] = []

    async def body(writer: Writer, e: ClaimDeclared) -> None:
        chips = await _resolve_cites(writer.tx, e)
        claim = await _write_claim(writer, e, chips)
        found.append((claim, chips))

    result = await run_write(store, event, body, _claim_plan)
    claim, chips = found[-1]  # the last run's (it may be retried)
    return ClaimResult(claim, chips, result.written)


def _claim_plan(e: ClaimDeclared) -> ReadPlan:
    plan = PlanBuilder(e.session_id)
    targets = []
    for cite in e.cites_evidence:
        plan.key(cite.id, Label.EVIDENCE)
        targets.append(node_id(Label.EVIDENCE, cite.id))
    for artifact in e.cites_artifacts:
        plan.versions(artifact.artifact_id)
        if artifact.version is not None:
            targets.append(
                node_id(Label.ARTIFACT, artifact_key(artifact.artifact_id, artifact.version))
            )
    for cite in e.cites_source_files:
        plan.key(cite.id, Label.SOURCE_FILE)
        targets.append(node_id(Label.SOURCE_FILE, cite.id))
    if e.artifact_id and e.artifact_version:
        plan.node(node_id(Label.ARTIFACT, artifact_key(e.artifact_id, e.artifact_version)))
    if all(artifact.version is not None for artifact in e.cites_artifacts):
        # The claim's id follows from its targets; a latest-version cite is known only once read.
        plan.node(node_id(Label.CLAIM, _claim_id(e, sorted(set(targets)))))
    return plan.build()


def _claim_id(e: ClaimDeclared, targets: list[str]) -> str:
    return _derived_id(e.session_id, e.content, e.claim_type, e.locator, *targets)


def _without_blank_cites(e: ClaimDeclared) -> ClaimDeclared:
    """Blank cite ids name no target and are dropped, so a claim citing only blanks is
    rejected as NO_CITES_TARGET with its instruction (reference §8.2 item 6), not as input."""
    return dataclasses.replace(
        e,
        cites_evidence=tuple(c for c in e.cites_evidence if c.id.strip()),
        cites_artifacts=tuple(a for a in e.cites_artifacts if a.artifact_id.strip()),
        cites_source_files=tuple(c for c in e.cites_source_files if c.id.strip()),
    )


def _check_unique_aliases(e: ClaimDeclared) -> None:
    """One alias names one chip in the report: a second cite under it is refused by name."""
    seen: set[str] = set()
    aliases = [
        *((f"citesEvidence[{i}]", c.alias) for i, c in enumerate(e.cites_evidence)),
        *((f"citesArtifacts[{i}]", a.alias) for i, a in enumerate(e.cites_artifacts)),
        *((f"citesSourceFiles[{i}]", c.alias) for i, c in enumerate(e.cites_source_files)),
    ]
    for cite, alias in aliases:
        if alias in seen:
            raise InvalidInputError(
                f"input.{cite}.alias", f"alias {alias!r} is already used by another cite"
            )
        seen.add(alias)


async def _resolve_cites(tx: GraphReader, e: ClaimDeclared) -> list[Chip]:
    _check_unique_aliases(e)
    if not (e.cites_evidence or e.cites_artifacts or e.cites_source_files):
        _reject(
            DeclareCode.NO_CITES_TARGET,
            "A claim must cite at least one target.",
            f"Add a non-empty {_CITE_FIELDS} entry: evidence ids from declareEvidence, "
            "artifact ids from list_artifacts, or uploaded non-PDF file ids.",
        )
    chips = [await _evidence_chip(tx, e.session_id, c.alias, c.id) for c in e.cites_evidence]
    chips += [
        await _artifact_chip(tx, e.session_id, a.alias, a.artifact_id, a.version)
        for a in e.cites_artifacts
    ]
    chips += [await _file_chip(tx, e.session_id, c.alias, c.id) for c in e.cites_source_files]
    return chips


async def _evidence_chip(tx: GraphReader, session_id: str, alias: str, evidence_id: str) -> Chip:
    node = await _live_one(tx, evidence_id, Label.EVIDENCE, session_id)
    if node is None:
        _reject(
            DeclareCode.EVIDENCE_NOT_FOUND,
            f"Evidence {evidence_id} does not exist in this session.",
            "Call declare_evidence for this passage first and reuse the returned evidenceId "
            f"under the same alias {alias!r}.",
            alias,
        )
    assert node is not None
    return Chip(alias, ChipKind.EVIDENCE, evidence_id, node.id)


async def _artifact_chip(
    tx: GraphReader, session_id: str, alias: str, artifact_id: str, version: int | None
) -> Chip:
    """A version of an artifact of the claim's own session: a claim's ``supports`` edges, like
    every edge but ``input``, stay inside its session (another session's artifact is its
    graph, SPEC §3.8, and the traces and chains of either would not see the edge)."""
    versions = await tx.artifact_versions(artifact_id, session_id=session_id)
    versions = [v for v in versions if not v.deleted]
    if version is not None:
        versions = [v for v in versions if v.get("version") == version]
    if not versions:
        wanted = artifact_key(artifact_id, version) if version else artifact_id
        _reject(
            DeclareCode.ARTIFACT_VERSION_NOT_FOUND,
            f"Artifact {wanted} has not been recorded in this session.",
            "Call list_artifacts to find an artifact id and version recorded in this session, "
            "then cite it.",
            alias,
        )
    node = versions[-1]
    return Chip(alias, ChipKind.ARTIFACT, artifact_id, node.id, int(node.get("version")))


async def _file_chip(tx: GraphReader, session_id: str, alias: str, file_id: str) -> Chip:
    node = await _live_one(tx, file_id, Label.SOURCE_FILE, session_id)
    if node is None:
        _reject(
            DeclareCode.SOURCE_FILE_NOT_FOUND,
            f"No uploaded file {file_id} in this session.",
            "Cite the fileId of a file uploaded to this session.",
            alias,
        )
    elif node.get("media_type") == PDF_MEDIA_TYPE:
        _reject(
            DeclareCode.SOURCE_FILE_IS_PDF,
            f"{file_id} is a PDF; a PDF is cited through Evidence.",
            "Call declare_evidence with sourceFileId for the passage, then cite the evidence.",
            alias,
        )
    assert node is not None
    return Chip(alias, ChipKind.SOURCE_FILE, file_id, node.id)


async def _write_claim(writer: Writer, e: ClaimDeclared, chips: list[Chip]) -> NodeRecord:
    targets = sorted({chip.node_id for chip in chips})
    claim_id = _claim_id(e, targets)
    claim, _ = await writer.merge_node(
        Label.CLAIM,
        claim_id,
        e.session_id,
        create={
            "claim_id": claim_id,
            "content": e.content,
            "claim_type": e.claim_type,
            "confidence": e.confidence,
            "locator": e.locator,
            "content_hash": hashlib.sha256(e.content.encode()).hexdigest(),
        },
    )
    for target in targets:
        await writer.connect(EdgeType.SUPPORTS, target, claim.id)
    if e.artifact_id and e.artifact_version:
        report = node_id(Label.ARTIFACT, artifact_key(e.artifact_id, e.artifact_version))
        await _own_report(writer, report, e.session_id)
        await writer.connect(EdgeType.STATED_IN, claim.id, report)
    return claim


async def _own_report(writer: Writer, report: str, session_id: str) -> None:
    """A claim is stated in a report of its own session: another session's report is its
    graph (SPEC §3.8), and its claims are those it declared."""
    (node,) = await writer.tx.get_nodes([report])
    if node is not None and node.session_id != session_id:
        raise KeyOwnedByOtherSessionError(report, node.key, node.session_id, session_id)


# --- claims into a report --------------------------------------------------------------------


async def link_claims_to_report(
    store: GraphStore, event: ClaimsLinked, *, wait_seconds: float
) -> int:
    """Link claims to a report version, waiting up to ``wait_seconds`` for the version to
    arrive (it is often mirrored a moment after the claims). Returns the claims linked."""
    validate_event(event)  # before the wait: a bad request is refused at once
    report = node_id(Label.ARTIFACT, artifact_key(event.artifact_id, event.artifact_version))
    deadline = asyncio.get_running_loop().time() + wait_seconds
    while not await _exists(store, report):
        if asyncio.get_running_loop().time() >= deadline:
            _reject(
                DeclareCode.ARTIFACT_NOT_FOUND,
                f"Report {artifact_key(event.artifact_id, event.artifact_version)} "
                "has not been recorded.",
                "Declare or mirror the report artifact version first, then link the claims.",
            )
        await asyncio.sleep(LINK_POLL_SECONDS)
    claim_ids = list(dict.fromkeys(event.claim_ids))

    async def body(writer: Writer, e: ClaimsLinked) -> None:
        await _own_report(writer, report, e.session_id)
        for claim_id in claim_ids:
            if await _live_one(writer.tx, claim_id, Label.CLAIM, e.session_id) is None:
                _reject(
                    DeclareCode.CLAIM_NOT_FOUND,
                    f"Claim {claim_id} not found in this session.",
                    "Link only claim ids returned by declare_claim in this session.",
                )
            await writer.connect(EdgeType.STATED_IN, node_id(Label.CLAIM, claim_id), report)

    plan = PlanBuilder(event.session_id).node(report)
    for claim_id in claim_ids:
        plan.key(claim_id, Label.CLAIM).node(node_id(Label.CLAIM, claim_id))
    read_plan = plan.build()
    await run_write(store, event, body, lambda _: read_plan)
    return len(claim_ids)


async def _exists(store: GraphReader, global_id: str) -> bool:
    (node,) = await store.get_nodes([global_id])
    return node is not None and not node.deleted
