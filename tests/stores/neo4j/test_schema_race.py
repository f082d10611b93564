"""Replicas starting together on a Neo4j without the gateway's schema: each ensures the
constraints and indexes on connect (SPEC §6), at the same moment, and each must come up."""

from __future__ import annotations

import asyncio

import neo4j

from gateway.stores.neo4j.schema import SCHEMA
from tests.stores.neo4j.conftest import open_store

REPLICAS = 3


async def drop_schema(connection: dict[str, str]) -> None:
    async with neo4j.AsyncGraphDatabase.driver(
        connection["uri"], auth=(connection["user"], connection["password"])
    ) as driver:
        for show, drop in (
            ("SHOW CONSTRAINTS YIELD name", "DROP CONSTRAINT"),
            (
                "SHOW INDEXES YIELD name, owningConstraint WHERE owningConstraint IS NULL",
                "DROP INDEX",
            ),
        ):
            for record in (await driver.execute_query(show)).records:
                if record["name"].startswith("sm_"):
                    await driver.execute_query(f"{drop} `{record['name']}` IF EXISTS")


async def test_stores_opened_together_on_a_neo4j_without_schema_all_open(
    connection: dict[str, str],
) -> None:
    await drop_schema(connection)

    stores = await asyncio.gather(*(open_store(connection) for _ in range(REPLICAS)))
    try:
        created = await stores[0].ensure_schema()  # nothing left to create
        answers = await asyncio.gather(*(store.count_nodes() for store in stores))
    finally:
        await asyncio.gather(*(store.aclose() for store in stores))

    assert created == []
    assert len(answers) == REPLICAS
    assert {name for name, _ in SCHEMA} <= await schema_names(connection)


async def schema_names(connection: dict[str, str]) -> set[str]:
    async with neo4j.AsyncGraphDatabase.driver(
        connection["uri"], auth=(connection["user"], connection["password"])
    ) as driver:
        names = set()
        for show in ("SHOW CONSTRAINTS YIELD name", "SHOW INDEXES YIELD name"):
            names |= {record["name"] for record in (await driver.execute_query(show)).records}
        return names
