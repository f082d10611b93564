"""Writes that wait share a transaction (``Neo4jStore.write``, ``queue.WriteQueue``): each is
still applied or refused on its own, in its session's order."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import neo4j

from resolvers.errors import KeyOwnedByOtherSessionError
from resolvers.records import Label
from tests.resolvers import builders as b

if TYPE_CHECKING:
    import pytest

    from gateway.stores.neo4j import Neo4jStore


async def test_a_refused_write_in_a_shared_transaction_is_refused_alone(
    neo4j_store: Neo4jStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await b.execution(neo4j_store, "taken", 5, session="s2")
    sent = [("s1", "e1"), ("s1", "taken"), ("s3", "e3"), ("s1", "e4"), ("s4", "e5")]
    transactions: list[int] = []  # the writes each transaction ran (or tried to)
    original = neo4j.AsyncSession.execute_write

    async def counted(self: neo4j.AsyncSession, work: Any, *args: Any) -> Any:
        try:
            return await original(self, work, *args)
        finally:
            transactions.append(len(args[0]))

    monkeypatch.setattr(neo4j.AsyncSession, "execute_write", counted)

    answers = await asyncio.gather(
        *(b.execution(neo4j_store, run, 10 + n, session=s) for n, (s, run) in enumerate(sent)),
        return_exceptions=True,
    )

    refused = answers[1]
    assert isinstance(refused, KeyOwnedByOtherSessionError)
    assert refused.owner_session_id == "s2"
    assert [answer for n, answer in enumerate(answers) if n != 1] == [
        b.call(run) for n, (_, run) in enumerate(sent) if n != 1
    ]
    for session, runs in (("s1", ["e1", "e4"]), ("s3", ["e3"]), ("s4", ["e5"])):
        steps = await neo4j_store.chain_members(session, None)
        assert [step.id for step in steps] == [b.call(run) for run in runs]
    calls = await neo4j_store.list_nodes(labels=[Label.TOOL_CALL], session_id="s2", limit=5)
    assert [call.id for call in calls.items] == [b.call("taken")]
    assert max(transactions) > 1  # some of them did share a transaction
