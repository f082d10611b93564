"""Replicas writing the research memory for the first time at the same moment (SPEC §6): one
counter numbers every record, whichever replica made it."""

from __future__ import annotations

import asyncio

from gateway.stores.neo4j.memory import Neo4jMemoryStore
from resolvers.memory import prepare_record
from tests.memory.factories import finding
from tests.stores.neo4j.conftest import open_store

ROUNDS = 8
REPLICAS = 3


async def test_replicas_appending_to_an_empty_memory_at_once_share_one_counter(
    connection: dict[str, str],
) -> None:
    graphs = [await open_store(connection) for _ in range(REPLICAS)]
    try:
        memories = [await Neo4jMemoryStore.open(graph) for graph in graphs]
        for round_ in range(ROUNDS):
            await graphs[0].wipe()  # no counter yet
            records = [prepare_record(finding(finding=f"r{round_}-{n}")) for n in range(REPLICAS)]
            await asyncio.gather(
                *(memory.append(record) for memory, record in zip(memories, records, strict=True))
            )
            counters = await graphs[0]._fetch("MATCH (c:MemoryCounter) RETURN c.seq AS seq")
            later = prepare_record(finding(finding=f"r{round_}-later"))

            assert await memories[0].append(later)
            assert [row["seq"] for row in counters] == [REPLICAS]
            stored = await memories[1].all_records()
            assert [record.id for record in stored][-1] == later.id
            assert {record.id for record in stored} == {r.id for r in [*records, later]}
    finally:
        await asyncio.gather(*(graph.aclose() for graph in graphs))


async def test_counters_made_twice_before_the_constraint_are_made_one_at_open(
    connection: dict[str, str],
) -> None:
    graph = await open_store(connection)
    try:
        await Neo4jMemoryStore.open(graph)
        await graph.wipe()
        await graph._write("DROP CONSTRAINT memory_counter_name IF EXISTS", 10)
        await graph._write(
            "UNWIND [3, 5] AS seq CREATE (:MemoryCounter {name: 'memory', seq: seq})", 10
        )

        memory = await Neo4jMemoryStore.open(graph)
        assert await memory.append(prepare_record(finding(finding="after")))
        counters = await graph._fetch("MATCH (c:MemoryCounter) RETURN c.seq AS seq")
        (stored,) = await graph._fetch("MATCH (r:MemoryRecord) RETURN r.seq AS seq")
        constraints = await graph._fetch("SHOW CONSTRAINTS YIELD name")
    finally:
        await graph.aclose()

    assert [row["seq"] for row in counters] == [6]
    assert stored["seq"] == 6
    assert "memory_counter_name" in {row["name"] for row in constraints}
