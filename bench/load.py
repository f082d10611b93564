"""Bounded load: ``python -m bench.load [--seconds 60] [--clients 64] [--backend neo4j
[--outage START:DURATION]]`` (see README.md, "Load").

Starts the gateway (``science-memory serve``, uvicorn) on a free loopback port with a temporary
data directory — on the file store, or on the Neo4j of ``GATEWAY_TEST_NEO4J_URI``/``_USER``/
``_PASSWORD`` — runs ``--clients`` concurrent callers for ``--seconds`` — mixed reads
(``getChain``, ``traceProvenance``, ``searchNodes``, ``subgraph``) and writes (``observe*``) —
and stops by itself. With ``--outage`` the Neo4j test server is stopped START seconds into the
load and started again DURATION seconds after it has stopped (``bench.outage``): reads may
then answer ``MemoryGraphUnreachable`` and observes must answer it with ``queued: true``, but
only inside the outage window (``bench.tally``). An answer slower than the gateway's query time
budget (``BOUND``) is an error too. Afterwards it waits (at most ``drain_seconds``) until
``/health`` reports no pending writes, and checks that every acknowledged and every queued
write is in the graph: on the running gateway, and again after a restart on the same data
directory. Exits 1 on any error, a missing write or writes still pending.

Each run names its sessions ``load-<run>-<n>`` with a fresh run id, so runs against one Neo4j
never share data; nothing is deleted. The test suite runs short versions
(``tests/bench/test_load.py``, ``tests/stores/neo4j/test_load_outage.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.client import BenchError
from bench.neo4j import Connection
from bench.outage import (
    Outage,
    OutageError,
    Timeline,
    check_same_server,
    run_outage,
    wait_settled,
)
from bench.server import running_gateway
from bench.tally import WRITES, Answer, LoadResult, Tally, report
from gateway.settings import Settings

MAX_SECONDS = 3600.0
T0 = datetime(2026, 1, 1, tzinfo=UTC)
# The bound on every request: the gateway's time budget for a query (QUERY_TIMEOUT_SECONDS).
# Reads are cut off at it; writes are not, and the Neo4j adapter lets one statement take the
# budget plus NEO4J_TIMEOUT, but no request, read or write, may take longer than the budget.
# Both are set explicitly on the child, to their defaults.
BOUND = Settings().query_timeout_seconds
NEO4J_TIMEOUT = Settings().neo4j_timeout
OBSERVED = "__typename ... on Error { code message } ... on MemoryGraphUnreachable { queued }"

OBSERVE_EXECUTION = f"""mutation($i: ObserveExecutionInput!) {{
  observeExecution(input: $i) {{ {OBSERVED} }} }}"""
OBSERVE_TOOL_CALL = f"""mutation($i: ObserveToolCallInput!) {{
  observeToolCall(input: $i) {{ {OBSERVED} }} }}"""
OBSERVE_UPLOAD = f"""mutation($i: ObserveUploadFileInput!) {{
  observeUploadFile(input: $i) {{ {OBSERVED} }} }}"""
OBSERVE_GOAL = f"""mutation($i: ObserveSessionFirstMessageInput!) {{
  observeSessionFirstMessage(input: $i) {{ {OBSERVED} }} }}"""
GET_CHAIN = f"""query($id: ID!, $k: ChainKind!, $s: String) {{
  getChain(nodeId: $id, kind: $k, sessionId: $s) {{ {OBSERVED} ... on Chain {{ total }} }} }}"""
CHAIN_KINDS = ["VIEW_PREV_TASK", "VIEW_NEXT_TASK", "VIEW_GOAL", "VIEW_OUTPUT"]
TRACE = f"""query($id: ID!) {{ traceProvenance(nodeId: $id) {{
  {OBSERVED} ... on ProvenanceTrace {{ broken }} }} }}"""
SEARCH = f"""query($q: String!, $s: String) {{ searchNodes(query: $q, sessionId: $s, first: 20) {{
  {OBSERVED} ... on NodeList {{ total }} }} }}"""
SUBGRAPH = f"""query($s: String!) {{ subgraph(sessionId: $s, first: 200) {{
  {OBSERVED} ... on Subgraph {{ total }} }} }}"""
TOOL_CALLS = """query($s: String!, $after: String) {
  nodesByType(labels: [TOOL_CALL], sessionId: $s, first: 500, after: $after) {
    __typename ... on NodeList { endCursor nodes { key } } ... on Error { code message } } }"""

# Which answer each kind expects; anything else is an error, except MemoryGraphUnreachable
# (queued for a write, not for a read), which is judged against the outage window at the end.
EXPECTED = {
    "observeSessionFirstMessage": {"Observed"},
    "observeExecution": {"Observed"},
    "observeToolCall": {"Observed"},
    "observeUploadFile": {"Observed"},
    "getChain": {"Chain", "NodeNotFound"},
    "traceProvenance": {"ProvenanceTrace", "NodeNotFound"},
    "searchNodes": {"NodeList"},
    "subgraph": {"Subgraph", "NodeNotFound"},
}
UNREACHABLE = "MemoryGraphUnreachable"
MIX = [  # (kind, weight): about a third writes
    ("observeExecution", 20),
    ("observeToolCall", 10),
    ("observeUploadFile", 3),
    ("getChain", 17),
    ("traceProvenance", 17),
    ("searchNodes", 17),
    ("subgraph", 16),
]
TERMS = ["tp53", "volcano", "expression", "kinase", "tumour", "survival", "figure", "paper"]


@dataclass(frozen=True, slots=True)
class LoadPlan:
    seconds: float = 60.0
    clients: int = 64
    seed: int = 5
    neo4j: Connection | None = None  # None: the file store
    outage: Outage | None = None  # needs neo4j
    drain_seconds: float = 900.0  # longest wait for an empty outbox after the load

    @property
    def backend(self) -> str:
        return "file" if self.neo4j is None else "neo4j"

    def settings(self) -> dict[str, str]:
        """The gateway child's ``SCIENCE_AGENT_MEMORY_GRAPH_*`` settings."""
        budget = {"QUERY_TIMEOUT_SECONDS": f"{BOUND:g}"}
        if self.neo4j is None:
            return budget
        return {**budget, **self.neo4j.settings(), "NEO4J_TIMEOUT": f"{NEO4J_TIMEOUT:g}"}


