"""searchNodes: whole-word term search, ranked (SPEC §4, reference §7.1 9-14 and 34, §8.3 24)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

SEARCH = """query($q: String!, $mode: MatchMode, $s: String, $labels: [NodeLabel!]) {
  searchNodes(query: $q, mode: $mode, sessionId: $s, labels: $labels) { __typename
    ... on NodeList { total truncated nodes { id } } } }"""


async def search(gql: GraphQLClient, query: str, **variables: Any) -> list[str]:
    data = await gql.execute(SEARCH, q=query, **{"s": "s1", **variables})
    return [found["id"] for found in data["searchNodes"]["nodes"]]


async def papers(gql: GraphQLClient, session: str = "s1", *found: dict[str, Any]) -> None:
    await b.tool_call(gql, session, f"subtask:mcp:q-{session}", papers=list(found))


async def test_all_terms_matches_only_the_paper_with_every_term(gql: GraphQLClient) -> None:
    survey = b.paper("x.org/a", "A Survey on Multi-Agent Systems")
    note = b.paper("x.org/b", "Another Note on Surveys", abstract="a brief on prior work")
    await papers(gql, "s1", survey, note)

    all_terms = await search(gql, "A Survey on Multi-Agent Systems", mode="ALL_TERMS")
    any_term = await search(gql, "A Survey on Multi-Agent Systems", mode="ANY_TERM")

    assert all_terms == ["Paper:s1|https://x.org/a"]
    assert set(any_term) == {"Paper:s1|https://x.org/a", "Paper:s1|https://x.org/b"}


async def test_more_matched_terms_rank_first(gql: GraphQLClient) -> None:
    await papers(gql, "s1", b.paper("x.org/a", "TP53 review"), b.paper("x.org/b", "TP53 in NSCLC"))

    found = await search(gql, "tp53 nsclc")

    assert found == ["Paper:s1|https://x.org/b", "Paper:s1|https://x.org/a"]


async def test_a_better_field_ranks_first_then_the_newer_node_and_pages_keep_that_order(
    gql: GraphQLClient,
) -> None:
    in_abstract = b.paper("x.org/a", "Signalling review", abstract="Kinase inhibitors")
    older_title = b.paper("x.org/b", "Kinase atlas")
    newer_title = b.paper("x.org/c", "Kinases in tumours")
    for number, found in enumerate((in_abstract, older_title, newer_title)):
        await b.tool_call(gql, "s1", f"subtask:mcp:q{number}", 10 + number, papers=[found])
    pages = """query($after: String) { searchNodes(query: "kinase", sessionId: "s1", first: 1,
      after: $after) { ... on NodeList { total endCursor nodes { id } } } }"""

    whole = await search(gql, "kinase")
    paged: list[str] = []
    after = None
    for _ in range(4):
        page = (await gql.execute(pages, after=after))["searchNodes"]
        paged += [found["id"] for found in page["nodes"]]
        after = page["endCursor"]
        if after is None:
            break

    expected = ["Paper:s1|https://x.org/c", "Paper:s1|https://x.org/b", "Paper:s1|https://x.org/a"]
    assert whole == expected
    assert paged == expected
    assert page["total"] == 3


async def test_terms_match_whole_words_not_substrings(gql: GraphQLClient) -> None:
    await papers(gql, "s1", b.paper("x.org/a", "We mention nothing"))

    assert await search(gql, "on") == []
    assert await search(gql, "mention") == ["Paper:s1|https://x.org/a"]


async def test_a_word_matches_however_its_letters_were_encoded_or_cased(
    gql: GraphQLClient,
) -> None:
    found = {
        "x.org/a": "Stra\u00dfe names",  # ß
        "x.org/b": "e\u0301clair study",  # e + combining acute (NFD, as macOS spells names)
        "x.org/c": "\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3 myth",  # ΣΊΣΥΦΟΣ
        "x.org/d": "\uff26\uff35\uff2c\uff2c text",  # "FULL" in full-width letters
    }
    await papers(gql, "s1", *(b.paper(link, title) for link, title in found.items()))
    queries = {
        "x.org/a": ["STRASSE", "strasse", "Stra\u00dfe"],
        "x.org/b": ["\u00e9clair", "\u00c9CLAIR", "e\u0301clair"],
        "x.org/c": ["\u03c3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2", "\u03a3\u038a\u03a3"],
        "x.org/d": ["full", "FULL", "\uff46\uff55\uff4c\uff4c"],
    }

    answers = {link: [await search(gql, q) for q in terms] for link, terms in queries.items()}

    assert answers == {
        link: [[f"Paper:s1|https://{link}"]] * len(terms) for link, terms in queries.items()
    }


async def test_a_mark_no_letter_composes_with_stays_inside_its_word(gql: GraphQLClient) -> None:
    found = {
        "x.org/a": "\u0130zmir data",  # İ: folded, an "i" and a combining dot
        "x.org/b": "Information theory",
        "x.org/c": "\u0939\u093f\u0928\u094d\u0926\u0940",  # Hindi, with vowel signs
        "x.org/d": "\u0928\u092e\u0938\u094d\u0924\u0947",  # another Hindi word
    }
    await papers(gql, "s1", *(b.paper(link, title) for link, title in found.items()))

    izmir = await search(gql, "\u0130zmir")
    hindi = await search(gql, found["x.org/c"])

    assert (izmir, hindi) == (["Paper:s1|https://x.org/a"], ["Paper:s1|https://x.org/c"])


async def test_a_dotted_capital_i_is_found_as_a_plain_i(gql: GraphQLClient) -> None:
    # "İ" folds to "i" and a combining dot above; the dot goes, so each spelling finds it.
    await papers(gql, "s1", b.paper("x.org/a", "\u0130stanbul cohort"))
    spellings = ["istanbul", "ISTANBUL", "\u0130STANBUL", "\u0130stanbul", "i\u0307stanbul"]

    found = [await search(gql, spelling) for spelling in spellings]

    assert found == [["Paper:s1|https://x.org/a"]] * len(spellings)
    assert await search(gql, "\u0131stanbul") == []  # a dotless i (U+0131) is a letter of its own


async def test_links_tool_names_logical_names_and_domains_are_searchable(
    gql: GraphQLClient,
) -> None:
    await b.first_message(gql, "s1", domain="Oncology")
    await b.execution(gql, "s1", "e1", toolName="jupyter", artifacts=[b.artifact("volcano")])
    await papers(gql, "s1", b.paper("europepmc.org/abc", "Untitled"))

    assert await search(gql, "oncology") == ["ResearchGoal:goal:session:s1"]
    assert await search(gql, "jupyter") == ["ToolCall:subtask:e1"]
    assert await search(gql, "volcano") == ["Artifact:volcano#v1"]
    assert await search(gql, "europepmc") == ["Paper:s1|https://europepmc.org/abc"]


async def test_a_query_without_terms_finds_nothing(gql: GraphQLClient) -> None:
    await papers(gql, "s1", b.paper("x.org/a", "TP53"))

    data = await gql.execute(SEARCH, q=" ?! ", s="s1")

    assert data["searchNodes"] == {
        "__typename": "NodeList",
        "total": 0,
        "truncated": False,
        "nodes": [],
    }


async def test_without_a_session_the_same_link_is_two_distinct_papers(
    gql: GraphQLClient,
) -> None:
    await papers(gql, "s1", b.paper("x.org/a", "TP53"))
    await papers(gql, "s2", b.paper("x.org/a", "TP53"))

    found = await search(gql, "tp53", s=None)

    assert sorted(found) == ["Paper:s1|https://x.org/a", "Paper:s2|https://x.org/a"]


async def test_labels_restrict_the_search(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1", "TP53 study")
    await papers(gql, "s1", b.paper("x.org/a", "TP53"))

    found = await search(gql, "tp53", labels=["RESEARCH_GOAL"])

    assert found == ["ResearchGoal:goal:session:s1"]


async def test_an_unknown_mode_is_a_graphql_validation_error(gql: GraphQLClient) -> None:
    result = await gql.raw(SEARCH, q="tp53", mode="SOME_TERMS")

    assert result.data is None
    assert "MatchMode" in result.errors[0].message
