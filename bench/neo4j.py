"""Neo4j: the gateway over HTTP against hand-written Cypher through the driver, same server.

Needs a Neo4j 5 server; the test server prints its connection as environment variables:
``eval "$(tools/neo4j-test-server/run.sh start)"`` exports ``GATEWAY_TEST_NEO4J_URI``,
``_USER`` and ``_PASSWORD``. The benchmark deletes its own sessions (``bench-…``) before and
after the run and touches nothing else.

Both sides run interleaved, query by query and round by round, so load on a shared machine
hits them alike. The Cypher side answers the same question as the gateway from the same probe
node in ONE
statement, the way a developer would write it by hand: a fixed pattern for a chain, and the
shortest upstream path to the session's goal for a trace (the gateway's trace also lists the
other upstream nodes of each hop, so it returns a little more).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, LiteralString

import neo4j

from bench.client import BenchError, Latency, execute
from bench.generate import Session, generate_session, generate_sessions
from bench.ingest import Throughput, ingest
from bench.preload import preload
from bench.reads import COMMON_TERM, QUERIES, RARE_TERM, ReadQuery, ReadResult, _once
from bench.results import Neo4jResults
from bench.server import running_gateway
from gateway.stores.neo4j import Neo4jStore
from gateway.stores.neo4j.records import session_token

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path

    import httpx

PROBE_SESSIONS = 8
INGEST_BASE = 500_000_000
_ENV = "GATEWAY_TEST_NEO4J_"

_REPORT_UPSTREAM: Final = "[:next|contains|produces|input|extracts|supports|stated_in*..32]"

_SEARCH: Final = (
    "CALL db.index.fulltext.queryNodes('sm_fulltext', $id) YIELD node, score "
    "WHERE node._sm_live WITH node ORDER BY score DESC, node.created_at DESC "
    "WITH collect(node) AS hits RETURN size(hits) AS total, [n IN hits[..20] | n {.*}] AS nodes"
)
"""A search as the index answers it (``$id`` is the Lucene query): every prefix match of the
term (in the session: with its session token), by Lucene score, the first 20 and the total."""

CYPHER: Final[Mapping[str, tuple[LiteralString, Callable[[Session], str]]]] = {
    "getChain view_related_task": (
        "MATCH (a:Artifact {id: $id})<-[r1:produces]-(c:Code)<-[r2:produces]-(t:ToolCall) "
        "MATCH p = (g:ResearchGoal)-[:next*]->(t) "
        "RETURN [n IN [a, c] + nodes(p) | n {.*}] AS nodes, "
        "[r IN [r1, r2] + relationships(p) | "
        "{type: type(r), source: startNode(r).id, target: endNode(r).id}] AS edges",
        lambda s: s.probes.artifact,
    ),
    "getChain view_producing_code": (
        "MATCH (a:Artifact {id: $id})<-[r:produces]-(c:Code) "
        "WITH a, r, c ORDER BY c.seq DESC, c.created_at DESC LIMIT 1 "
        "RETURN [a {.*}, c {.*}] AS nodes, "
        "[{type: type(r), source: c.id, target: a.id}] AS edges",
        lambda s: s.probes.child_artifact,
    ),
    "getChain view_cited_paper": (
        "MATCH (a:Artifact {id: $id})<-[r1:stated_in]-(c:Claim)<-[r2:supports]-(e:Evidence)"
        "<-[r3:extracts]-(p:Paper) "
        "WITH a, collect(DISTINCT c) + collect(DISTINCT e) + collect(DISTINCT p) AS found, "
        "collect(DISTINCT r1) + collect(DISTINCT r2) + collect(DISTINCT r3) AS crossed "
        "RETURN [n IN [a] + found | n {.*}] AS nodes, "
        "[r IN crossed | {type: type(r), source: startNode(r).id, target: endNode(r).id}] AS edges",
        lambda s: s.probes.report,
    ),
    "traceProvenance subagent artifact": (
        "MATCH (a:Artifact {id: $id}), (g:ResearchGoal {session_id: a.session_id}) "
        f"MATCH p = shortestPath((g)-{_REPORT_UPSTREAM}->(a)) "
        "RETURN [n IN nodes(p) | n {.*}] AS nodes, [r IN relationships(p) | type(r)] AS edges",
        lambda s: s.probes.child_artifact,
    ),
    "traceProvenance claim": (
        "MATCH (c:Claim {id: $id}), (g:ResearchGoal {session_id: c.session_id}) "
        f"MATCH p = shortestPath((g)-{_REPORT_UPSTREAM}->(c)) "
        "RETURN [n IN nodes(p) | n {.*}] AS nodes, [r IN relationships(p) | type(r)] AS edges",
        lambda s: s.probes.claim,
    ),
    "searchNodes in session": (
        _SEARCH,
        lambda s: f"_sm_sess:{session_token(s.session_id)} AND _sm_text:{s.probes.search_term}*",
    ),
    f"searchNodes all sessions '{RARE_TERM}'": (_SEARCH, lambda s: f"_sm_text:{RARE_TERM}*"),
    f"searchNodes all sessions '{COMMON_TERM}'": (_SEARCH, lambda s: f"_sm_text:{COMMON_TERM}*"),
}
CLEANUP: Final[tuple[LiteralString, ...]] = (
    "MATCH (n) WHERE n.session_id STARTS WITH 'bench-' "
    "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS",
    "MATCH (p:ParkedEdge) WHERE p.source CONTAINS 'bench-' OR p.target CONTAINS 'bench-' "
    "DETACH DELETE p",
)


@dataclass(frozen=True, slots=True)
class Connection:
    uri: str
    user: str
    password: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Connection:
        uri = environ.get(f"{_ENV}URI")
        if not uri:
            raise BenchError(
                f"{_ENV}URI is not set: start a Neo4j with "
                '`eval "$(tools/neo4j-test-server/run.sh start)"` first'
            )
        return cls(uri, environ.get(f"{_ENV}USER", "neo4j"), environ.get(f"{_ENV}PASSWORD", ""))

    def settings(self) -> dict[str, str]:
        return {
            "BACKEND": "neo4j",
            "NEO4J_URI": self.uri,
            "NEO4J_USER": self.user,
            "NEO4J_PASSWORD": self.password,
        }


async def run_neo4j(
    seed: int, nodes: int, rounds: int, tmp: Path, client: httpx.AsyncClient
) -> Neo4jResults:
    """Preload ``nodes`` nodes through the use cases, then compare reads and time writes."""
    connection = Connection.from_env(os.environ)
    driver = neo4j.AsyncGraphDatabase.driver(
        connection.uri, auth=(connection.user, connection.password)
    )
    try:
        await clean_bench_sessions(driver)
        loaded, seconds = await _preload(connection, seed, nodes)
        probes = [generate_session(seed, index) for index in range(PROBE_SESSIONS)]
        gateway, cypher, one, many = await _through_gateway(
            connection, driver, seed, rounds, tmp, client, probes
        )
        return Neo4jResults(loaded, seconds, gateway, cypher, one, many)
    finally:
        await clean_bench_sessions(driver)
        await driver.close()


async def clean_bench_sessions(driver: neo4j.AsyncDriver) -> None:
    """Delete every ``bench-…`` session (``CLEANUP``); nothing else is touched."""
    async with driver.session() as session:
        for statement in CLEANUP:
            await (await session.run(statement)).consume()


async def _preload(connection: Connection, seed: int, nodes: int) -> tuple[int, float]:
    store = await Neo4jStore.open(connection.uri, connection.user, connection.password)
    try:
        before = await store.count_nodes()
        loaded = await preload(store, generate_sessions(seed), before + nodes)
        return loaded.nodes - before, loaded.seconds
    finally:
        await store.aclose()


async def _through_gateway(
    connection: Connection,
    driver: neo4j.AsyncDriver,
    seed: int,
    rounds: int,
    tmp: Path,
    client: httpx.AsyncClient,
    probes: Sequence[Session],
) -> tuple[dict[str, ReadResult], dict[str, ReadResult], Throughput, Throughput]:
    queries = [q for q in QUERIES if q.name in CYPHER or q.name == "{ __typename }"]
    async with running_gateway(tmp / "neo4j-gateway", connection.settings()) as gateway:
        health = await execute(client, gateway.graphql, "{ health { reachable backend } }")
        if not health["health"]["reachable"]:
            raise BenchError(f"the gateway does not reach Neo4j: {health}")
        reads = await measure_side_by_side(client, gateway.graphql, driver, probes, rounds, queries)
        one = [generate_session(seed, INGEST_BASE + i) for i in range(4)]
        many = [generate_session(seed, INGEST_BASE + 4 + i) for i in range(16)]
        one_client = await ingest(client, gateway.graphql, one, 1)
        many_clients = await ingest(client, gateway.graphql, many, 16)
    return reads[0], reads[1], one_client, many_clients


async def measure_side_by_side(
    client: httpx.AsyncClient,
    url: str,
    driver: neo4j.AsyncDriver,
    probes: Sequence[Session],
    rounds: int,
    queries: Sequence[ReadQuery],
) -> tuple[dict[str, ReadResult], dict[str, ReadResult]]:
    """Each query through the gateway and as its hand-written statement, one right after the
    other (which goes first alternates by round), round-robin over the probe sessions after
    a warm-up of both on every probe: load on the shared machine hits both sides alike."""
    for session in probes:
        for query in queries:
            await _once(client, url, query, session)
            if query.name in CYPHER:
                await _run(driver, query.name, session)
    names = [query.name for query in queries]
    sides: tuple[dict[str, list[tuple[float, int]]], ...] = (
        {name: [] for name in names},
        {name: [] for name in names if name in CYPHER},
    )
    for index in range(rounds):
        session = probes[index % len(probes)]
        for query in queries:
            order = (0, 1) if index % 2 == 0 else (1, 0)
            for side in order:
                if side == 0:
                    sides[0][query.name].append(await _once(client, url, query, session))
                elif query.name in CYPHER:
                    sides[1][query.name].append(await _run(driver, query.name, session))
    gateway, cypher = (
        {
            name: ReadResult(
                Latency.of([seconds for seconds, _ in samples]),
                sum(size for _, size in samples) / len(samples),
            )
            for name, samples in side.items()
        }
        for side in sides
    )
    return gateway, cypher


async def _run(driver: neo4j.AsyncDriver, name: str, session: Session) -> tuple[float, int]:
    statement, probe = CYPHER[name]
    started = time.perf_counter()
    result = await driver.execute_query(
        statement, {"id": probe(session)}, routing_=neo4j.RoutingControl.READ
    )
    rows = [record.data() for record in result.records]
    elapsed = time.perf_counter() - started
    size = sum(len(row["nodes"]) for row in rows)
    if size == 0:
        raise BenchError(f"{name} (Cypher) on {session.session_id} answered nothing")
    return elapsed, size