@dataclass
class Caller:
    """One simulated client: its own session, and the steps it wrote so far."""

    session: str
    url: str
    http: httpx.AsyncClient
    tally: Tally
    rng: random.Random
    steps: list[str] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)
    written: int = 0

    def at(self) -> str:
        self.written += 1
        return (T0 + timedelta(seconds=self.written)).isoformat()

    async def call(self, kind: str, document: str, **variables: Any) -> str | None:
        """Send one request; the answer's ``__typename`` when ``kind`` may answer it."""
        sent = time.monotonic()
        try:
            response = await self.http.post(
                self.url, json={"query": document, "variables": variables}
            )
        except httpx.HTTPError as exc:
            self.tally.error(kind, f"{type(exc).__name__}: {exc}")
            return None
        answered = time.monotonic()
        body = response.json() if response.status_code == 200 else {}
        answer = next(iter((body.get("data") or {}).values()), None)
        typename, queued = (
            (answer.get("__typename"), answer.get("queued"))
            if isinstance(answer, dict)
            else (None, None)
        )
        # A write must be queued when Neo4j is unreachable, a read cannot be.
        unreachable = typename == UNREACHABLE and queued is (kind in WRITES)
        fine = response.status_code == 200 and not body.get("errors")
        fine = fine and (unreachable or typename in EXPECTED[kind])
        failure = None if fine else f"HTTP {response.status_code}: {response.text[:300]}"
        self.tally.answers.append(Answer(kind, sent, answered, unreachable, failure))
        return str(typename) if fine else None

    def book(self, step: str, typename: str | None) -> bool:
        """Count a write of ``step`` as acknowledged or queued; True when acknowledged."""
        if typename == UNREACHABLE:
            self.tally.queued[self.session].add(step)
        if typename != "Observed":
            return False
        self.tally.acknowledged[self.session].add(step)
        return True

    async def start(self) -> None:
        goal = {
            "sessionId": self.session,
            "goalId": f"goal:session:{self.session}",
            "coreObjective": "Study TP53 expression in tumour survival",
        }
        await self.call("observeSessionFirstMessage", OBSERVE_GOAL, i=goal)

    async def run(self, deadline: float) -> None:
        actions = {
            "observeExecution": self.observe_execution,
            "observeToolCall": self.observe_tool_call,
            "observeUploadFile": self.observe_upload,
            "getChain": self.get_chain,
            "traceProvenance": self.trace_provenance,
            "searchNodes": self.search_nodes,
            "subgraph": self.subgraph,
        }
        kinds, weights = zip(*MIX, strict=True)
        while time.monotonic() < deadline:
            await actions[self.rng.choices(kinds, weights)[0]]()

    # --- writes -------------------------------------------------------------------------------

    async def observe_execution(self) -> None:
        execution = f"{self.session}-e{self.written}"
        figure = f"fig-{execution}"
        finished = self.at()
        event = {
            "executionId": execution,
            "sessionId": self.session,
            "turnId": "t1",
            "tool": "run_python",
            "codeHash": f"h-{execution}",
            "status": "succeeded",
            "startedAt": finished,
            "finishedAt": finished,
            "producedArtifacts": [
                {"artifactId": figure, "version": 1, "logicalName": "volcano figure"}
            ],
        }
        step = f"subtask:{execution}"
        if self.book(step, await self.call("observeExecution", OBSERVE_EXECUTION, i=event)):
            self.steps.append(step)
            self.artifacts.append(f"{figure}#v1")

    async def observe_tool_call(self) -> None:
        task = f"subtask:mcp:{self.session}-q{self.written}"
        papers = [
            {
                "link": f"https://doi.org/10.1/{self.session}-{self.written}-{n}",
                "title": f"TP53 {self.rng.choice(TERMS)} paper {n}",
            }
            for n in range(3)
        ]
        event = {
            "taskId": task,
            "sessionId": self.session,
            "toolName": "mcp__pmc__search",
            "toolType": "search",
            "turnId": "t1",
            "retrievedAt": self.at(),
            "products": papers,
        }
        if self.book(task, await self.call("observeToolCall", OBSERVE_TOOL_CALL, i=event)):
            self.steps.append(task)

    async def observe_upload(self) -> None:
        path = f"data-{self.written}.csv"
        event = {
            "sessionId": self.session,
            "fileId": f"source_file:session:{self.session}:{path}",
            "name": path,
            "path": path,
            "createdAt": self.at(),
            "mediaType": "text/csv",
        }
        await self.call("observeUploadFile", OBSERVE_UPLOAD, i=event)

    # --- reads --------------------------------------------------------------------------------

    async def get_chain(self) -> None:
        if self.steps:
            step = f"ToolCall:{self.rng.choice(self.steps)}"
            kind = self.rng.choice(CHAIN_KINDS)
            await self.call("getChain", GET_CHAIN, id=step, k=kind, s=self.session)

    async def trace_provenance(self) -> None:
        if self.artifacts:
            await self.call("traceProvenance", TRACE, id=self.rng.choice(self.artifacts))

    async def search_nodes(self) -> None:
        scope = self.session if self.rng.random() < 0.5 else None
        await self.call("searchNodes", SEARCH, q=self.rng.choice(TERMS), s=scope)

    async def subgraph(self) -> None:
        await self.call("subgraph", SUBGRAPH, s=self.session)


