"""Neo4j chains and traces in-process: the gateway's use case vs the hand-written Cypher.

    eval "$(tools/neo4j-test-server/run.sh start)"
    python -m bench.walks [--nodes 4000] [--rounds 30]

No HTTP, no GraphQL: ``--nodes`` nodes of the bench sessions are preloaded through the use
cases (``bench.preload``), then each request of ``bench.neo4j.CYPHER`` that is a chain or a
trace runs from the probes of the first ``PROBES`` sessions, the use case on a
``Neo4jStore`` and the statement through the driver (``execute_query``) alternating request
by request, so load on a shared machine hits both alike. It prints, per request, the
statements the use case sends (its views' included), both p50s and their ratio, and the load
average before and after. The benchmark deletes its own ``bench-…`` sessions before and
after; nothing else is touched.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from typing import TYPE_CHECKING

import neo4j

from bench.generate import Session, generate_session, generate_sessions
from bench.neo4j import CYPHER, Connection, clean_bench_sessions
from bench.preload import preload
from bench.writes import counting_statements
from gateway.stores.neo4j import Neo4jStore
from resolvers.chains import ChainKind, get_chain
from resolvers.provenance import trace_provenance

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence

PROBES = 3
WARM_ROUNDS = 1  # rounds not counted: plans, connections


CASES: Mapping[str, Callable[[Neo4jStore, Session], Awaitable[object]]] = {
    "getChain view_related_task": lambda store, s: get_chain(
        store, s.probes.artifact, ChainKind.VIEW_RELATED_TASK
    ),
    "getChain view_producing_code": lambda store, s: get_chain(
        store, s.probes.child_artifact, ChainKind.VIEW_PRODUCING_CODE
    ),
    "getChain view_cited_paper": lambda store, s: get_chain(
        store, s.probes.report, ChainKind.VIEW_CITED_PAPER
    ),
    "traceProvenance subagent artifact": lambda store, s: trace_provenance(
        store, s.probes.child_artifact
    ),
    "traceProvenance claim": lambda store, s: trace_provenance(store, s.probes.claim),
}


async def run(seed: int, nodes: int, rounds: int) -> str:
    connection = Connection.from_env(os.environ)
    driver = neo4j.AsyncGraphDatabase.driver(
        connection.uri, auth=(connection.user, connection.password)
    )
    store = await Neo4jStore.open(
        connection.uri, connection.user, connection.password, query_timeout=60.0
    )
    try:
        await clean_bench_sessions(driver)
        others = await store.count_nodes()  # what other sessions keep on the server
        loaded = await preload(store, generate_sessions(seed), others + nodes)
        probes = [generate_session(seed, index) for index in range(PROBES)]
        statements = {
            name: await _statements(store, case, probes[0]) for name, case in CASES.items()
        }
        before = os.getloadavg()
        times = await _alternate(store, driver, probes, rounds)
        after = os.getloadavg()
    finally:
        await clean_bench_sessions(driver)
        await store.aclose()
        await driver.close()
    lines = [
        f"{loaded.nodes - others:,} nodes preloaded ({others:,} others on the server); "
        f"{rounds} rounds x {PROBES} probe sessions; "
        f"load average {before[0]:.1f} / {before[1]:.1f} / {before[2]:.1f} before, "
        f"{after[0]:.1f} / {after[1]:.1f} / {after[2]:.1f} after",
        "",
        "| request | statements | use case p50 ms | Cypher p50 ms | ratio |",
        "|---|---|---|---|---|",
    ]
    for name, (gateway, cypher) in times.items():
        ours, theirs = statistics.median(gateway) * 1000, statistics.median(cypher) * 1000
        lines.append(
            f"| {name} | {statements[name]} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f} |"
        )
    return "\n".join(lines)


async def _statements(
    store: Neo4jStore, case: Callable[[Neo4jStore, Session], Awaitable[object]], probe: Session
) -> int:
    """The statements one request sends, its transactions' included (plans warmed first)."""
    await case(store, probe)
    with counting_statements() as count:
        await case(store, probe)
    return count[0]


async def _alternate(
    store: Neo4jStore, driver: neo4j.AsyncDriver, probes: Sequence[Session], rounds: int
) -> dict[str, tuple[list[float], list[float]]]:
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in CASES}
    for index in range(WARM_ROUNDS + rounds):
        for name, case in CASES.items():
            statement, probe_of = CYPHER[name]
            for probe in probes:
                started = time.perf_counter()
                await case(store, probe)
                middle = time.perf_counter()
                await driver.execute_query(
                    statement, id=probe_of(probe), routing_=neo4j.RoutingControl.READ
                )
                ended = time.perf_counter()
                if index >= WARM_ROUNDS:
                    times[name][0].append(middle - started)
                    times[name][1].append(ended - middle)
    return times


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.walks", description=__doc__)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--nodes", type=int, default=4000, help="nodes to preload (4000)")
    parser.add_argument("--rounds", type=int, default=30, help="rounds counted (30)")
    options = parser.parse_args(argv)
    print(asyncio.run(run(options.seed, options.nodes, options.rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
