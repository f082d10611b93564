"""Bounded load: ``python -m bench.load [--seconds 60] [--clients 64]`` (see README.md, "Load").

Starts the gateway (``science-memory serve``, uvicorn) on a free loopback port with a temporary
data directory, runs ``--clients`` concurrent callers for ``--seconds`` — mixed reads
(``getChain``, ``traceProvenance``, ``searchNodes``, ``subgraph``) and writes (``observe*``) —
and stops by itself. It reports the requests served, p50/p99 per kind and the errors (target:
0), then checks that every acknowledged write is in the graph: on the running gateway, and again
after a restart on the same data directory. Exits 1 on any error or missing write. CI never
runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.client import Latency
from bench.server import running_gateway

MAX_SECONDS = 3600.0
WINDOW = 10.0
T0 = datetime(2026, 1, 1, tzinfo=UTC)
OBSERVED = "__typename ... on Error { code message }"

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
    __typename ... on NodeList { endCursor nodes { key } } } }"""

# Which answer each kind expects; anything else counts as an error.
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


@dataclass
class Tally:
    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    finished: list[float] = field(default_factory=list)  # time.monotonic() of each answer
    errors: Counter[str] = field(default_factory=Counter)
    samples: dict[str, str] = field(default_factory=dict)
    acknowledged: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        self.samples.setdefault(kind, detail[:300])


@dataclass
class Caller:
    """One simulated client: its own session, and the steps it wrote so far."""

    number: int
    url: str
    http: httpx.AsyncClient
    tally: Tally
    rng: random.Random
    steps: list[str] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)
    written: int = 0

    @property
    def session(self) -> str:
        return f"load-{self.number}"

    def at(self) -> str:
        self.written += 1
        return (T0 + timedelta(seconds=self.written)).isoformat()

    async def call(self, kind: str, document: str, **variables: Any) -> str | None:
        """Send one request; the answer's ``__typename`` when it is one that ``kind`` expects."""
        started = time.perf_counter()
        try:
            response = await self.http.post(
                self.url, json={"query": document, "variables": variables}
            )
        except httpx.HTTPError as exc:
            self.tally.error(kind, f"{type(exc).__name__}: {exc}")
            return None
        self.tally.seconds[kind].append(time.perf_counter() - started)
        self.tally.finished.append(time.monotonic())
        body = response.json() if response.status_code == 200 else {}
        answer = next(iter((body.get("data") or {}).values()), None)
        typename = answer.get("__typename") if isinstance(answer, dict) else None
        if response.status_code != 200 or body.get("errors") or typename not in EXPECTED[kind]:
            self.tally.error(kind, f"HTTP {response.status_code}: {response.text}")
            return None
        return str(typename)

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
        if await self.call("observeExecution", OBSERVE_EXECUTION, i=event) == "Observed":
            self.steps.append(f"subtask:{execution}")
            self.artifacts.append(f"{figure}#v1")
            self.tally.acknowledged[self.session].add(f"subtask:{execution}")

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
        if await self.call("observeToolCall", OBSERVE_TOOL_CALL, i=event) == "Observed":
            self.steps.append(task)
            self.tally.acknowledged[self.session].add(task)

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
        keys.update(node["key"] for node in page["nodes"])
        after = page["endCursor"]
        if after is None:
            return keys


async def missing_writes(http: httpx.AsyncClient, url: str, tally: Tally) -> int:
    missing = 0
    for session, acknowledged in tally.acknowledged.items():
        missing += len(acknowledged - await stored_steps(http, url, session))
    return missing


def http_client(clients: int) -> httpx.AsyncClient:
    # Idle connections are dropped before uvicorn's 5 s keep-alive timeout closes them: reusing
    # one the server is closing fails the request on the client (a ReadError, not the server's).
    limits = httpx.Limits(
        max_connections=clients, max_keepalive_connections=clients, keepalive_expiry=2.0
    )
    return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(60.0))


async def load(seconds: float, clients: int, seed: int) -> int:
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="sm-load-") as temporary:
        data_dir = Path(temporary) / "data"
        async with running_gateway(data_dir) as gateway, http_client(clients) as http:
            callers = [
                Caller(n, gateway.graphql, http, tally, random.Random(seed + n))
                for n in range(clients)
            ]
            await asyncio.gather(*(caller.start() for caller in callers))
            tally.seconds.clear()
            started = time.monotonic()
            tally.finished.clear()
            await asyncio.gather(*(caller.run(started + seconds) for caller in callers))
            elapsed = time.monotonic() - started
            missing_live = await missing_writes(http, gateway.graphql, tally)
        async with running_gateway(data_dir) as gateway, http_client(clients) as http:
            missing_restarted = await missing_writes(http, gateway.graphql, tally)
    print(report(tally, started, elapsed, clients, missing_live, missing_restarted))
    return 1 if tally.errors or missing_live or missing_restarted else 0


def report(
    tally: Tally, started: float, elapsed: float, clients: int, live: int, restarted: int
) -> str:
    served = sum(len(samples) for samples in tally.seconds.values())
    everything = Latency.of([s for samples in tally.seconds.values() for s in samples])
    writes = sum(len(steps) for steps in tally.acknowledged.values())
    lines = [
        f"{clients} clients for {elapsed:.1f} s: {served} requests served "
        f"({served / elapsed:.0f}/s), {sum(tally.errors.values())} errors",
        f"all      p50 {everything.p50:7.1f} ms   p99 {everything.p99:7.1f} ms",
    ]
    for kind, _ in MIX:
        latency = Latency.of(tally.seconds.get(kind, []))
        lines.append(
            f"{kind:<18} n={latency.count:<7} p50 {latency.p50:7.1f} ms   p99 {latency.p99:7.1f} ms"
            f"   errors {tally.errors[kind]}"
        )
    lines += [f"  e.g. {kind}: {sample}" for kind, sample in tally.samples.items()]
    windows = Counter(int((moment - started) // WINDOW) for moment in tally.finished)
    per_second = [f"{windows[w] / WINDOW:.0f}" for w in range(int(elapsed // WINDOW))]
    lines.append(f"requests/s per {WINDOW:.0f} s window: {' '.join(per_second)}")
    lines.append(
        f"acknowledged steps: {writes}; missing on the running gateway: {live}, "
        f"after a restart: {restarted}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0, help="load duration (default 60)")
    parser.add_argument("--clients", type=int, default=64, help="concurrent callers (default 64)")
    parser.add_argument("--seed", type=int, default=5, help="random seed of the callers' mix")
    args = parser.parse_args(argv)
    if not 0 < args.seconds <= MAX_SECONDS or args.clients < 1:
        parser.error(f"--seconds must be in (0, {MAX_SECONDS:.0f}] and --clients at least 1")
    return asyncio.run(load(args.seconds, args.clients, args.seed))


if __name__ == "__main__":
    sys.exit(main())
