"""Facts never depend on arrival order (SPEC §3.9): merged properties and ``limit 1`` picks are
decided by the events' own times and version numbers; a re-observed step moves."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pytest

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

Step = Callable[["GraphQLClient", str], Awaitable[Any]]


async def _in_both_orders(gql: GraphQLClient, steps: list[Step]) -> None:
    """Record ``steps`` in session ``fwd`` in order and in session ``rev`` reversed."""
    for step in steps:
        await step(gql, "fwd")
    for step in reversed(steps):
        await step(gql, "rev")


async def test_a_papers_title_comes_from_its_earliest_retrieval(gql: GraphQLClient) -> None:
    def search(query: str, at: float, title: str) -> Step:
        return lambda gql, s: b.tool_call(
            gql, s, f"subtask:mcp:{s}-{query}", at, papers=[b.paper("10.1000/x", title)]
        )

    await _in_both_orders(gql, [search("early", 10, "Early title"), search("late", 20, "Late")])

    for session in ("fwd", "rev"):
        paper = b.props_of(await b.subgraph(gql, session), f"Paper:{session}|{X_DOI}")
        assert (paper["title"], paper["retrieval_count"]) == ("Early title", 2), session
        assert (paper["first_retrieved_at"], paper["retrieved_at"]) == (ISO[10], ISO[20])


X_DOI = "https://doi.org/10.1000/x"
ISO = {t: b.at(t).replace("+00:00", ".000000Z") for t in (10, 20, 30)}


async def test_a_paper_found_again_by_the_same_call_keeps_the_latest_time(
    gql: GraphQLClient,
) -> None:
    def found(at: float) -> Step:
        return lambda gql, s: b.tool_call(
            gql, s, f"subtask:mcp:{s}-q", at, papers=[b.paper("10.1000/x", "T")]
        )

    await _in_both_orders(gql, [found(10), found(20)])

    for session in ("fwd", "rev"):
        paper = b.props_of(await b.subgraph(gql, session), f"Paper:{session}|{X_DOI}")
        assert (paper["retrieval_count"], paper["retrieved_at"]) == (1, ISO[20]), session
        assert paper["first_retrieved_at"] == ISO[10], session


async def test_a_reupload_never_mixes_two_uploads(gql: GraphQLClient) -> None:
    def upload(at: float, size: int, digest: str) -> Step:
        return lambda gql, s: b.upload(
            gql, s, "data.csv", size=size, contentHash=digest, createdAt=b.at(at)
        )

    await _in_both_orders(gql, [upload(10, 100, "hash-a"), upload(20, 250, "hash-b")])

    for session in ("fwd", "rev"):
        graph = await b.subgraph(gql, session)
        props = b.props_of(graph, f"SourceFile:{b.file_id(session, 'data.csv')}")
        picked = (props["size"], props["content_hash"], props["uploaded_at"])
        assert picked == (250, "hash-b", ISO[20]), session


async def test_an_execution_keeps_its_latest_terminal_observation(gql: GraphQLClient) -> None:
    def run(status: str, at: float, exit_code: int) -> Step:
        return lambda gql, s: b.execution(
            gql, s, f"exec-{s}", at, status=status, exitCode=exit_code
        )

    await _in_both_orders(gql, [run("running", 5, 0), run("failed", 20, 1), run("succeeded", 9, 0)])

    for session in ("fwd", "rev"):
        graph = await b.subgraph(gql, session)
        code = b.props_of(graph, f"Code:exec-{session}")
        call = b.props_of(graph, f"ToolCall:subtask:exec-{session}")
        assert (code["status"], code["exit_code"], code["finished_at"]) == ("failed", 1, ISO[20])
        assert (call["status"], call["chain_at"]) == ("failed", ISO[20]), session


@pytest.mark.parametrize("later", [30, 22])
async def test_a_reobserved_step_moves_to_its_new_place(gql: GraphQLClient, later: float) -> None:
    await b.first_message(gql, "s1")
    for name, at in (("e1", 10), ("e2", 20), ("e3", 25)):
        await b.execution(gql, "s1", name, at)

    await b.execution(gql, "s1", "e1", later)

    expected = ["e2", "e3", "e1"] if later == 30 else ["e2", "e1", "e3"]
    chain = await b.session_chain(gql, "s1")
    assert chain == [f"ToolCall:subtask:{name}" for name in expected]
    nexts = b.edges_of(await b.subgraph(gql, "s1"), "NEXT")
    steps = ["ResearchGoal:goal:session:s1", *(f"ToolCall:subtask:{n}" for n in expected)]
    assert nexts == set(itertools.pairwise(steps))


async def test_the_containing_report_is_the_newest_version(gql: GraphQLClient) -> None:
    async def version(gql: GraphQLClient, s: str, number: int) -> None:
        artifact = b.artifact(f"report-{s}", number)
        await b.execution(gql, s, f"exec-{s}-{number}", number, artifacts=[artifact])

    async def claim_in(gql: GraphQLClient, s: str, number: int) -> None:
        await b.link_claims(gql, s, f"report-{s}", number, [claims[s]])

    claims: dict[str, str] = {}
    for session in ("fwd", "rev"):
        await b.upload(gql, session, "notes.txt", "text/plain")
        made = await b.claim(gql, session, files=[b.file_id(session, "notes.txt")])
        claims[session] = made["claimId"]
    for session, order in (("fwd", (1, 2)), ("rev", (2, 1))):
        for number in order:
            await version(gql, session, number)
            await claim_in(gql, session, number)

    for session in ("fwd", "rev"):
        chain = await b.chain(gql, f"Claim:{claims[session]}", "VIEW_CONTAINING_ARTIFACT")
        assert [n["id"] for n in chain["nodes"]][1:] == [f"Artifact:report-{session}#v2"]
