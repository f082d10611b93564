"""Uploads: SourceFiles feed the goal, are read by code and cited (reference §7.1 66-70)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

GOAL = "ResearchGoal:goal:session:s1"
DATA = "SourceFile:source_file:session:s1:data.csv"
PDF = "application/pdf"


async def test_an_upload_before_the_first_message_feeds_the_goal_later(
    gql: GraphQLClient,
) -> None:
    await b.upload(gql, "s1", "data.csv")
    before = await b.subgraph(gql, "s1")

    await b.first_message(gql, "s1", "Find TP53 partners")

    after = await b.subgraph(gql, "s1")
    assert b.node_ids(before) == {DATA}
    assert b.edges_of(before, "FEEDS") == set()
    assert b.props_of(after, GOAL)["core_objective"] == "Find TP53 partners"
    assert b.edges_of(after, "FEEDS") == {(DATA, GOAL)}


async def test_an_upload_after_the_first_message_feeds_the_goal(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")

    await b.upload(gql, "s1", "data.csv")

    assert b.edges_of(await b.subgraph(gql, "s1"), "FEEDS") == {(DATA, GOAL)}


async def test_a_reupload_updates_the_file_and_keeps_a_known_media_type(
    gql: GraphQLClient,
) -> None:
    await b.upload(gql, "s1", "data.csv", "text/csv", size=100, contentHash="hash-a")

    await b.upload(gql, "s1", "data.csv", None, size=250, contentHash="hash-b", createdAt=b.at(5))

    graph = await b.subgraph(gql, "s1")
    props = b.props_of(graph, DATA)
    assert b.node_ids(graph) == {DATA}
    assert (props["size"], props["content_hash"], props["media_type"]) == (
        250,
        "hash-b",
        "text/csv",
    )


async def test_a_file_key_resolves_to_the_source_file(gql: GraphQLClient) -> None:
    await b.upload(gql, "s1", "data.csv")

    found = await b.node(gql, b.file_id("s1", "data.csv"))

    assert (found["__typename"], found["id"]) == ("SourceFile", DATA)


async def test_an_execution_reading_an_upload_gets_one_input_edge(gql: GraphQLClient) -> None:
    await b.upload(gql, "s1", "data.csv")

    await b.execution(gql, "s1", "e1", inputSourceFiles=[b.file_id("s1", "data.csv")])

    assert b.edges_of(await b.subgraph(gql, "s1"), "INPUT") == {(DATA, "Code:e1")}


async def uploads(gql: GraphQLClient) -> None:
    await b.upload(gql, "s1", "paper.pdf", PDF)
    await b.upload(gql, "s1", "data.csv", "text/csv")
    await b.upload(gql, "s1", "notes.bin", None)


async def test_only_a_pdf_is_an_evidence_source(gql: GraphQLClient) -> None:
    await uploads(gql)

    pdf = await b.evidence(gql, "s1", file=b.file_id("s1", "paper.pdf"))
    csv = await b.evidence(gql, "s1", file=b.file_id("s1", "data.csv"))
    unknown = await b.evidence(gql, "s1", file=b.file_id("s1", "notes.bin"))
    absent = await b.evidence(gql, "s1", file=b.file_id("s1", "absent.pdf"))

    assert pdf["__typename"] == "EvidenceDeclared"
    assert (csv["__typename"], csv["code"]) == ("DeclareRejected", "SOURCE_FILE_NOT_PDF")
    assert "citesSourceFiles" in csv["instruction"]
    assert (unknown["__typename"], unknown["code"]) == ("DeclareRejected", "SOURCE_FILE_NOT_PDF")
    assert (absent["__typename"], absent["code"]) == ("DeclareRejected", "SOURCE_FILE_NOT_FOUND")


async def test_only_a_non_pdf_file_is_cited_directly(gql: GraphQLClient) -> None:
    await uploads(gql)

    csv = await b.claim(gql, "s1", files=[b.file_id("s1", "data.csv")], content="from csv")
    unknown = await b.claim(gql, "s1", files=[b.file_id("s1", "notes.bin")], content="from bin")
    pdf = await b.claim(gql, "s1", files=[b.file_id("s1", "paper.pdf")])
    absent = await b.claim(gql, "s1", files=[b.file_id("s1", "absent.csv")])

    assert csv["chipMap"][0]["kind"] == unknown["chipMap"][0]["kind"] == "SOURCE_FILE"
    assert (pdf["__typename"], pdf["code"]) == ("DeclareRejected", "SOURCE_FILE_IS_PDF")
    assert "declare_evidence" in pdf["instruction"]
    assert (absent["__typename"], absent["code"]) == ("DeclareRejected", "SOURCE_FILE_NOT_FOUND")


async def test_files_cite_directly_and_pdfs_through_evidence(gql: GraphQLClient) -> None:
    await uploads(gql)

    await b.evidence(gql, "s1", file=b.file_id("s1", "paper.pdf"))
    await b.claim(gql, "s1", files=[b.file_id("s1", "data.csv")], content="from csv")
    await b.claim(gql, "s1", files=[b.file_id("s1", "notes.bin")], content="from bin")

    graph = await b.subgraph(gql, "s1")
    assert {source for source, _ in b.edges_of(graph, "SUPPORTS")} == {
        DATA,
        "SourceFile:source_file:session:s1:notes.bin",
    }
    assert {source for source, _ in b.edges_of(graph, "EXTRACTS")} == {
        "SourceFile:source_file:session:s1:paper.pdf"
    }


async def test_a_file_of_another_session_is_not_found(gql: GraphQLClient) -> None:
    await b.upload(gql, "s1", "paper.pdf", PDF)

    result = await b.evidence(gql, "s2", file=b.file_id("s1", "paper.pdf"))

    assert (result["__typename"], result["code"]) == ("DeclareRejected", "SOURCE_FILE_NOT_FOUND")