async def stored_steps(http: httpx.AsyncClient, url: str, session: str) -> set[str]:
    """The keys of every ToolCall stored for ``session`` (all pages)."""
    keys: set[str] = set()
    after = None
    while True:
        response = await http.post(
            url, json={"query": TOOL_CALLS, "variables": {"s": session, "after": after}}
        )
        page = response.json()["data"]["nodesByType"]
        if page["__typename"] != "NodeList":
            raise BenchError(f"listing the steps of {session} answered {page}")
        keys.update(node["key"] for node in page["nodes"])
        after = page["endCursor"]
        if after is None:
            return keys


async def missing_writes(http: httpx.AsyncClient, url: str, tally: Tally) -> int:
    """How many acknowledged or queued steps the gateway at ``url`` does not have."""
    missing = 0
    for session in tally.acknowledged.keys() | tally.queued.keys():
        written = tally.acknowledged.get(session, set()) | tally.queued.get(session, set())
        missing += len(written - await stored_steps(http, url, session))
    return missing


def http_client(clients: int) -> httpx.AsyncClient:
    # Idle connections are dropped before uvicorn's 5 s keep-alive timeout closes them: reusing
    # one the server is closing fails the request on the client (a ReadError, not the server's).
    limits = httpx.Limits(
        max_connections=clients, max_keepalive_connections=clients, keepalive_expiry=2.0
    )
    return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(60.0))


