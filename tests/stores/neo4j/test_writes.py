"""Neo4jStore writes: round trips, rollback, concurrency, constraints, parked edges, wipe."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from resolvers.errors import StoreUnavailableError, StoreWriteError
from resolvers.records import Direction, EdgeRecord, EdgeType, Label, NodeRecord
from tests.stores.neo4j.conftest import T0, make_node, open_store

if TYPE_CHECKING:
    from gateway.stores.neo4j import Neo4jStore

CALL = make_node(Label.TOOL_CALL, "subtask:e1", seq=1, chain_at="2026-01-01T00:00:10Z")
CODE = make_node(Label.CODE, "e1")


async def test_a_node_reads_back_equal_with_every_kind_of_property(
    neo4j_store: Neo4jStore,
) -> None:
    node = NodeRecord(
        "Paper:s1|https://doi.org/10.1/x",
        Label.PAPER,
        "https://doi.org/10.1/x",
        "s1",
        T0 + timedelta(microseconds=123456),
        {
            "title": "TP53 在肿瘤中",
            "year": 2024,
            "score": 0.5,
            "open": False,
            "authors": ["A", "B"],
            "tags": [],
            "meta": {"nested": [1, "two"]},
            "mixed": [1, "x"],
        },
    )

    async with neo4j_store.transaction("s1") as tx:
        await tx.put_node(node)
    (stored,) = await neo4j_store.get_nodes([node.id])

    assert stored == node
    assert stored.created_at.tzinfo is not None


async def test_put_node_replaces_the_whole_record(neo4j_store: Neo4jStore) -> None:
    async with neo4j_store.transaction("s1") as tx:
        await tx.put_node(CODE.with_props(status="running", exit_code=1))
    async with neo4j_store.transaction("s1") as tx:
        await tx.put_node(CODE.with_props(status="completed"))

    (stored,) = await neo4j_store.get_nodes([CODE.id])

    assert stored is not None
    assert dict(stored.props) == {"status": "completed"}


async def test_reserved_property_names_are_refused(neo4j_store: Neo4jStore) -> None:
    with pytest.raises(ValueError, match="reserved"):
        async with neo4j_store.transaction("s1") as tx:
            await tx.put_node(CODE.with_props(_sm_live=True))


async def test_a_transaction_sees_its_own_writes_and_a_rollback_leaves_nothing(
    neo4j_store: Neo4jStore,
) -> None:
    edge = EdgeRecord(EdgeType.PRODUCES, CALL.id, CODE.id, {"why": "test"})
    seen: list[object] = []

    async def write_then_fail() -> None:
        async with neo4j_store.transaction("s1") as tx:
            await tx.put_node(CALL)
            await tx.put_node(CODE)
            seen.append(await tx.put_edge(edge))
            await tx.park_edge(EdgeRecord(EdgeType.INPUT, "SourceFile:f", CODE.id), "SourceFile:f")
            seen.append(await tx.next_seq("s1"))
            seen.append(await tx.get_nodes([CALL.id, CODE.id]))
            seen.append(await tx.expand([CALL.id], EdgeType.PRODUCES, Direction.OUT))
            raise RuntimeError("abort")

    with pytest.raises(RuntimeError, match="abort"):
        await write_then_fail()

    assert seen == [True, 1, [CALL, CODE], [edge]]

    assert await neo4j_store.count_nodes() == 0
    assert await neo4j_store.get_nodes([CALL.id]) == [None]
    async with neo4j_store.transaction("s1") as tx:
        assert await tx.take_parked("SourceFile:f") == []
        assert await tx.next_seq("s1") == 1


async def test_put_edge_says_whether_the_edge_is_new_and_replaces_its_props(
    neo4j_store: Neo4jStore,
) -> None:
    first = EdgeRecord(EdgeType.PRODUCES, CALL.id, CODE.id, {"n": 1})
    second = EdgeRecord(EdgeType.PRODUCES, CALL.id, CODE.id, {"n": 2})

    async with neo4j_store.transaction("s1") as tx:
        await tx.put_node(CALL)
        await tx.put_node(CODE)
        created = [await tx.put_edge(first), await tx.put_edge(second)]

    assert created == [True, False]
    assert await neo4j_store.expand([CODE.id], EdgeType.PRODUCES, Direction.IN) == [second]


async def test_an_edge_to_a_missing_node_is_refused(neo4j_store: Neo4jStore) -> None:
    async def dangling() -> None:
        async with neo4j_store.transaction("s1") as tx:
            await tx.put_node(CALL)
            await tx.put_edge(EdgeRecord(EdgeType.PRODUCES, CALL.id, CODE.id))

    with pytest.raises(ValueError, match="endpoint missing"):
        await dangling()

    assert await neo4j_store.count_nodes() == 0


async def test_a_transaction_reads_its_written_nodes_as_written_until_it_deletes_them(
    neo4j_store: Neo4jStore,
) -> None:
    updated = CALL.with_props(status="completed")

    async with neo4j_store.transaction("s1") as tx:
        await tx.put_node(CALL)
        first = await tx.get_nodes([CALL.id, CODE.id, CALL.id])
        await tx.put_node(updated)
        second = await tx.get_nodes([CALL.id])
        await tx.delete_node(CALL.id)
        third = await tx.get_nodes([CALL.id])

    assert first == [CALL, None, CALL]
    assert second == [updated]
    assert third == [None]
    assert await neo4j_store.get_nodes([CALL.id]) == [None]


async def test_delete_node_removes_its_edges_and_says_whether_it_existed(
    neo4j_store: Neo4jStore,
) -> None:
    async with neo4j_store.transaction("s1") as tx:
        await tx.put_node(CALL)
        await tx.put_node(CODE)
        await tx.put_edge(EdgeRecord(EdgeType.PRODUCES, CALL.id, CODE.id))

    async with neo4j_store.transaction("s1") as tx:
        deleted = [await tx.delete_node(CODE.id), await tx.delete_node(CODE.id)]
        removed_edge = await tx.delete_edge(EdgeType.PRODUCES, CALL.id, CODE.id)

    assert deleted == [True, False]
    assert removed_edge is False
    assert await neo4j_store.expand([CALL.id], EdgeType.PRODUCES, Direction.OUT) == []


async def test_concurrent_writers_of_one_session_never_share_a_seq(
    neo4j_store: Neo4jStore, connection: dict[str, str]
) -> None:
    other = await open_store(connection)

    async def take(store: Neo4jStore) -> int:
        async with store.transaction("s1") as tx:
            value = await tx.next_seq("s1")
            await asyncio.sleep(0.01)  # hold the session while others queue
            return value

    try:
        values = await asyncio.gather(*(take((neo4j_store, other)[i % 2]) for i in range(20)))
    finally:
        await other.aclose()

    assert sorted(values) == list(range(1, 21))


async def test_a_writer_queued_behind_its_session_gives_up_after_the_round_trip_bound(
    neo4j_store: Neo4jStore, connection: dict[str, str]
) -> None:
    del neo4j_store  # an empty graph
    store = await open_store(connection, query_timeout=0.3, connection_timeout=0.3)
    holding, release = asyncio.Event(), asyncio.Event()

    async def hold_session() -> None:
        async with store.transaction("s1") as tx:
            await tx.next_seq("s1")
            holding.set()
            await release.wait()

    holder = asyncio.create_task(hold_session())
    try:
        await holding.wait()
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(StoreUnavailableError, match="made no progress for"):
            async with store.transaction("s1"):
                pass
        waited = loop.time() - started
        async with store.transaction("s2") as other:  # another session is not held up
            other_seq = await other.next_seq("s2")
        release.set()
        await holder
        async with store.transaction("s1") as tx:  # the session is free again
            after = await tx.next_seq("s1")
    finally:
        release.set()
        await store.aclose()

    assert 0.5 <= waited < 3.0
    assert (other_seq, after) == (1, 2)


async def test_a_deadlock_between_two_writers_refuses_one_of_them_as_transient(
    neo4j_store: Neo4jStore, connection: dict[str, str]
) -> None:
    first, second = make_node(Label.CODE, "a"), make_node(Label.CODE, "b")
    async with neo4j_store.transaction() as tx:
        await tx.put_node(first)
        await tx.put_node(second)
    other = await open_store(connection)
    both_locked = asyncio.Barrier(2)

    async def cross(store: Neo4jStore, one: NodeRecord, two: NodeRecord) -> None:
        async with store.transaction() as tx:
            await tx.put_node(one.with_props(touched=True))
            await both_locked.wait()
            await tx.put_node(two.with_props(touched=True))

    try:
        outcomes = await asyncio.gather(
            cross(neo4j_store, first, second), cross(other, second, first), return_exceptions=True
        )
    finally:
        await other.aclose()

    refused = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    assert len(refused) == 1
    assert isinstance(refused[0], StoreUnavailableError)
    assert refused[0].transient


async def test_concurrent_identical_writes_converge_on_one_node(
    neo4j_store: Neo4jStore, connection: dict[str, str]
) -> None:
    other = await open_store(connection)

    async def write(store: Neo4jStore) -> None:
        async with store.transaction() as tx:
            await tx.put_node(CODE)

    try:
        await asyncio.gather(*(write((neo4j_store, other)[i % 2]) for i in range(10)))
    finally:
        await other.aclose()

    assert await neo4j_store.count_nodes() == 1


async def test_a_domain_key_taken_by_another_id_is_a_refused_write(
    neo4j_store: Neo4jStore,
) -> None:
    twin = NodeRecord("Code:other-id", Label.CODE, CODE.key, "s1", T0)
    async with neo4j_store.transaction("s1") as tx:
        await tx.put_node(CODE)

    with pytest.raises(StoreWriteError, match="constraint"):
        async with neo4j_store.transaction("s1") as tx:
            await tx.put_node(twin)

    assert await neo4j_store.get_nodes([CODE.id, twin.id]) == [CODE, None]


async def test_parked_edges_are_kept_once_and_taken_once(neo4j_store: Neo4jStore) -> None:
    waiting = "SourceFile:source_file:session:s1:a.csv"
    first = EdgeRecord(EdgeType.INPUT, waiting, CODE.id, {"role": "input", "n": [1, 2]})
    second = EdgeRecord(EdgeType.FEEDS, waiting, "ResearchGoal:g")

    async with neo4j_store.transaction("s1") as tx:
        await tx.park_edge(first, waiting)
        await tx.park_edge(EdgeRecord(EdgeType.INPUT, waiting, CODE.id, {"n": 0}), waiting)
        await tx.park_edge(second, waiting)
    async with neo4j_store.transaction("s1") as tx:
        taken = await tx.take_parked(waiting)
        again = await tx.take_parked(waiting)

    assert taken == [first, second]
    assert again == []


async def test_wipe_deletes_nodes_counters_and_parked_edges(neo4j_store: Neo4jStore) -> None:
    async with neo4j_store.transaction("s1") as tx:
        await tx.put_node(CODE)
        await tx.next_seq("s1")
        await tx.park_edge(EdgeRecord(EdgeType.INPUT, "SourceFile:f", CODE.id), "SourceFile:f")

    await neo4j_store.wipe()

    assert await neo4j_store.count_nodes() == 0
    async with neo4j_store.transaction("s1") as tx:
        assert await tx.next_seq("s1") == 1
        assert await tx.take_parked("SourceFile:f") == []


async def test_raise_seq_never_lowers_the_counter(neo4j_store: Neo4jStore) -> None:
    await neo4j_store.raise_seq("s1", 7)
    await neo4j_store.raise_seq("s1", 3)

    async with neo4j_store.transaction("s1") as tx:
        value = await tx.next_seq("s1")

    assert value == 8
