"""Isolation under hostile load: ``python -m bench.isolation [--nodes 10000] [--seconds 10]``.

Starts the gateway (``bench.server``) on a temporary file store, records one session of about
``--nodes`` nodes over HTTP, then measures ``{ __typename }`` and ``observeExecution`` p50/p99
quiet and under (a) 6 clients sending 30 aliases of ``subgraph(first: 5000)``, (b) 64 clients
searching a common term, (c) 1,000 idle connections, (d) 2 clients sending a 3.8 MB document of
short tokens (refused unparsed), (e) 2 clients sending a 1 MB document holding one string
literal (parsed) — each as a ratio to quiet — and runs the hostile battery (inputs tried, 5xx
answers, "Unexpected error." answers; the target is 0 and 0). ``--code DIR`` runs the gateway
of another source tree (an older commit's ``git archive``) under the same loads.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.client import Latency
from bench.generate import generate_session
from bench.server import HOST, running_gateway

TYPENAME = "{ __typename }"
OBSERVE = """mutation($input: ObserveExecutionInput!) { observeExecution(input: $input) {
  __typename } }"""
ONE_SUBGRAPH = 'subgraph(sessionId: "$S", first: 5000) { ... on Subgraph { nodes { id key } } }'
ALIASES = "{ " + " ".join(f"a{i}: {ONE_SUBGRAPH}" for i in range(30)) + " }"
SEARCH = (
    '{ searchNodes(query: "execution", first: 100) { ... on NodeList { total nodes { id } } } }'
)
TOKENS = "{ __typename } " + "x " * 1_900_000
LITERAL = '{ node(nodeId: "' + "x" * 1_000_000 + '") { __typename } }'


def battery(session: str) -> list[dict[str, Any]]:
    """Hostile requests: each must answer without a 5xx and without an internal error."""

    def cursor(text: str) -> str:
        return base64.urlsafe_b64encode(text.encode()).decode()

    node = "query($r: ID!) { node(nodeId: $r) { __typename } }"
    listing = "query($c: String) { nodesByType(labels: [TOOL_CALL], after: $c) { __typename } }"
    spreads = " ".join(f"fragment F{i} on Query {{ ...F{i + 1} }}" for i in range(250))
    execution = {
        "executionId": "hostile",
        "sessionId": session,
        "turnId": "t",
        "tool": "run_python",
        "codeHash": "h",
        "status": "succeeded",
        "startedAt": "2026-01-01T00:00:00Z",
        "finishedAt": "0999-06-01T00:00:00Z",
    }
    return [
        {"query": OBSERVE, "variables": {"input": execution}},
        {"query": node, "variables": {"r": "fig#v²"}},
        {"query": node, "variables": {"r": "fig#v" + "9" * 5000}},
        {"query": listing, "variables": {"c": cursor(f"offset:{2**63}")}},
        {"query": listing, "variables": {"c": cursor("offset:" + "9" * 4301)}},
        {"query": listing, "variables": {"c": "%%%garbage"}},
        {"query": 'subscription { graphEvents(sessionId: "s") { __typename } }'},
        {"query": f"{{ ...F0 }} {spreads} fragment F250 on Query {{ __typename }}"},
        {"query": "query A { __typename } query B { __typename }"},
        {"query": ALIASES.replace("$S", session)},
        {"query": "{" * 1300 + "__typename" + "}" * 1300},
        {
            "query": "query($s: String) { edgesByType(types: [NEXT], sessionId: $s) "
            "{ __typename } }",
            "variables": {"s": "x\udc00y"},
        },
        {
            "query": "query($a: String!) { artifactProvenance(artifactId: $a, version: 1) "
            "{ __typename } }",
            "variables": {"a": "x\udc00y"},
        },
    ]


@dataclass(frozen=True, slots=True)
class Probe:
    latency: Latency
    failed: int  # answers that were not HTTP 200 with data, and connection errors


async def percentiles(url: str, document: str, seconds: float, variables: Any = None) -> Probe:
    samples: list[float] = []
    failed = 0
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=60.0) as client:
        while time.monotonic() < deadline:
            body = {"query": document, "variables": variables() if callable(variables) else {}}
            started = time.perf_counter()
            try:
                response = await client.post(url, json=body)
                failed += response.status_code != 200 or "errors" in response.json()
            except httpx.HTTPError:
                failed += 1
            samples.append(time.perf_counter() - started)
    return Probe(Latency.of(samples), failed)


def observe_input(session: str) -> Any:
    def make() -> dict[str, Any]:
        return {
            "input": {
                "executionId": f"probe-{uuid.uuid4().hex}",
                "sessionId": session,
                "turnId": "t",
                "tool": "run_python",
                "codeHash": "h",
                "status": "succeeded",
                "startedAt": "2026-06-01T00:00:00Z",
                "finishedAt": "2026-06-01T00:00:01Z",
            }
        }

    return make


async def hammer(url: str, document: str, clients: int, stop: asyncio.Event) -> None:
    async def one() -> None:
        async with httpx.AsyncClient(timeout=120.0) as client:
            while not stop.is_set():
                with contextlib.suppress(httpx.HTTPError):
                    await client.post(url, json={"query": document})

    await asyncio.gather(*(one() for _ in range(clients)))


async def idle_connections(port: int, count: int, stop: asyncio.Event) -> None:
    writers = []
    for _ in range(count):
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection(HOST, port)
            writers.append(writer)
    await stop.wait()
    for writer in writers:
        writer.close()


async def measure(url: str, port: int, session: str, seconds: float) -> dict[str, Any]:
    async def both() -> dict[str, Probe]:
        return {
            "typename": await percentiles(url, TYPENAME, seconds / 2),
            "observe": await percentiles(url, OBSERVE, seconds / 2, observe_input(session)),
        }

    results: dict[str, Any] = {"quiet": await both()}
    loads = {
        "aliases6": lambda stop: hammer(url, ALIASES.replace("$S", session), 6, stop),
        "search64": lambda stop: hammer(url, SEARCH, 64, stop),
        "idle1000": lambda stop: idle_connections(port, 1000, stop),
        "tokens2": lambda stop: hammer(url, TOKENS, 2, stop),
        "literal2": lambda stop: hammer(url, LITERAL, 2, stop),
    }
    for name, start in loads.items():
        stop = asyncio.Event()
        load = asyncio.ensure_future(start(stop))
        await asyncio.sleep(1.0)
        results[name] = await both()
        stop.set()
        await asyncio.wait_for(load, 60)
    return results


async def run_battery(url: str, session: str) -> dict[str, int]:
    tried = server_errors = internal = 0
    async with httpx.AsyncClient(timeout=60.0) as client:
        for body in battery(session):
            tried += 1
            # JSON as json.dumps writes it: a lone surrogate stays an escape (no UTF-8 has it).
            content = json.dumps(body).encode()
            headers = {"Content-Type": "application/json"}
            response = await client.post(url, content=content, headers=headers)
            server_errors += response.status_code >= 500
            internal += "Unexpected error." in response.text or '"INTERNAL"' in response.text
    return {"tried": tried, "5xx": server_errors, "internal": internal}


async def main_async(nodes: int, seconds: float, code: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-isolation-") as tmp:
        data_dir = Path(tmp) / "data"
        async with running_gateway(data_dir, {"FSYNC": "1"}, code=code) as gateway:
            port = int(gateway.url.rsplit(":", 1)[1])
            session = generate_session(7, 0, steps=max(10, nodes // 5))
            async with httpx.AsyncClient(timeout=60.0) as client:
                for mutation in session.mutations:
                    body = {"query": mutation.field.document, "variables": mutation.variables}
                    await client.post(gateway.graphql, json=body)
            results = await measure(gateway.graphql, port, session.session_id, seconds)
            results["battery"] = await run_battery(gateway.graphql, session.session_id)
            return results


def report(results: dict[str, Any]) -> str:
    quiet = results["quiet"]
    lines = ["load          probe      count  failed   p50 ms   p99 ms  p50/quiet  p99/quiet"]
    for load in ("quiet", "aliases6", "search64", "idle1000", "tokens2", "literal2"):
        for probe in ("typename", "observe"):
            measured: Probe = results[load][probe]
            latency, calm = measured.latency, quiet[probe].latency
            lines.append(
                f"{load:<13} {probe:<9} {latency.count:6d} {measured.failed:7d} "
                f"{latency.p50:8.1f} {latency.p99:8.1f} "
                f"{latency.p50 / calm.p50:10.1f} {latency.p99 / calm.p99:10.1f}"
            )
    lines.append("battery: " + json.dumps(results["battery"]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.isolation")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=10.0, help="per load, both probes")
    parser.add_argument("--code", type=Path, default=None, help="the gateway of this source tree")
    args = parser.parse_args(argv)
    results = asyncio.run(main_async(args.nodes, args.seconds, args.code))
    print(report(results))
    battery_result = results["battery"]
    return 1 if battery_result["5xx"] or battery_result["internal"] else 0


if __name__ == "__main__":
    sys.exit(main())
