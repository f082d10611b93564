"""getChain / chainExists: label-enforcing, frontier-based, all-or-nothing walks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import pytest

from resolvers import chains
from resolvers.chains import HOPS, ChainKind, chain_exists, get_chain
from resolvers.cleanup import cleanup_session
from resolvers.errors import InvalidInputError, NodeNotFoundError
from resolvers.records import EdgeType, Label
from tests.resolvers.builders import (
    PDF,
    artifact,
    call,
    claim,
    code,
    evidence,
    execution,
    goal,
    paper,
    search,
    upload,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from resolvers.records import Direction, EdgeRecord, GraphSlice, NodeRecord
    from resolvers.store import GraphReader, GraphStore

A = "https://example.org/a"
B = "https://example.org/b"


def ids(chain: GraphSlice) -> set[str]:
    return {node.id for node in chain.nodes}


def edges(chain: GraphSlice) -> set[tuple[str, str, str]]:
    return {(edge.type.value, edge.source, edge.target) for edge in chain.edges}


@dataclass(frozen=True)
class Report:
    """fig v1 (no inputs) → report v1; papers A and B each cited through one Evidence."""

    evidence_a: str
    evidence_b: str
    claim_a: str
    claim_b: str
    claim_fig: str


async def report_session(store: GraphStore) -> Report:
    await goal(store)
    await execution(store, "e1", 10, produces=[("fig", 1), ("sibling", 1)])
    await execution(store, "e2", 20, produces=[("report", 1)], reads=[("fig", 1)])
    await search(store, "q1", 30, [A, B])
    evidence_a = await evidence(store, "A says so", link=A)
    evidence_b = await evidence(store, "B says so", link=B)
    return Report(
        evidence_a,
        evidence_b,
        await claim(store, "claim A", evidence_ids=[evidence_a], report=("report", 1)),
        await claim(store, "claim B", evidence_ids=[evidence_b], report=("report", 1)),
        await claim(store, "fig claim", artifacts=[("fig", 1)], report=("report", 1)),
    )


def test_every_spec_kind_has_hops() -> None:
    assert len(ChainKind) == 22
    assert set(HOPS) == set(ChainKind)
    assert ChainKind.VIEW_CITING_EVIDENCE_FOR_ARTIFACT.value == "viewCitingEvidenceForArtifact"


async def test_prev_and_next_task_step_along_the_chain(store: GraphStore) -> None:
    await goal(store)
    first = await execution(store, "e1", 10)
    second = await execution(store, "e2", 20)

    prev = await get_chain(store, second, ChainKind.VIEW_PREV_TASK)
    nxt = await get_chain(store, first, ChainKind.VIEW_NEXT_TASK)

    assert [node.id for node in prev.nodes] == [second, first]
    assert edges(prev) == {("next", first, second)}
    assert [node.id for node in nxt.nodes] == [first, second]


async def test_prev_task_of_the_head_is_empty_because_the_goal_is_no_task(
    store: GraphStore,
) -> None:
    await goal(store)
    head = await execution(store, "e1", 10)

    chain = await get_chain(store, head, ChainKind.VIEW_PREV_TASK)

    assert chain.nodes == []
    assert chain.total == 0


async def test_view_goal_returns_every_step_back_to_the_goal(store: GraphStore) -> None:
    goal_node = await goal(store)
    first = await execution(store, "e1", 10)
    second = await execution(store, "e2", 20)
    third = await search(store, "q1", 30, [A])

    chain = await get_chain(store, third, ChainKind.VIEW_GOAL)

    assert [node.id for node in chain.nodes] == [third, second, first, goal_node]
    assert edges(chain) == {
        ("next", goal_node, first),
        ("next", first, second),
        ("next", second, third),
    }


async def test_view_goal_is_empty_without_a_goal(store: GraphStore) -> None:
    await execution(store, "e1", 10)
    last = await execution(store, "e2", 20)

    chain = await get_chain(store, last, ChainKind.VIEW_GOAL)

    assert chain.nodes == []


async def test_view_input_picks_the_most_recent_input_artifact(store: GraphStore) -> None:
    await execution(store, "e1", 10, produces=[("older", 1)])
    await execution(store, "e2", 20, produces=[("newer", 1)])
    await execution(store, "e3", 30, produces=[("out", 1)], reads=[("older", 1), ("newer", 1)])

    chain = await get_chain(store, code("e3"), ChainKind.VIEW_INPUT)

    assert ids(chain) == {code("e3"), artifact("newer")}
    assert edges(chain) == {("input", artifact("newer"), code("e3"))}


async def test_view_input_skips_source_files(store: GraphStore) -> None:
    await upload(store, "data.csv")
    await execution(store, "e1", 10, reads_files=["data.csv"])

    chain = await get_chain(store, code("e1"), ChainKind.VIEW_INPUT)

    assert chain.nodes == []


async def test_view_output_and_producing_task_from_code(store: GraphStore) -> None:
    step = await execution(store, "e1", 10, produces=[("fig", 1), ("table", 1)])

    output = await get_chain(store, code("e1"), ChainKind.VIEW_OUTPUT)
    producer = await get_chain(store, code("e1"), ChainKind.VIEW_PRODUCING_TASK)

    assert ids(output) == {code("e1"), artifact("fig"), artifact("table")}
    assert ids(producer) == {code("e1"), step}


async def test_paper_buttons_follow_only_that_papers_branch(store: GraphStore) -> None:
    cited = await report_session(store)

    extracted = await get_chain(store, paper(A), ChainKind.VIEW_EXTRACTED_EVIDENCE)
    claims = await get_chain(store, paper(A), ChainKind.VIEW_CITING_CLAIM)
    reports = await get_chain(store, paper(A), ChainKind.VIEW_CITING_ARTIFACT)

    assert ids(extracted) == {paper(A), cited.evidence_a}
    assert ids(claims) == {paper(A), cited.evidence_a, cited.claim_a}
    assert ids(reports) == {paper(A), cited.evidence_a, cited.claim_a, artifact("report")}
    assert edges(reports) == {
        ("extracts", paper(A), cited.evidence_a),
        ("supports", cited.evidence_a, cited.claim_a),
        ("stated_in", cited.claim_a, artifact("report")),
    }


async def test_a_chain_is_all_or_nothing(store: GraphStore) -> None:
    await search(store, "q1", 10, [A])
    found = await evidence(store, "A says so", link=A)
    await claim(store, "claim without report", evidence_ids=[found])

    chain = await get_chain(store, paper(A), ChainKind.VIEW_CITING_ARTIFACT)

    assert (chain.nodes, chain.edges, chain.total) == ([], [], 0)


async def test_searching_task_is_the_most_recent_search_that_found_the_paper(
    store: GraphStore,
) -> None:
    await report_session(store)
    await search(store, "q0", 5, [A])
    latest = await search(store, "q2", 40, [A])

    chain = await get_chain(store, paper(A), ChainKind.VIEW_SEARCHING_TASK)

    assert ids(chain) == {paper(A), latest}
    assert artifact("report") not in ids(chain)


async def test_source_paper_returns_only_papers(store: GraphStore) -> None:
    cited = await report_session(store)
    await upload(store, "paper.pdf", media_type=PDF)
    from_pdf = await evidence(store, "the PDF says so", source_file="paper.pdf")

    from_paper = await get_chain(store, cited.evidence_a, ChainKind.VIEW_SOURCE_PAPER)
    from_file = await get_chain(store, from_pdf, ChainKind.VIEW_SOURCE_PAPER)

    assert ids(from_paper) == {cited.evidence_a, paper(A)}
    assert from_file.nodes == []


async def test_evidence_buttons_reach_claim_and_report(store: GraphStore) -> None:
    cited = await report_session(store)

    claims = await get_chain(store, cited.evidence_a, ChainKind.VIEW_CITING_CLAIM_FOR_EVIDENCE)
    reports = await get_chain(store, cited.evidence_a, ChainKind.VIEW_CITING_ARTIFACT_FOR_EVIDENCE)

    assert ids(claims) == {cited.evidence_a, cited.claim_a}
    assert ids(reports) == {cited.evidence_a, cited.claim_a, artifact("report")}


async def test_claim_with_two_evidences_returns_both(store: GraphStore) -> None:
    cited = await report_session(store)
    both = await claim(store, "both", evidence_ids=[cited.evidence_a, cited.evidence_b])

    chain = await get_chain(store, both, ChainKind.VIEW_CITING_EVIDENCE_FOR_CLAIM)

    assert ids(chain) == {both, cited.evidence_a, cited.evidence_b}


async def test_an_artifact_backed_claim_has_no_evidence_but_a_report(store: GraphStore) -> None:
    cited = await report_session(store)

    availability = await chain_exists(
        store,
        cited.claim_fig,
        [
            ChainKind.VIEW_CITING_EVIDENCE_FOR_CLAIM,
            ChainKind.VIEW_CITING_SOURCE_FILE_FOR_CLAIM,
            ChainKind.VIEW_CONTAINING_ARTIFACT,
        ],
    )
    report = await get_chain(store, cited.claim_fig, ChainKind.VIEW_CONTAINING_ARTIFACT)

    assert availability == {
        ChainKind.VIEW_CITING_EVIDENCE_FOR_CLAIM: False,
        ChainKind.VIEW_CITING_SOURCE_FILE_FOR_CLAIM: False,
        ChainKind.VIEW_CONTAINING_ARTIFACT: True,
    }
    assert ids(report) == {cited.claim_fig, artifact("report")}


async def test_a_claim_backed_by_a_csv_file_shows_exactly_claim_and_file(
    store: GraphStore,
) -> None:
    data = await upload(store, "data.csv")
    backed = await claim(store, "the table shows it", files=["data.csv"])

    chain = await get_chain(store, backed, ChainKind.VIEW_CITING_SOURCE_FILE_FOR_CLAIM)

    assert {node.label for node in chain.nodes} == {Label.CLAIM, Label.SOURCE_FILE}
    assert ids(chain) == {backed, data}


async def test_containing_artifact_picks_the_most_recent_report_version(
    store: GraphStore,
) -> None:
    await execution(store, "e1", 10, produces=[("report", 1)])
    await execution(store, "e2", 20, produces=[("report", 2)])
    await execution(store, "e3", 30, produces=[("fig", 1)])
    stated = await claim(store, "stated twice", artifacts=[("fig", 1)], report=("report", 1))
    await claim(store, "stated twice", artifacts=[("fig", 1)], report=("report", 2))

    chain = await get_chain(store, stated, ChainKind.VIEW_CONTAINING_ARTIFACT)

    assert ids(chain) == {stated, artifact("report", 2)}


async def test_artifact_buttons_from_the_report(store: GraphStore) -> None:
    cited = await report_session(store)
    all_claims = {cited.claim_a, cited.claim_b, cited.claim_fig}

    contained = await get_chain(store, "report#v1", ChainKind.VIEW_CONTAINED_CLAIMS)
    cited_evidence = await get_chain(
        store, "report#v1", ChainKind.VIEW_CITING_EVIDENCE_FOR_ARTIFACT
    )
    papers = await get_chain(store, "report#v1", ChainKind.VIEW_CITED_PAPER)

    assert ids(contained) == {artifact("report"), *all_claims}
    evidence_ids = {cited.evidence_a, cited.evidence_b}
    assert ids(cited_evidence) == {artifact("report"), *all_claims, *evidence_ids}
    assert artifact("fig") not in ids(cited_evidence)
    assert ids(papers) == {artifact("report"), *all_claims, *evidence_ids, paper(A), paper(B)}


async def test_cited_figure_buttons_exclude_the_uncited_sibling(store: GraphStore) -> None:
    cited = await report_session(store)

    producing = await get_chain(store, "fig#v1", ChainKind.VIEW_PRODUCING_CODE)
    citing = await get_chain(store, "fig#v1", ChainKind.VIEW_CITING_CLAIM_FOR_ARTIFACT)

    assert ids(producing) == {artifact("fig"), code("e1")}
    assert ids(citing) == {artifact("fig"), cited.claim_fig}
    assert edges(citing) == {("supports", artifact("fig"), cited.claim_fig)}


async def test_related_task_reaches_code_tool_call_and_goal(store: GraphStore) -> None:
    await report_session(store)

    chain = await get_chain(store, "fig#v1", ChainKind.VIEW_RELATED_TASK)

    assert ids(chain) == {artifact("fig"), code("e1"), call("e1"), "ResearchGoal:goal:session:s1"}
    assert edges(chain) == {
        ("produces", code("e1"), artifact("fig")),
        ("produces", call("e1"), code("e1")),
        ("next", "ResearchGoal:goal:session:s1", call("e1")),
    }


async def test_related_task_is_empty_without_a_goal(store: GraphStore) -> None:
    await execution(store, "e1", 10, produces=[("fig", 1)])

    chain = await get_chain(store, "fig#v1", ChainKind.VIEW_RELATED_TASK)

    assert chain.nodes == []


async def test_only_walked_edges_are_returned(store: GraphStore) -> None:
    await execution(store, "e1", 10, produces=[("report", 1)])
    self_cited = await claim(store, "see report", artifacts=[("report", 1)], report=("report", 1))

    chain = await get_chain(store, "report#v1", ChainKind.VIEW_CITING_CLAIM_FOR_ARTIFACT)

    assert ids(chain) == {artifact("report"), self_cited}
    assert {edge.type for edge in chain.edges} == {EdgeType.SUPPORTS}


async def test_soft_deleted_nodes_are_never_reached(store: GraphStore) -> None:
    await execution(store, "e1", 10, produces=[("shared", 1)], session="old")
    await cleanup_session(store, "old")
    await execution(store, "e2", 20, produces=[("out", 1)], reads=[("shared", 1)], session="new")

    chain = await get_chain(store, code("e2"), ChainKind.VIEW_INPUT)

    assert chain.nodes == []


async def test_the_walk_stays_in_the_requested_session(store: GraphStore) -> None:
    await execution(store, "e1", 10, produces=[("shared", 1)], session="a")
    await execution(store, "e2", 20, produces=[("out", 1)], reads=[("shared", 1)], session="b")

    unscoped = await get_chain(store, code("e2"), ChainKind.VIEW_INPUT)
    scoped = await get_chain(store, code("e2"), ChainKind.VIEW_INPUT, session_id="b")

    assert ids(unscoped) == {code("e2"), artifact("shared")}
    assert scoped.nodes == []


async def test_the_node_cap_sets_truncated(
    store: GraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await execution(store, "e1", 10, produces=[("a", 1), ("b", 1), ("c", 1)])
    monkeypatch.setattr(chains, "CHAIN_CAP", 3)

    chain = await get_chain(store, code("e1"), ChainKind.VIEW_OUTPUT)

    assert (len(chain.nodes), chain.total, chain.truncated) == (3, 4, True)
    assert chain.nodes[0].id == code("e1")
    assert all(edge.target in ids(chain) for edge in chain.edges)


async def test_chain_exists_answers_every_kind_of_the_batch(store: GraphStore) -> None:
    await report_session(store)

    availability = await chain_exists(
        store,
        paper(A),
        [
            ChainKind.VIEW_EXTRACTED_EVIDENCE,
            ChainKind.VIEW_CITING_ARTIFACT,
            ChainKind.VIEW_SEARCHING_TASK,
            ChainKind.VIEW_PRODUCING_CODE,
        ],
    )
    by_version = await chain_exists(store, "fig", [ChainKind.VIEW_PRODUCING_CODE], version=1)

    assert availability == {
        ChainKind.VIEW_EXTRACTED_EVIDENCE: True,
        ChainKind.VIEW_CITING_ARTIFACT: True,
        ChainKind.VIEW_SEARCHING_TASK: True,
        ChainKind.VIEW_PRODUCING_CODE: False,
    }
    assert by_version == {ChainKind.VIEW_PRODUCING_CODE: True}


class _Counting:
    """The primitives of a store (no whole walks), counting each question asked."""

    def __init__(self, store: GraphStore) -> None:
        self._store = store
        self.expands: list[tuple[tuple[str, ...], EdgeType, Direction]] = []
        self.nodes_read: list[str] = []

    async def expand(
        self, ids: Sequence[str], edge_type: EdgeType, direction: Direction
    ) -> list[EdgeRecord]:
        self.expands.append((tuple(ids), edge_type, direction))
        return await self._store.expand(ids, edge_type, direction)

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        self.nodes_read.extend(ids)
        return await self._store.get_nodes(ids)

    def __getattr__(self, name: str) -> Any:
        if name in ("walk_chain", "reach"):
            raise AttributeError(name)
        return getattr(self._store, name)


async def test_chain_exists_asks_each_question_once(store: GraphStore) -> None:
    report = await report_session(store)
    counting = _Counting(store)
    kinds = [
        ChainKind.VIEW_CONTAINED_CLAIMS,  # the report's claims
        ChainKind.VIEW_CITING_EVIDENCE_FOR_ARTIFACT,  # its claims, their evidence
        ChainKind.VIEW_CITED_PAPER,  # its claims, their evidence, their papers
        ChainKind.VIEW_PRODUCING_CODE,
        ChainKind.VIEW_RELATED_TASK,  # its producing code again, then on
    ]

    availability = await chain_exists(cast("GraphReader", counting), "report", kinds)

    assert availability == {
        kind: bool((await get_chain(store, "report", kind)).nodes) for kind in kinds
    }
    assert all(availability.values())
    assert len(counting.expands) == len(set(counting.expands))
    assert len(counting.nodes_read) == len(set(counting.nodes_read))
    assert report.claim_a in counting.nodes_read


async def test_chain_exists_with_a_missing_start_is_not_found(store: GraphStore) -> None:
    with pytest.raises(NodeNotFoundError):
        await chain_exists(store, "missing", [ChainKind.VIEW_GOAL])


async def test_chain_exists_needs_at_least_one_kind(store: GraphStore) -> None:
    await execution(store, "e1", 10)

    with pytest.raises(InvalidInputError):
        await chain_exists(store, "e1", [])


async def test_get_chain_with_a_missing_start_is_not_found(store: GraphStore) -> None:
    with pytest.raises(NodeNotFoundError):
        await get_chain(store, "missing", ChainKind.VIEW_GOAL)
