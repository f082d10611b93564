"""Observe throughput: file store vs. gateway on Neo4j vs. the same writes as one raw statement.

    eval "$(tools/neo4j-test-server/run.sh start)"
    python -m bench.writes --backend neo4j [--steps 100] [--rounds 2] [--seed 7]

Three columns, in interleaved windows (every round runs each column once at 1 and at 16
clients, on fresh sessions, so a slow minute of a shared machine hits all columns alike):

* **file store**: the gateway (``science-memory serve``, a child process) on its file store;
* **gateway on Neo4j**: the same gateway on the Neo4j server, over HTTP GraphQL;
* **raw UNWIND**: the same observe events written to that Neo4j by the driver directly, each
  event as ONE managed transaction (``execute_write``) of ONE statement, the same statement
  text for every event (``RawPlan``: an ``UNWIND`` block per label and edge shape, no reads):
  the nodes and edges the gateway itself writes for that event, as it stores them (captured
  beforehand by replaying the sessions on a scratch file store, outside the timing). It is the
  floor a one-statement write plan can reach, without the gateway's rules, session lock, HTTP
  or GraphQL.

**One session over two replicas**: two gateways on the same Neo4j (the second started for
it), one long session whose events are sent by 16 callers, event ``i`` through replica
``i % 2`` — every write of one session, from two processes, ordered by the session's counter in
Neo4j. SPEC lets a session's events arrive in any order; the store is checked afterwards (every
event's node present exactly once).

Events are the generator's observes (declares left out: they only read and add to them). It
also counts the Cypher statements the gateway sends per event kind (the driver's ``run`` calls,
the use cases run in this process on a ``Neo4jStore``) and per ``searchNodes``. The benchmark
deletes its own ``bench-…`` sessions before and after; nothing else is touched.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, LiteralString

import neo4j

from bench.client import http_client
from bench.generate import Session, generate_session
from bench.ingest import Throughput, ingest, send
from bench.neo4j import Connection, clean_bench_sessions
from bench.server import running_gateway
from gateway.live.bus import EventBus
from gateway.live.publishing import PublishingStore
from gateway.stores.file.store import FileStore
from gateway.stores.neo4j import Neo4jStore
from gateway.stores.neo4j.records import edge_properties, node_properties, take_created_at
from gateway.stores.neo4j.restarts import STARTED
from resolvers.observe import APPLY
from resolvers.records import split_node_id
from resolvers.search import search_nodes

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import httpx

    from gateway.live.bus import GraphChange
    from resolvers.events import Event

CLIENTS = (1, 16)
REPLICA_CALLERS = 16
COLUMNS = ("file store", "gateway on Neo4j", "raw UNWIND")
BASE = 700_000_000
SEARCH_TERM = "tp53"


NodeShape = str
EdgeShape = tuple[str, str, str, bool]
"""``(source label, edge type, target label, removed)``."""


@dataclass(frozen=True, slots=True)
class RawWrite:
    """What one event wrote, by node label and by edge shape."""

    nodes: dict[NodeShape, list[dict[str, Any]]]
    edges: dict[EdgeShape, list[dict[str, Any]]]


def observes_only(session: Session) -> Session:
    mutations = tuple(m for m in session.mutations if type(m.event) in APPLY)
    return replace(session, mutations=mutations)


def sessions_for(seed: int, first: int, count: int, steps: int) -> list[Session]:
    return [observes_only(generate_session(seed, first + i, steps)) for i in range(count)]


# --- the raw column: each event's own writes as one statement -------------------------------


async def capture(sessions: Sequence[Session], directory: Path) -> list[list[RawWrite]]:
    """Per session, per event: what the gateway wrote for it (replayed on a file store)."""
    store = await FileStore.open(directory)
    bus = EventBus(capacity=100_000)
    published = PublishingStore(store, bus)
    writes: list[list[RawWrite]] = []
    try:
        for session in sessions:
            own: list[RawWrite] = []
            with bus.subscribe(session.session_id) as subscription:
                for mutation in session.mutations:
                    await APPLY[type(mutation.event)](published, mutation.event)
                    changes = [await anext(subscription) for _ in range(subscription.pending)]
                    own.append(raw_write(changes))
            writes.append(own)
    finally:
        await published.aclose()
    return writes


def raw_write(changes: Sequence[GraphChange]) -> RawWrite:
    nodes: dict[NodeShape, list[dict[str, Any]]] = defaultdict(list)
    edges: dict[EdgeShape, list[dict[str, Any]]] = defaultdict(list)
    for change in changes:
        if change.node is not None:
            props = node_properties(change.node)
            at = take_created_at(props)  # sent as the gateway sends it
            nodes[change.node.label.value].append({"id": change.node.id, "props": props, "at": at})
        elif change.edge is not None:
            edge = change.edge
            shape = (_label(edge.source), edge.type.value, _label(edge.target), change.removed)
            edges[shape].append(
                {"s": edge.source, "t": edge.target, "props": edge_properties(edge)}
            )
    return RawWrite(dict(nodes), dict(edges))


def _label(node_id: str) -> str:
    parsed = split_node_id(node_id)
    assert parsed is not None
    return parsed[0].value


@dataclass(frozen=True, slots=True)
class RawPlan:
    """One statement for every event of the run (planned once, like a hand-written one): a
    ``FOREACH`` over the rows of each label and each edge shape the run writes, nodes first,
    removed edges last; an event passes empty lists for the shapes it does not use."""

    node_shapes: tuple[NodeShape, ...]
    edge_shapes: tuple[EdgeShape, ...]

    @classmethod
    def covering(cls, writes: Sequence[Sequence[RawWrite]]) -> RawPlan:
        events = [write for own in writes for write in own]
        nodes = sorted({shape for write in events for shape in write.nodes})
        edges = sorted({shape for write in events for shape in write.edges})
        return cls(tuple(nodes), tuple(edges))

    @property
    def statement(self) -> LiteralString:
        # FOREACH, not a CALL subquery per block: Neo4j plans a statement of many subqueries
        # for seconds, again for each new combination of parameter types.
        parts = [
            f"FOREACH (row IN {_rows(f'n{i}')} | MERGE (x:{label} {{id: row.id}}) "
            "ON CREATE SET x._sm_order = timestamp() SET x += row.props, "
            "x.created_at = coalesce(datetime(row.at), x.created_at))"
            for i, label in enumerate(self.node_shapes)
        ]
        deletes: list[str] = []
        for i, (source, edge_type, target, removed) in enumerate(self.edge_shapes):
            if removed:
                deletes.append(
                    f"CALL () {{ UNWIND {_rows(f'e{i}')} AS row MATCH (:{source} {{id: row.s}})"
                    f"-[r:{edge_type}]->(:{target} {{id: row.t}}) DELETE r }}"
                )
                continue
            parts.append(
                f"FOREACH (row IN {_rows(f'e{i}')} | MERGE (a:{source} {{id: row.s}}) "
                f"MERGE (b:{target} {{id: row.t}}) MERGE (a)-[r:{edge_type}]->(b) "
                "SET r += row.props)"
            )
        # Assembled from label and type names only, never from data.
        tail = "WITH 1 AS one " + " WITH 1 AS one ".join(deletes) if deletes else ""
        return "WITH 1 AS one " + " ".join(parts) + f" {tail} RETURN 1 AS done"

    def params(self, write: RawWrite) -> dict[str, Any]:
        # One list of rows tagged with their block: Neo4j caches a plan per statement and the
        # (bucketed) size of each list parameter, so a list per block would be re-planned for
        # nearly every event.
        rows = [
            {"k": f"n{i}", **row}
            for i, shape in enumerate(self.node_shapes)
            for row in write.nodes.get(shape, [])
        ]
        rows += [
            {"k": f"e{i}", **row}
            for i, shape in enumerate(self.edge_shapes)
            for row in write.edges.get(shape, [])
        ]
        return {"rows": rows}


def _rows(name: str) -> str:
    return f"[row IN $rows WHERE row.k = '{name}']"


async def raw_ingest(
    driver: neo4j.AsyncDriver, writes: Sequence[Sequence[RawWrite]], clients: int
) -> Throughput:
    plan = RawPlan.covering(writes)
    statement = plan.statement
    shares = [writes[index::clients] for index in range(clients)]

    async def caller(own: Sequence[Sequence[RawWrite]]) -> int:
        sent = 0
        async with driver.session() as session:
            for events in own:
                for write in events:
                    await session.execute_write(_run, statement, plan.params(write))
                    sent += 1
        return sent

    started = time.perf_counter()
    sent = await asyncio.gather(*(caller(own) for own in shares))
    return Throughput(clients, len(writes), sum(sent), time.perf_counter() - started)


async def _run(
    tx: neo4j.AsyncManagedTransaction, statement: LiteralString, params: dict[str, Any]
) -> None:
    await (await tx.run(statement, params)).consume()


# --- one session, two replicas --------------------------------------------------------------


async def one_session_ingest(
    client: httpx.AsyncClient, urls: Sequence[str], session: Session, callers: int
) -> Throughput:
    """Every event of ``session`` once, event ``i`` through ``urls[i % len(urls)]``, by
    ``callers`` concurrent callers (caller ``j`` sends events ``j, j + callers, …`` in order)."""
    mutations = session.mutations

    async def caller(first: int) -> int:
        for index in range(first, len(mutations), callers):
            await send(client, urls[index % len(urls)], mutations[index])
        return len(range(first, len(mutations), callers))

    started = time.perf_counter()
    sent = await asyncio.gather(*(caller(first) for first in range(callers)))
    return Throughput(callers, 1, sum(sent), time.perf_counter() - started)


async def stored_ids(driver: neo4j.AsyncDriver, session_id: str) -> list[str]:
    """The ids of the session's stored graph nodes, one entry per stored node (its change-feed
    entries carry the session too, but no id)."""
    async with driver.session() as session:
        result = await session.run(
            "MATCH (n {session_id: $session}) WHERE n.id IS NOT NULL RETURN n.id AS id",
            session=session_id,
        )
        return [record["id"] async for record in result]


# --- statements per event ------------------------------------------------------------------


@contextlib.contextmanager
def counting_statements(texts: list[str] | None = None) -> Iterator[list[int]]:
    """Count the driver's ``run`` calls (managed and explicit transactions, auto-commit), and
    append each statement's text to ``texts`` when given; but the store's restart check, a
    poll of its own that no request sends (``gateway.stores.neo4j.restarts``)."""
    count = [0]
    classes: tuple[type[Any], ...] = (
        neo4j.AsyncManagedTransaction,
        neo4j.AsyncTransaction,
        neo4j.AsyncSession,
    )
    originals = [cls.run for cls in classes]

    def counting(original: Any) -> Any:
        async def run(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            text = query.text if isinstance(query, neo4j.Query) else str(query)
            if text != STARTED:
                count[0] += 1
                if texts is not None:
                    texts.append(text)
            return await original(self, query, *args, **kwargs)

        return run

    for cls, original in zip(classes, originals, strict=True):
        cls.run = counting(original)
    try:
        yield count
    finally:
        for cls, original in zip(classes, originals, strict=True):
            cls.run = original


async def count_statements(
    connection: Connection, sessions: Sequence[Session]
) -> dict[str, tuple[int, float, int]]:
    """``(min, mean, max)`` statements per event kind and per ``searchNodes``."""
    store = await Neo4jStore.open(connection.uri, connection.user, connection.password)
    published = PublishingStore(store, EventBus())
    counts: dict[str, list[int]] = defaultdict(list)
    try:
        for session in sessions:
            for mutation in session.mutations:
                event: Event = mutation.event
                with counting_statements() as count:
                    await APPLY[type(event)](published, event)
                counts[_kind(event)].append(count[0])
            with counting_statements() as count:
                await search_nodes(published, SEARCH_TERM, session_id=session.session_id)
            counts["searchNodes (in session)"].append(count[0])
        with counting_statements() as count:
            await search_nodes(published, SEARCH_TERM)
        counts["searchNodes (all sessions)"].append(count[0])
    finally:
        await published.aclose()
    return {kind: (min(n), sum(n) / len(n), max(n)) for kind, n in sorted(counts.items())}


def _kind(event: Event) -> str:
    papers = len(getattr(event, "products", ()) or ())
    return f"{event.kind} ({papers} papers)" if papers else event.kind


# --- the run -------------------------------------------------------------------------------


async def run(seed: int, steps: int, rounds: int, tmp: Path) -> str:
    connection = Connection.from_env(os.environ)
    driver = neo4j.AsyncGraphDatabase.driver(
        connection.uri, auth=(connection.user, connection.password)
    )
    totals: dict[tuple[str, int], list[Throughput]] = defaultdict(list)
    try:
        await clean_bench_sessions(driver)
        captures = 0

        async def write_column(column: str, sessions: list[Session], clients: int) -> Throughput:
            nonlocal captures
            if column == "raw UNWIND":
                captures += 1
                writes = await capture(sessions, tmp / f"capture-{captures}")
                return await raw_ingest(driver, writes, clients)
            url = (on_file if column == "file store" else on_neo4j).graphql
            return await ingest(client, url, sessions, clients)

        async with (
            running_gateway(tmp / "file-gateway") as on_file,
            running_gateway(tmp / "neo4j-gateway", connection.settings()) as on_neo4j,
            http_client() as client,
        ):
            first = BASE
            # Warm-up, not counted: server caches, Neo4j's plan caches, connection pools.
            for column in COLUMNS:
                await write_column(column, sessions_for(seed, first, 4, steps), 4)
                first += 4
            for round_number in range(rounds):
                for clients in CLIENTS:
                    count = max(4, clients)
                    for column in COLUMNS:
                        sessions = sessions_for(seed, first, count, steps)
                        first += count
                        result = await write_column(column, sessions, clients)
                        totals[(column, clients)].append(result)
                        print(
                            f"round {round_number + 1}, {clients} clients, {column}: "
                            f"{result.per_second:.0f} events/s",
                            file=sys.stderr,
                        )
            async with running_gateway(tmp / "neo4j-replica", connection.settings()) as replica:
                long = observes_only(generate_session(seed, first, steps * 4))
                urls = (on_neo4j.graphql, replica.graphql)
                one_session = await one_session_ingest(client, urls, long, REPLICA_CALLERS)
                stored = await stored_ids(driver, long.session_id)
                (expected,) = await capture([long], tmp / "capture-replicas")
                wanted = {
                    node["id"]
                    for write in expected
                    for rows in write.nodes.values()
                    for node in rows
                    if node["props"]["session_id"] == long.session_id
                }
                if len(stored) != len(set(stored)) or not wanted <= set(stored):
                    raise SystemExit(f"{long.session_id}: nodes missing or stored twice")
                first += 1
        statements = await count_statements(connection, sessions_for(seed, first, 2, steps))
    finally:
        await clean_bench_sessions(driver)
        await driver.close()
    return report(totals, one_session, statements, steps, rounds)


def report(
    totals: dict[tuple[str, int], list[Throughput]],
    one_session: Throughput,
    statements: dict[str, tuple[int, float, int]],
    steps: int,
    rounds: int,
) -> str:
    def rate(column: str, clients: int) -> float:
        done = totals[(column, clients)]
        return sum(t.mutations for t in done) / sum(t.seconds for t in done)

    header = "| | " + " | ".join(COLUMNS) + " | gateway ÷ raw |"
    lines = [header, "|---|" + "---|" * (len(COLUMNS) + 1)]
    for clients in CLIENTS:
        cells = [f"{rate(column, clients):.0f}" for column in COLUMNS]
        ratio = rate("gateway on Neo4j", clients) / rate("raw UNWIND", clients)
        label = f"observe events/s, {clients} client{'s' if clients > 1 else ''}"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {ratio:.2f} |")
    lines += [
        "",
        f"one session over two replicas, {one_session.clients} callers: "
        f"{one_session.per_second:.0f} events/s "
        f"({one_session.mutations} events in {one_session.seconds:.1f} s, each stored once)",
        "",
        "| Cypher statements (gateway) | min | mean | max | raw |",
        "|---|---|---|---|---|",
    ]
    for kind, (low, mean, high) in statements.items():
        raw = "1" if not kind.startswith("searchNodes") else "—"
        lines.append(f"| {kind} | {low} | {mean:.1f} | {high} | {raw} |")
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    lines += ["", f"{rounds} round(s) of sessions of {steps} steps; load average after: {load}"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.writes", description=__doc__)
    parser.add_argument("--backend", choices=["neo4j"], required=True)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--steps", type=int, default=100, help="session steps (default 100)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-writes-") as tmp:
        table = asyncio.run(run(options.seed, options.steps, options.rounds, Path(tmp)))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
