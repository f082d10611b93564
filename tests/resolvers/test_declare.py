"""Declare rules (SPEC §3.4): evidence has exactly one source; cites name a target."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from resolvers.errors import DeclareCode, DeclareRejectedError
from resolvers.records import Label
from tests.resolvers import builders as b

if TYPE_CHECKING:
    from resolvers.store import GraphStore

A = "https://doi.org/10.1/a"


async def evidence_nodes(store: GraphStore) -> list[str]:
    page = await store.list_nodes(labels=[Label.EVIDENCE], session_id=b.S1, limit=10)
    return [node.id for node in page.items]


async def test_evidence_needs_exactly_one_source(store: GraphStore) -> None:
    await b.search(store, "q", 1, ["doi:10.1/A"])
    await b.upload(store, "paper.pdf", media_type=b.PDF)

    with pytest.raises(DeclareRejectedError) as neither:
        await b.evidence(store, "TP53 is mutated.")
    with pytest.raises(DeclareRejectedError) as both:
        await b.evidence(store, "TP53 is mutated.", link=A, source_file="paper.pdf")

    assert neither.value.code is DeclareCode.NO_SOURCE
    assert both.value.code is DeclareCode.AMBIGUOUS_SOURCE
    assert await evidence_nodes(store) == []


async def test_a_claim_whose_cites_are_all_empty_ids_is_rejected(store: GraphStore) -> None:
    await b.upload(store, "data.csv")

    with pytest.raises(DeclareRejectedError) as caught:
        await b.claim(store, "TP53 drives it.", evidence_ids=[" "], artifacts=[("", 1)])

    assert caught.value.code is DeclareCode.NO_CITES_TARGET
    assert caught.value.instruction
    page = await store.list_nodes(labels=[Label.CLAIM], session_id=b.S1, limit=10)
    assert page.items == []
