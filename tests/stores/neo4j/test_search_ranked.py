"""Search ranked and paged in Cypher (``search_ranked``) against a model of SPEC §4, and the
one-time upgrade of nodes stored before the search ranks existed."""

from __future__ import annotations

import random
import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from gateway.stores.neo4j.schema import OLD_SEARCH_INDEX, SEARCH_FOLD
from resolvers import text
from resolvers.records import Label, NodeRecord, node_id
from tests.stores.neo4j.conftest import T0, open_store

if TYPE_CHECKING:
    from gateway.stores.neo4j import Neo4jStore

WORDS = ("tp53", "tp63", "tumour", "tumor", "growth", "gene", "genome", "kinase", "p")
# Field ranks of SPEC §4 (reference §5.1): title, abstract, …, content, the short fields.
FIELDS = {"title": 0, "abstract": 1, "objective": 3, "content": 4, "name": 5}
LABELS = (Label.CLAIM, Label.EVIDENCE, Label.PAPER)


def model_order(
    nodes: list[NodeRecord], terms: list[str], session: str | None, require_all: bool
) -> list[str]:
    """The ids SPEC §4 ranks for ``terms``: a term matches a word it is a prefix of; more terms
    first, then the better field a term matched in, then newer, then by id."""
    ranked: list[tuple[int, int, float, str]] = []
    for node in nodes:
        if session is not None and node.session_id != session:
            continue
        best, matched = 5, 0
        for term in terms:
            ranks = [
                rank
                for field, rank in FIELDS.items()
                for word in re.split(r"[\W_]+", str(node.props.get(field, "")).lower())
                if word and word.startswith(term)
            ]
            if ranks:
                matched += 1
                best = min(best, *ranks)
        if matched and (matched == len(terms) or not require_all):
            ranked.append((-matched, best, -node.created_at.timestamp(), node.id))
    return [row[3] for row in sorted(ranked)]


def random_nodes(rng: random.Random, count: int) -> list[NodeRecord]:
    nodes = []
    for index in range(count):
        label = rng.choice(LABELS)
        props: dict[str, Any] = {
            field: " ".join(rng.choices(WORDS, k=rng.randint(1, 3)))
            for field in rng.sample(sorted(FIELDS), rng.randint(1, 3))
        }
        session = rng.choice(("s1", "s2"))
        key = f"k{index}"
        created = T0 + timedelta(seconds=rng.randint(0, 3))  # many ties: id decides
        nodes.append(NodeRecord(node_id(label, key, session), label, key, session, created, props))
    return nodes


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_ranked_pages_follow_the_model(neo4j_store: Neo4jStore, seed: int) -> None:
    rng = random.Random(seed)
    nodes = random_nodes(rng, 40)
    async with neo4j_store.transaction() as tx:
        for node in nodes:
            await tx.put_node(node)

    for _ in range(12):
        terms = sorted({rng.choice(("tp", "tp53", "tum", "gen", "growth", "p", "x"))})
        session = rng.choice((None, "s1"))
        require_all = rng.random() < 0.3
        expected = model_order(nodes, terms, session, require_all)
        pages, offset = [], 0
        while True:
            page = await neo4j_store.search_ranked(
                terms, session_id=session, require_all=require_all, limit=7, offset=offset
            )
            pages += [node.id for node in page.items]
            assert page.total == len(expected)
            offset += 7
            if not page.truncated:
                break

        assert pages == expected, (terms, session, require_all)


async def test_nodes_stored_before_the_ranks_are_upgraded_once(
    neo4j_store: Neo4jStore, connection: dict[str, str]
) -> None:
    paper_id = node_id(Label.PAPER, "l1", "s1")
    title = NodeRecord(paper_id, Label.PAPER, "l1", "s1", T0, {"title": "tp53", "link": "l1"})
    body = NodeRecord(node_id(Label.CLAIM, "c1"), Label.CLAIM, "c1", "s1", T0, {"content": "tp53"})
    async with neo4j_store.transaction() as tx:
        await tx.put_node(body)
        await tx.put_node(title)
    await neo4j_store._write("MATCH (n) REMOVE n._sm_ranks, n._sm_sess", 10)
    await neo4j_store._write(
        "CREATE FULLTEXT INDEX sm_search IF NOT EXISTS FOR (n:Claim|Paper) ON EACH [n._sm_text]",
        10,
    )
    before = await neo4j_store.search_ranked(["tp53"], session_id="s1", limit=10)

    reopened = await open_store(connection)
    try:
        after = await reopened.search_ranked(["tp53"], session_id="s1", limit=10)
        indexes = {row["name"] for row in await reopened._write("SHOW INDEXES YIELD name", 10)}
    finally:
        await reopened.aclose()

    assert before.items == []  # no session token yet: the index cannot see them
    assert [node.id for node in after.items] == [title.id, body.id]  # title ranks first
    assert OLD_SEARCH_INDEX not in indexes


# How nodes were indexed before each fold the store upgrades from: the text's attribute of
# ``resolvers.text`` patched, the mark left, the nodes' texts, a term finding each of them once
# re-indexed (the last one, ASCII, was found before too).
FOLDS_BEFORE = {
    # No mark: text was lower-cased. Non-ASCII text anywhere, after a line break too.
    "lower-cased": (
        ("fold", str.lower),
        "MATCH (m:SmSchema) DETACH DELETE m",
        {"Straße names": "strasse", "e\u0301clair study": "éclair", "one\nMaße": "masse"},
    ),
    # Mark 1: the dot a folded "İ" leaves on its "i" was kept.
    "dotted i": (
        ("_DOTTED_I", "\N{NULL}never"),
        "MERGE (m:SmSchema {name: 'search'}) SET m.fold = 1",
        {"İstanbul cohort": "istanbul", "first line\nki\u0307t data": "kit"},
    ),
}


@pytest.mark.parametrize("before_fold", FOLDS_BEFORE)
async def test_nodes_indexed_before_search_folded_text_as_now_are_indexed_again_once(
    neo4j_store: Neo4jStore,
    connection: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    before_fold: str,
) -> None:
    (name, value), mark, texts = FOLDS_BEFORE[before_fold]
    texts = {**texts, "tp53": "tp53"}
    nodes = [
        NodeRecord(node_id(Label.CLAIM, f"c{n}"), Label.CLAIM, f"c{n}", "s1", T0, {"content": t})
        for n, t in enumerate(texts)
    ]
    with monkeypatch.context() as earlier:  # how they were indexed before
        earlier.setattr(text, name, value)
        async with neo4j_store.transaction() as tx:
            for node in nodes:
                await tx.put_node(node)
    await neo4j_store._write(mark, 10)
    terms = list(texts.values())
    before = [await neo4j_store.search_ranked([t], session_id="s1", limit=5) for t in terms]

    reopened = await open_store(connection)
    try:
        after = [await reopened.search_ranked([t], session_id="s1", limit=5) for t in terms]
        marks = await reopened._write("MATCH (m:SmSchema) RETURN m.fold AS fold", 10)
    finally:
        await reopened.aclose()

    assert [[node.id for node in page.items] for page in before] == [[]] * (len(nodes) - 1) + [
        [nodes[-1].id]
    ]
    assert [[node.id for node in page.items] for page in after] == [[node.id] for node in nodes]
    assert [row["fold"] for row in marks] == [SEARCH_FOLD]
