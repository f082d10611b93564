"""A Neo4j session view keeps the session's writes out while it reads, and nothing else; a
chain walk and a trace, which take the session's lock inside their first statement, too."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, LiteralString

from gateway.stores.neo4j import store as store_module
from gateway.stores.neo4j import traces
from resolvers.chains import ChainKind, get_chain
from resolvers.errors import NodeNotFoundError
from resolvers.provenance import trace_provenance
from resolvers.records import EdgeRecord, EdgeType, Label
from resolvers.store import one_state
from tests.stores.neo4j.conftest import make_node

if TYPE_CHECKING:
    import neo4j
    import pytest

    from gateway.stores.neo4j import Neo4jStore
    from resolvers.records import NodeRecord

WAIT = 1.0  # seconds a write is given to land while it should not


async def keys(store: Neo4jStore, session: str) -> list[str]:
    page = await store.list_nodes(session_id=session, limit=10)
    return [node.key for node in page.items]


async def test_a_write_of_the_session_lands_only_after_the_view(neo4j_store: Neo4jStore) -> None:
    await neo4j_store.write("s1", lambda tx: tx.put_node(make_node(Label.CLAIM, "first", "s1")))

    async with one_state(neo4j_store, "s1") as view:
        before = await view.list_nodes(session_id="s1", limit=10)
        writing = asyncio.ensure_future(
            neo4j_store.write("s1", lambda tx: tx.put_node(make_node(Label.CLAIM, "late", "s1")))
        )
        await asyncio.sleep(WAIT)
        again = await view.list_nodes(session_id="s1", limit=10)
        found = await view.get_nodes([make_node(Label.CLAIM, "late", "s1").id])
        landed_during = writing.done()
    await asyncio.wait_for(writing, 30)

    assert [n.key for n in before.items] == [n.key for n in again.items] == ["first"]
    assert found == [None]
    assert not landed_during
    assert await keys(neo4j_store, "s1") == ["late", "first"]


async def test_a_view_of_one_session_lets_other_sessions_write(neo4j_store: Neo4jStore) -> None:
    async with one_state(neo4j_store, "s1") as view:
        await view.list_nodes(session_id="s1", limit=10)
        await asyncio.wait_for(
            neo4j_store.write("s2", lambda tx: tx.put_node(make_node(Label.CLAIM, "c", "s2"))),
            30,
        )
        seen = await view.list_nodes(session_id="s2", limit=10)

    assert [n.key for n in seen.items] == ["c"]


async def test_a_view_changes_nothing(neo4j_store: Neo4jStore) -> None:
    async with one_state(neo4j_store, "never-written") as view:
        page = await view.list_nodes(session_id="never-written", limit=10)

    (record,) = await neo4j_store._fetch(
        "MATCH (c:SessionCounter {session_id: 'never-written'}) RETURN count(c) AS n"
    )
    assert page.total == 0
    assert record["n"] == 0


async def test_a_view_left_by_an_error_frees_the_session(neo4j_store: Neo4jStore) -> None:
    async def fail_inside() -> None:
        async with one_state(neo4j_store, "s1") as view:
            await view.list_nodes(session_id="s1", limit=10)
            raise RuntimeError("the reader failed")

    failed = await asyncio.gather(fail_inside(), return_exceptions=True)
    await asyncio.wait_for(
        neo4j_store.write("s1", lambda tx: tx.put_node(make_node(Label.CLAIM, "c", "s1"))), 30
    )

    assert [type(error) for error in failed] == [RuntimeError]
    assert await keys(neo4j_store, "s1") == ["c"]


def _produces(source: NodeRecord, target: NodeRecord) -> EdgeRecord:
    return EdgeRecord(EdgeType.PRODUCES, source.id, target.id)


async def test_a_chain_and_a_trace_begun_during_a_write_see_all_of_it(
    neo4j_store: Neo4jStore,
) -> None:
    code, late_code = make_node(Label.CODE, "c1"), make_node(Label.CODE, "c2")
    made = make_node(Label.ARTIFACT, "a#v1", artifact_id="a", version=1)
    late = make_node(Label.ARTIFACT, "b#v1", artifact_id="b", version=1)
    async with neo4j_store.transaction("s1") as tx:
        for node in (code, late_code, made):
            await tx.put_node(node)
        await tx.put_edge(_produces(code, made))
    # Read once before: the statements are planned, so only a lock can hold them back later.
    before = await get_chain(neo4j_store, code.id, ChainKind.VIEW_OUTPUT)
    await trace_provenance(neo4j_store, made.id, target_label=Label.CODE)

    async with neo4j_store.transaction("s1") as tx:  # holds the session's lock until it commits
        await tx.put_node(late)
        await tx.put_edge(_produces(code, late))
        await tx.put_edge(_produces(late_code, made))
        chain = asyncio.ensure_future(get_chain(neo4j_store, code.id, ChainKind.VIEW_OUTPUT))
        trace = asyncio.ensure_future(
            trace_provenance(neo4j_store, made.id, target_label=Label.CODE)
        )
        await asyncio.sleep(WAIT)
        answered_during = chain.done() or trace.done()
    outputs = await asyncio.wait_for(chain, 30)
    traced = await asyncio.wait_for(trace, 30)

    assert {node.id for node in before.nodes} == {code.id, made.id}
    assert not answered_during
    assert {node.id for node in outputs.nodes} == {code.id, made.id, late.id}
    assert {step.node.id for step in traced.chain} == {code.id, late_code.id}


async def _counter(store: Neo4jStore, session: str) -> list[dict[str, Any]]:
    records = await store._fetch(
        "MATCH (c:SessionCounter {session_id: $session}) RETURN properties(c) AS c",
        session=session,
    )
    return [record["c"] for record in records]


async def test_a_chain_and_a_trace_change_nothing(neo4j_store: Neo4jStore) -> None:
    # They run in auto-commit: what their lock changes must be undone inside the statement.
    code = make_node(Label.CODE, "c1")
    made = make_node(Label.ARTIFACT, "a#v1", artifact_id="a", version=1)
    async with neo4j_store.transaction("s1") as tx:
        for node in (code, made):
            await tx.put_node(node)
        await tx.put_edge(_produces(code, made))
    counter = await _counter(neo4j_store, "s1")
    never = make_node(Label.CODE, "c9", "never-written")

    chain = await get_chain(neo4j_store, code.id, ChainKind.VIEW_OUTPUT)
    traced = await trace_provenance(neo4j_store, made.id, target_label=Label.CODE)
    missing = await asyncio.gather(
        get_chain(neo4j_store, never.id, ChainKind.VIEW_OUTPUT, session_id="never-written"),
        trace_provenance(neo4j_store, never.id, session_id="never-written"),
        return_exceptions=True,
    )

    assert {node.id for node in chain.nodes} == {code.id, made.id}
    assert [step.node.id for step in traced.path] == [code.id]
    assert [type(error) for error in missing] == [NodeNotFoundError, NodeNotFoundError]
    assert await _counter(neo4j_store, "s1") == counter
    assert await _counter(neo4j_store, "never-written") == []
    # The session's first write still finds no counter in its way.
    await neo4j_store.write("never-written", lambda tx: tx.put_node(never))
    assert await keys(neo4j_store, "never-written") == ["c9"]


async def test_a_trace_that_asks_for_more_is_read_again_from_one_state(
    neo4j_store: Neo4jStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A region of no levels: the trace's first hop is a statement of its own, which a trace
    # in auto-commit cannot send under its lock. A write lands right after the region was
    # read; the answer must come wholly from one state: here, the one after the write.
    code, late_code = make_node(Label.CODE, "c1"), make_node(Label.CODE, "c2")
    made = make_node(Label.ARTIFACT, "a#v1", artifact_id="a", version=1, title="before")
    changed = make_node(Label.ARTIFACT, "a#v1", artifact_id="a", version=1, title="after")
    async with neo4j_store.transaction("s1") as tx:
        for node in (code, late_code, made):
            await tx.put_node(node)
        await tx.put_edge(_produces(code, made))
    monkeypatch.setattr(traces, "REGION_LEVELS", 0)
    one_statement = store_module._OneStatement._fetch
    sent: list[str] = []

    async def write_after_the_first(
        self: store_module._OneStatement, query: LiteralString, **params: Any
    ) -> list[neo4j.Record]:
        sent.append(query)
        records = await one_statement(self, query, **params)
        if len(sent) == 1:
            async with neo4j_store.transaction("s1") as tx:
                await tx.put_node(changed)
                await tx.put_edge(_produces(late_code, made))
        return records

    monkeypatch.setattr(store_module._OneStatement, "_fetch", write_after_the_first)

    traced = await trace_provenance(neo4j_store, made.id, target_label=Label.CODE)

    assert len(sent) == 2  # the region, then the hop, refused: the walk ran again
    assert traced.start.get("title") == "after"
    assert {step.node.id for step in traced.chain} == {code.id, late_code.id}
    assert traced == await trace_provenance(neo4j_store, made.id, target_label=Label.CODE)
