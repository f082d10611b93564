"""The benchmark, end to end: ``python -m bench [--sizes 10k,100k,1m] …`` (see README.md).

1. Ingest: a fresh gateway; mutations/s with 1 and 16 concurrent callers, then one long
   session for the per-write latency by step; afterwards the store written over HTTP is
   compared with the same events applied in-process (``bench.check``).
2. Per store size: preload in-process up to the size, measure the cold start (as left, and
   after a snapshot) in a fresh interpreter, start the gateway on the store and time the reads
   over HTTP; at the profile size, sample the server with py-spy.
3. Neo4j (``--backend neo4j``): see ``bench.neo4j``.

Everything runs in one temporary directory that is removed at the end; every server is a
child process on 127.0.0.1 that is stopped when its phase ends. Phases 1 and 2 measure the log
engine (``gateway.stores.file``: preloaded, snapshotted and compared as log files), so its
gateways are started with ``FILE_ENGINE=log``, not the default engine; ``bench.embedded``
compares the two engines.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench.check import compare_with_in_process
from bench.client import execute, http_client
from bench.coldstart import measure_cold_start
from bench.generate import Session, generate_session, generate_sessions
from bench.ingest import ingest, write_latency
from bench.preload import preload
from bench.profile import read_stacks, sampling, summarise
from bench.reads import QUERIES, measure_reads
from bench.report import render
from bench.results import IngestResults, Results, SizeResults, StoreResults
from bench.server import Gateway, running_gateway
from gateway.stores.file.store import FileStore

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import httpx

PROBE_SESSIONS = 8
ONE_CLIENT_SESSIONS = 6
MANY_CLIENTS = 16
MANY_CLIENT_SESSIONS = 32
INGEST_BASE = 100_000_000
LONG_INDEX = 200_000_000
PROFILE_BASE = 300_000_000
PROFILE_ROUNDS = 150
PROFILE_BUDGET = 10.0
HERE = Path(__file__).resolve().parent
# The gateway's settings in phases 1 and 2: the engine whose files they preload and read.
LOG_ENGINE = {"FILE_ENGINE": "log"}


@dataclass(frozen=True, slots=True)
class Options:
    sizes: tuple[int, ...]
    seed: int
    rounds: int
    long_steps: int
    profile: bool
    backend: str
    output: Path
    workdir: Path | None


def parse_size(text: str) -> int:
    text = text.strip().lower().replace("_", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * scale)


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10k,100k", help="stored nodes, e.g. 10k,100k,1m")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=200, help="timed requests per query")
    parser.add_argument("--long-steps", type=int, default=10_100, help="steps of the long session")
    parser.add_argument("--no-profile", action="store_true", help="skip py-spy sampling")
    parser.add_argument("--backend", choices=["file", "neo4j"], default="file")
    parser.add_argument("--output", type=Path, default=HERE / "results")
    parser.add_argument("--workdir", type=Path, help="where the temporary directory goes")
    args = parser.parse_args(argv)
    return Options(
        sizes=tuple(sorted(parse_size(size) for size in args.sizes.split(","))),
        seed=args.seed,
        rounds=args.rounds,
        long_steps=args.long_steps,
        profile=not args.no_profile,
        backend=args.backend,
        output=args.output,
        workdir=args.workdir,
    )


def machine() -> dict[str, str]:
    memory = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return {
        "cpus": str(os.cpu_count()),
        "cpu": model,
        "memory": f"{int(memory) / 1024**2:.1f} GiB",
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
    }


# --- phase 1: ingest ----------------------------------------------------------------------------


async def run_ingest(options: Options, tmp: Path, client: httpx.AsyncClient) -> IngestResults:
    one = [generate_session(options.seed, INGEST_BASE + i) for i in range(ONE_CLIENT_SESSIONS)]
    many = [
        generate_session(options.seed, INGEST_BASE + ONE_CLIENT_SESSIONS + i)
        for i in range(MANY_CLIENT_SESSIONS)
    ]
    long = generate_session(options.seed, LONG_INDEX, steps=options.long_steps)
    control = generate_session(options.seed, LONG_INDEX + 1, steps=200)
    data = tmp / "ingest"
    async with running_gateway(data, LOG_ENGINE) as gateway:
        await _warm_up(client, gateway)
        one_client = await ingest(client, gateway.graphql, one, 1)
        _progress(f"ingest, 1 client: {one_client.per_second:.0f} mutations/s")
        many_clients = await ingest(client, gateway.graphql, many, MANY_CLIENTS)
        _progress(f"ingest, {MANY_CLIENTS} clients: {many_clients.per_second:.0f} mutations/s")
        latency = await write_latency(client, gateway.graphql, long, control)
        _progress(f"long session: {latency.mutations} mutations, ratio {latency.ratio():.2f}")
    sent = [*one, *many, long, *([control] if latency.control is not None else [])]
    equivalence = await compare_with_in_process(data / "graph", tmp / "in-process", sent)
    _progress(f"HTTP vs in-process: {equivalence.differences} differences")
    shutil.rmtree(data)
    shutil.rmtree(tmp / "in-process")
    return IngestResults(one_client, many_clients, latency, equivalence)


async def _warm_up(client: httpx.AsyncClient, gateway: Gateway) -> None:
    for _ in range(20):
        await execute(client, gateway.graphql, "{ __typename }")


# --- phase 2: store sizes -----------------------------------------------------------------------


async def run_sizes(
    options: Options, tmp: Path, client: httpx.AsyncClient, results: Results, started: float
) -> None:
    data = tmp / "reads"
    sessions = generate_sessions(options.seed)
    probes = [generate_session(options.seed, index) for index in range(PROBE_SESSIONS)]
    profile_at = _profile_size(options)
    for target in options.sizes:
        store = await prepare_store(data / "graph", sessions, target)
        async with running_gateway(data, LOG_ENGINE) as gateway:
            rss = gateway.rss_bytes()
            reads = await measure_reads(client, gateway.graphql, probes, options.rounds)
            results.sizes.append(SizeResults(store, gateway.start_seconds, rss, reads))
            _progress(f"reads at {store.nodes:,} nodes: done")
            if target == profile_at:
                results.profiles = await run_profiles(options, client, gateway, probes)
        save(options, results, started)


def _profile_size(options: Options) -> int | None:
    if not options.profile:
        return None
    return 100_000 if 100_000 in options.sizes else options.sizes[-1]


async def prepare_store(graph: Path, sessions: Iterator[Session], target: int) -> StoreResults:
    """Preload up to ``target`` nodes, then time cold starts: as left (the newest snapshot the
    store's own policy wrote, plus the log after it) and after an explicit snapshot."""
    store = await FileStore.open(graph, fsync=False)
    try:
        loaded = await preload(store, sessions, target)
    finally:
        await store.aclose()
    _progress(f"preloaded {loaded.nodes:,} nodes in {loaded.seconds:.1f} s")
    cold_log = await asyncio.to_thread(measure_cold_start, graph)
    snapshot_seconds = await _snapshot(graph)
    cold_snapshot = await asyncio.to_thread(measure_cold_start, graph)
    _progress(f"cold start {cold_log.seconds:.2f} s, after snapshot {cold_snapshot.seconds:.2f} s")
    return StoreResults(target, loaded, cold_log, snapshot_seconds, cold_snapshot)


async def _snapshot(graph: Path) -> float:
    store = await FileStore.open(graph, fsync=False)
    try:
        started = time.perf_counter()
        await store.snapshot()
        return time.perf_counter() - started
    finally:
        await store.aclose()


# --- profiles -----------------------------------------------------------------------------------


async def run_profiles(
    options: Options, client: httpx.AsyncClient, gateway: Gateway, probes: Sequence[Session]
) -> dict[str, str]:
    options.output.mkdir(parents=True, exist_ok=True)
    summaries: dict[str, str] = {}
    groups = {
        "trivial": ("{ __typename }",),
        "getChain": ("getChain",),
        "traceProvenance": ("traceProvenance",),
        "subgraph": ("subgraph",),
        "searchNodes": ("searchNodes",),
    }
    for name, prefixes in groups.items():
        queries = [q for q in QUERIES if q.name.startswith(prefixes)]
        raw = options.output / f"profile-{name}.txt"
        async with sampling(gateway.pid, raw):
            await measure_reads(
                client, gateway.graphql, probes, PROFILE_ROUNDS, queries, PROFILE_BUDGET
            )
        summaries[name] = summarise(read_stacks(raw))
    sessions = [generate_session(options.seed, PROFILE_BASE + i) for i in range(MANY_CLIENTS)]
    raw = options.output / "profile-ingest.txt"
    async with sampling(gateway.pid, raw):
        await ingest(client, gateway.graphql, sessions, MANY_CLIENTS)
    summaries["ingest (16 clients)"] = summarise(read_stacks(raw))
    _progress("profiles written")
    return summaries


# --- main ---------------------------------------------------------------------------------------


async def run(options: Options, command: str) -> Results:
    results = Results(machine(), command)
    results.machine["load before"] = _load()
    started = time.perf_counter()
    async with http_client() as client:
        with tempfile.TemporaryDirectory(prefix="sm-bench-", dir=options.workdir) as name:
            tmp = Path(name)
            if options.backend == "neo4j":
                from bench.neo4j import run_neo4j

                nodes = options.sizes[0]
                results.neo4j = await run_neo4j(options.seed, nodes, options.rounds, tmp, client)
            else:
                results.ingest = await run_ingest(options, tmp, client)
                save(options, results, started)
                await run_sizes(options, tmp, client, results, started)
    save(options, results, started)
    return results


def save(options: Options, results: Results, started: float) -> str:
    """Write ``results.json`` and ``report.md`` as they stand (after every phase, so that a
    long run that is stopped still leaves what it measured)."""
    results.seconds = time.perf_counter() - started
    results.machine["load after"] = _load()
    options.output.mkdir(parents=True, exist_ok=True)
    results.write_json(options.output / "results.json")
    report = render(results)
    (options.output / "report.md").write_text(report, encoding="utf-8")
    return report


def _load() -> str:
    """The 1-minute load average: other work on the machine skews every number."""
    return f"{os.getloadavg()[0]:.2f}"


def _progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    command = "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:])
    results = asyncio.run(run(options, command.strip()))
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
