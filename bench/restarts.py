"""Reads after a Neo4j restart that no request saw: planned again by the store, or cold.

    eval "$(tools/neo4j-test-server/run.sh start)"
    python -m bench.restarts [--rounds 2] [--wait 45]

Each round, the two modes one after the other: ``watched`` (the store notices the restart and
plans again, ``gateway.stores.neo4j.restarts``) and ``unwatched`` (``watch_restarts=False``:
the store as it was before the watch). A store writes a generated session (``bench-…``) and
asks ``chainExists`` of every kind from its first node of each of three labels, so the server
has planned them; the
test server is stopped and started again (``run.sh stop --keep-data``, ``start --same-port``);
``--wait`` seconds later (the re-plan's time), the same questions are asked again and timed
(``after``), and once more (``warm``). A ``QueryLimitExceeded`` answer is counted, not fatal.
The test server must be the one ``GATEWAY_TEST_NEO4J_URI`` names (``bench.outage``); the
benchmark deletes its ``bench-…`` sessions before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

import neo4j

from bench.generate import generate_session
from bench.neo4j import Connection, clean_bench_sessions
from bench.outage import check_same_server, server
from bench.writes import observes_only
from gateway.stores.neo4j import Neo4jStore
from resolvers.chains import ChainKind, chain_exists
from resolvers.errors import QueryLimitExceededError
from resolvers.observe import APPLY
from resolvers.records import Label, split_node_id

LABELS = (Label.ARTIFACT, Label.TOOL_CALL, Label.CODE)


async def ask(store: Neo4jStore, sources: list[str]) -> tuple[float, int]:
    """Seconds to ask ``chainExists`` of every kind from each of ``sources``; refusals."""
    refused = 0
    start = time.perf_counter()
    for node_id in sources:
        try:
            await chain_exists(store, node_id, list(ChainKind))
        except QueryLimitExceededError:
            refused += 1
    return time.perf_counter() - start, refused


async def one_round(connection: Connection, index: int, watched: bool, wait: float) -> str:
    store = await Neo4jStore.open(
        connection.uri, connection.user, connection.password, watch_restarts=watched
    )
    try:
        session = observes_only(generate_session(7, 900 + index))
        for mutation in session.mutations:
            await APPLY[type(mutation.event)](store, mutation.event)
        ids = await store.session_node_ids(session.session_id)
        sources = []
        for label in LABELS:
            found = sorted(i for i in ids if (split_node_id(i) or (None,))[0] is label)
            sources += found[:1]
        await ask(store, sources)  # planned before the restart
        await server("stop", "--keep-data")
        await server("start", "--same-port")
        await asyncio.sleep(wait)
        after, refused = await ask(store, sources)
        warm, _ = await ask(store, sources)
    finally:
        await store.aclose()
    mode = "watched" if watched else "unwatched"
    return f"| {index + 1} | {mode} | {after:.2f} s ({refused} refused) | {warm:.2f} s |"


async def main(rounds: int, wait: float) -> None:
    connection = Connection.from_env(os.environ)
    check_same_server(connection.uri, os.environ)
    driver = neo4j.AsyncGraphDatabase.driver(
        connection.uri, auth=(connection.user, connection.password)
    )
    try:
        await clean_bench_sessions(driver)
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        print("| round | mode | chainExists of every kind, after the restart | warm |")
        print("|---|---|---|---|")
        for index in range(rounds):
            for watched in (index % 2 == 0, index % 2 == 1):
                print(await one_round(connection, index, watched, wait), flush=True)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        await clean_bench_sessions(driver)
        await driver.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--wait", type=float, default=45.0, help="seconds after the restart")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.rounds, arguments.wait))
    sys.exit(0)
