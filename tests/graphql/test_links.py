"""Link normalisation of Paper links and `sourcePaperLink` (SPEC §3.7, reference §8.2 item 12)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from resolvers.links import normalize_link
from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

DOI = "https://doi.org/10.1038/nature12373"


@pytest.mark.parametrize(
    "raw",
    [
        "10.1038/Nature12373",
        "doi:10.1038/NATURE12373",
        "DOI: 10.1038/nature12373",
        "doi.org/10.1038/nature12373",
        "https://doi.org/10.1038/Nature12373",
        "http://doi.org/10.1038/nature12373",
        "https://dx.doi.org/10.1038/nature12373",
        "http://dx.doi.org/10.1038/nature12373",
        "dx.doi.org/10.1038/nature12373",
    ],
)
def test_every_doi_form_becomes_the_doi_org_url(raw: str) -> None:
    assert normalize_link(raw) == DOI


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://europepmc.org/article/MED/123", "https://europepmc.org/article/MED/123"),
        ("HTTPS://EuropePMC.ORG/article/MED/123", "https://europepmc.org/article/MED/123"),
        ("https://user:secret@x.org/a", "https://x.org/a"),
        ("https://x.org:443/a", "https://x.org/a"),
        ("http://x.org:80/a", "https://x.org/a"),
        ("https://x.org:8443/a", "https://x.org:8443/a"),
        ("https://x.org/a#section-2", "https://x.org/a"),
        ("https://x.org/a/", "https://x.org/a"),
        ("https://x.org./a", "https://x.org/a"),
        ("europepmc.org/article/MED/123", "https://europepmc.org/article/MED/123"),
        ("  https://x.org/a  ", "https://x.org/a"),
    ],
)
def test_urls_are_canonical(raw: str, expected: str) -> None:
    assert normalize_link(raw) == expected


def test_tracking_parameters_are_dropped_and_others_kept() -> None:
    raw = "https://x.org/a?utm_source=feed&page=2&fbclid=f&UTM_medium=m&gclid=g&id=7"

    assert normalize_link(raw) == "https://x.org/a?page=2&id=7"


def test_different_query_parameters_stay_different_pages() -> None:
    first = normalize_link("https://x.org/article.php?id=1")

    second = normalize_link("https://x.org/article.php?id=2")

    assert first != second


def test_path_case_is_kept() -> None:
    assert normalize_link("https://x.org/A") != normalize_link("https://x.org/a")


@pytest.mark.parametrize("raw", ["", "   ", "\t\n"])
def test_a_blank_link_is_empty(raw: str) -> None:
    assert normalize_link(raw) == ""


async def test_a_paper_is_found_by_any_form_of_its_link(gql: GraphQLClient) -> None:
    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[b.paper("10.1038/Nature12373")])

    found = await b.node(gql, "http://dx.doi.org/10.1038/nature12373", session="s1")

    assert (found["__typename"], found["id"]) == ("Paper", f"Paper:s1|{DOI}")


async def test_evidence_keeps_the_normalised_link(gql: GraphQLClient) -> None:
    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[b.paper("http://x.org/a/")])

    result = await b.evidence(gql, "s1", link="HTTPS://X.ORG/a?utm_source=mail#top")

    evidence = await b.node(gql, f"Evidence:{result['evidenceId']}")
    assert evidence["properties"]["source_paper_link"] == "https://x.org/a"


async def test_distinct_arxiv_ids_stay_distinct_papers(gql: GraphQLClient) -> None:
    papers = [b.paper("arXiv:2101.00001", "First"), b.paper("arXiv:2203.12345", "Second")]
    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=papers)

    graph = await b.subgraph(gql, "s1")

    titles = {n["key"]: n["properties"]["title"] for n in graph["nodes"] if n["label"] == "PAPER"}
    assert titles == {
        "https://arxiv.org/abs/2101.00001": "First",
        "https://arxiv.org/abs/2203.12345": "Second",
    }


async def test_evidence_for_an_identifier_never_found_is_rejected(gql: GraphQLClient) -> None:
    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[b.paper("PMID:31452104")])

    found = await b.evidence(gql, "s1", link="https://pubmed.ncbi.nlm.nih.gov/31452104/")
    missing = await b.evidence(gql, "s1", link="PMID:31452105")

    assert found["__typename"] == "EvidenceDeclared"
    assert (missing["__typename"], missing["code"]) == ("DeclareRejected", "SOURCE_PAPER_NOT_FOUND")


async def test_spellings_of_one_doi_are_one_paper(gql: GraphQLClient) -> None:
    spellings = [
        "https://doi.org/10.1000/abc",
        "https://doi.org/10.1000/abc/",
        "https://doi.org/10.1000/abc?utm_source=feed",
        "https://doi.org/10.1000/abc#sec",
    ]
    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[b.paper(s) for s in spellings])

    graph = await b.subgraph(gql, "s1")

    assert b.node_ids(graph, "PAPER") == {"Paper:s1|https://doi.org/10.1000/abc"}