async def run_load(plan: LoadPlan) -> LoadResult:
    """Run the load of ``plan``, wait for an empty outbox, and look for every write."""
    if plan.outage is not None:
        if plan.neo4j is None:
            raise ValueError("an outage needs the neo4j backend")
        check_same_server(plan.neo4j.uri, os.environ)
    run = uuid.uuid4().hex[:8]
    tally = Tally(bound=BOUND)
    with tempfile.TemporaryDirectory(prefix="sm-load-") as temporary:
        data_dir = Path(temporary) / "data"
        async with (
            running_gateway(data_dir, plan.settings()) as gateway,
            http_client(plan.clients) as http,
        ):
            callers = [
                Caller(
                    f"load-{run}-{n}", gateway.graphql, http, tally, random.Random(plan.seed + n)
                )
                for n in range(plan.clients)
            ]
            await asyncio.gather(*(caller.start() for caller in callers))
            # The goals, written before the load with Neo4j up: judged now, not counted as load.
            tally.judge(None)
            tally.answers.clear()
            started = time.monotonic()
            timeline, ended = await _load(plan, callers, started, gateway.url)
            settled = await wait_settled(http, gateway.url, ended + plan.drain_seconds)
            missing_live = await missing_writes(http, gateway.graphql, tally)
        async with (
            running_gateway(data_dir, plan.settings()) as gateway,
            http_client(plan.clients) as http,
        ):
            missing_restarted = await missing_writes(http, gateway.graphql, tally)
    tally.judge(timeline)
    if settled is None:
        tally.error("outbox", f"writes still pending {plan.drain_seconds:g} s after the load")
    return LoadResult(
        run=run,
        backend=plan.backend,
        clients=plan.clients,
        tally=tally,
        started=started,
        elapsed=ended - started,
        outage=plan.outage,
        timeline=timeline,
        settled_after=None if settled is None else settled - ended,
        missing_live=missing_live,
        missing_restarted=missing_restarted,
    )


async def _load(
    plan: LoadPlan, callers: list[Caller], started: float, url: str
) -> tuple[Timeline | None, float]:
    """The callers until ``plan.seconds`` are over and, alongside, the outage. Returns the
    outage's timeline, complete once the gateway is settled again (or ``plan.drain_seconds``
    after the load), and when the last caller stopped."""
    deadline = started + plan.seconds
    everyone = (caller.run(deadline) for caller in callers)
    if plan.outage is None:
        await asyncio.gather(*everyone)
        return None, time.monotonic()
    async with asyncio.TaskGroup() as group:
        tally = callers[0].tally
        outage = group.create_task(
            run_outage(
                plan.outage,
                started,
                url,
                deadline + plan.drain_seconds,
                ready=lambda: any(tally.acknowledged.values()),
            )
        )
        await asyncio.gather(*everyone)
        ended = time.monotonic()
    return outage.result(), ended


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0, help="load duration (default 60)")
    parser.add_argument("--clients", type=int, default=64, help="concurrent callers (default 64)")
    parser.add_argument("--seed", type=int, default=5, help="random seed of the callers' mix")
    parser.add_argument("--backend", choices=["file", "neo4j"], default="file")
    parser.add_argument(
        "--outage",
        metavar="START:DURATION",
        help="neo4j only: stop the test server START s into the load, restart it DURATION s later",
    )
    args = parser.parse_args(argv)
    if not 0 < args.seconds <= MAX_SECONDS or args.clients < 1:
        parser.error(f"--seconds must be in (0, {MAX_SECONDS:.0f}] and --clients at least 1")
    if args.outage is not None and args.backend != "neo4j":
        parser.error("--outage needs --backend neo4j")
    try:
        outage = Outage.parse(args.outage) if args.outage is not None else None
    except ValueError as exc:
        parser.error(f"--outage: {exc}")
    if outage is not None and outage.start >= args.seconds:
        parser.error("--outage must start before the load ends (START < --seconds)")
    try:
        neo4j = Connection.from_env(os.environ) if args.backend == "neo4j" else None
        if neo4j is not None and outage is not None:
            check_same_server(neo4j.uri, os.environ)
    except (BenchError, OutageError) as exc:
        parser.error(str(exc))
    plan = LoadPlan(args.seconds, args.clients, args.seed, neo4j, outage)
    result = asyncio.run(run_load(plan))
    print(report(result))
    return 1 if result.failed else 0


if __name__ == "__main__":
    sys.exit(main())
