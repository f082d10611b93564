"""The generated Python client (ariadne-codegen) against a real gateway over HTTP.

A control plane's view of one session: observe the goal, an execution and a literature search,
declare evidence and a claim citing it and the figure, then trace the figure and read the graph.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, TypeVar

import pytest
from science_memory_client import (
    AliasInput,
    ArtifactAliasInput,
    ChainKind,
    ChipKind,
    DeclareClaimDeclareClaimClaimDeclared,
    DeclareClaimInput,
    DeclareEvidenceDeclareEvidenceDeclareRejected,
    DeclareEvidenceDeclareEvidenceEvidenceDeclared,
    DeclareEvidenceInput,
    EdgeType,
    ErrorCode,
    NodeLabel,
    ObserveExecutionInput,
    ObserveExecutionObserveExecutionObserved,
    ObserveSessionFirstMessageInput,
    ObserveToolCallInput,
    PaperProductInput,
    ProducedArtifactInput,
    ScienceMemoryClient,
    TraceTraceProvenanceProvenanceTrace,
)
from science_memory_client import ChainGetChainChain as Chain
from science_memory_client import SessionGraphSessionSession as Session

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.e2e.conftest import Gateway

T = TypeVar("T")
T0 = datetime(2026, 1, 1, 10, tzinfo=UTC)
SESSION = "s-client"
PAPER = "https://doi.org/10.1/tp53"


def expect(value: object, kind: type[T]) -> T:
    """``value`` narrowed to the union member ``kind``; fails the test on any other member."""
    assert isinstance(value, kind), value
    return value


@pytest.fixture
async def client(gateway: Gateway) -> AsyncIterator[ScienceMemoryClient]:
    async with ScienceMemoryClient(url=gateway.graphql) as opened:
        yield opened


async def record_session(client: ScienceMemoryClient) -> None:
    """The goal, one execution that wrote ``fig`` and one search that found ``PAPER``."""
    await client.observe_session_first_message(
        ObserveSessionFirstMessageInput(
            session_id=SESSION, goal_id=f"goal:session:{SESSION}", core_objective="Study TP53"
        )
    )
    observed = await client.observe_execution(
        ObserveExecutionInput(
            execution_id="exec-1",
            session_id=SESSION,
            turn_id="t1",
            tool="run_python",
            code_hash="sha256:abc",
            status="succeeded",
            started_at=T0,
            finished_at=T0 + timedelta(seconds=5),
            produced_artifacts=[ProducedArtifactInput(artifact_id="fig", version=1)],
        )
    )
    expect(observed.observe_execution, ObserveExecutionObserveExecutionObserved)
    await client.observe_tool_call(
        ObserveToolCallInput(
            task_id="subtask:mcp:inv-1",
            session_id=SESSION,
            tool_name="mcp__europe-pmc__search",
            tool_type="search",
            retrieved_at=T0 + timedelta(seconds=10),
            products=[PaperProductInput(link=PAPER, title="TP53 in tumours")],
        )
    )


def evidence_from(link: str) -> DeclareEvidenceInput:
    return DeclareEvidenceInput(
        session_id=SESSION,
        content="TP53 is mutated in half of all tumours",
        locator="p. 3",
        evidence_type="quote",
        confidence="high",
        strength="strong",
        source_paper_link=link,
    )


async def test_a_claim_citing_evidence_and_a_figure_traces_back_to_the_goal(
    client: ScienceMemoryClient,
) -> None:
    await record_session(client)

    evidence = expect(
        (await client.declare_evidence(evidence_from(PAPER))).declare_evidence,
        DeclareEvidenceDeclareEvidenceEvidenceDeclared,
    )
    claim = expect(
        (
            await client.declare_claim(
                DeclareClaimInput(
                    session_id=SESSION,
                    content="TP53 drives the effect",
                    claim_type="finding",
                    confidence="high",
                    locator="§2",
                    cites_evidence=[AliasInput(alias="e1", id=evidence.evidence_id)],
                    cites_artifacts=[ArtifactAliasInput(alias="a1", artifact_id="fig")],
                )
            )
        ).declare_claim,
        DeclareClaimDeclareClaimClaimDeclared,
    )
    trace = expect(
        (await client.trace("fig", session_id=SESSION)).trace_provenance,
        TraceTraceProvenanceProvenanceTrace,
    )

    assert evidence.evidence.source_paper_link == PAPER
    assert [chip.kind for chip in claim.chip_map] == [ChipKind.EVIDENCE, ChipKind.ARTIFACT]
    assert trace.broken is False
    assert trace.chain[-1].node.label is NodeLabel.RESEARCH_GOAL
    assert trace.chain[-1].is_terminal
    assert trace.path[0].reached_from == "Artifact:fig#v1"
    assert trace.path[-1].node.label is NodeLabel.RESEARCH_GOAL


async def test_the_session_graph_and_a_chain_show_what_was_observed(
    client: ScienceMemoryClient,
) -> None:
    await record_session(client)

    session = expect((await client.session_graph(SESSION)).session, Session)
    producing = expect(
        (await client.chain("fig", ChainKind.VIEW_PRODUCING_CODE, session_id=SESSION)).get_chain,
        Chain,
    )

    assert [step.label for step in session.chain] == [NodeLabel.TOOL_CALL, NodeLabel.TOOL_CALL]
    assert {edge.type_ for edge in session.edges.edges} >= {EdgeType.NEXT, EdgeType.PRODUCES}
    assert [node.id for node in producing.nodes] == ["Artifact:fig#v1", "Code:exec-1"]


async def test_evidence_from_an_unknown_paper_is_rejected_with_an_instruction(
    client: ScienceMemoryClient,
) -> None:
    await record_session(client)

    rejected = expect(
        (
            await client.declare_evidence(evidence_from("https://doi.org/10.9/other"))
        ).declare_evidence,
        DeclareEvidenceDeclareEvidenceDeclareRejected,
    )

    assert rejected.code is ErrorCode.SOURCE_PAPER_NOT_FOUND
    assert rejected.instruction
