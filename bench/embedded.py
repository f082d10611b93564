"""The embedded engines side by side: ``python -m bench.embedded --nodes 100000,300000``.

For each size, one data directory is preloaded in-process through the real use cases on the
log engine (``gateway.stores.file``, fsync off), then copied and migrated to the SQLite engine
(``gateway.stores.sqlite``; the migration is timed). Each engine is then measured in a fresh
interpreter (``python -m bench.embedded measure ENGINE DIR``), the other one idle:

* open to the first answered read (``get_nodes`` of a probe) and to the first search answered;
* resident memory added by the store per stored node (``VmRSS`` after the reads below minus
  before the open, the gateway's modules already imported);
* p50 of the use cases the API calls, in-process: cross-session ``search_nodes`` of the most
  common term (``tp53``), page 1 and page 2 through its cursor; a session-scoped search;
  ``get_chain`` (viewGoal from a step, viewRelatedTask from an artifact); ``trace_provenance``;
* ingest with fsync on: 16 concurrent callers each applying a fresh session's events;
* with ``--http ROUNDS``: a gateway started on a copy of each engine's directory, every read
  of ``bench.reads`` sent to both in turn (``bench.compare.alternate``), p50 over HTTP and its
  ratio to the same gateway's ``{ __typename }``, as the targets are stated;
* with ``--http-ingest ROUNDS``: then the same two gateways each ingest 16 fresh sessions sent
  by 16 callers over HTTP (``bench.ingest``, fsync on), the engines alternating ROUNDS times:
  ingest as a control plane sees it, the log engine warm (its search index built).

Prints a Markdown table and writes every number to ``<workdir>/embedded.json``.

``--only ingest`` measures ingest alone (each engine on a fresh copy of its directory, the
engines alternating ``--repeat`` times); ``--keep`` leaves the preloaded directories in the
work directory and ``--workdir`` with them already there reuses them instead of preloading.

``--engines sqlite`` preloads the SQLite engine directly (fsync off) and measures it alone:
for sizes whose log engine would not fit in memory (~4 KB a node). ``--in-place`` measures the
preloaded directories themselves instead of copies, over HTTP too (a 10M-node database is
~34 GB); each ingest then adds sessions no earlier run wrote.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.client import BenchError, Latency, http_client
from bench.compare import alternate
from bench.generate import generate_session, generate_sessions
from bench.ingest import ingest
from bench.preload import apply_session, preload
from bench.reads import QUERIES, _once
from bench.server import rss_of, running_gateway
from gateway.stores.file.store import FileStore
from gateway.stores.sqlite.store import SqliteStore
from resolvers import chains, provenance, search

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import httpx

    from bench.generate import Session
    from resolvers.store import GraphStore

SEED = 7
PROBE_SESSIONS = 8
INGEST_CALLERS = 16
COMMON_TERM = "tp53"
SEARCH_READY_S = 600.0
REPOSITORY = Path(__file__).resolve().parent.parent
ENGINES: dict[str, Callable[..., Awaitable[GraphStore]]] = {
    "log": FileStore.open,
    "sqlite": SqliteStore.open,
}


async def _timed(rounds: int, call: Callable[[], Awaitable[object]]) -> float:
    """p50 in milliseconds of ``rounds`` calls (after one warm-up call)."""
    await call()
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


async def _ingest(store: GraphStore, first: int = 10_000_000) -> float:
    """Events per second of ``INGEST_CALLERS`` concurrent callers, each a fresh session (the
    generator's sessions ``first`` …)."""
    fresh = [generate_session(SEED, first + index) for index in range(INGEST_CALLERS)]
    started = time.perf_counter()
    counts = await asyncio.gather(*(apply_session(store, s) for s in fresh))
    return sum(counts) / (time.perf_counter() - started)


async def _measure_ingest(engine: str, directory: Path) -> dict[str, Any]:
    store = await ENGINES[engine](directory, fsync=True)
    try:
        nodes = await store.count_nodes()
        return {"nodes": nodes, "ingest_events_per_s": await _ingest(store)}
    finally:
        await store.aclose()


async def _measure(engine: str, directory: Path, rounds: int) -> dict[str, Any]:
    probes = [generate_session(SEED, index) for index in range(PROBE_SESSIONS)]
    gc.collect()
    before = rss_of()
    started = time.perf_counter()
    store = await ENGINES[engine](directory, fsync=True)
    try:
        assert (await store.get_nodes([probes[0].probes.step]))[0] is not None
        first_answer = time.perf_counter() - started
        first = await search.search_nodes(store, COMMON_TERM, first=20)
        search_ready = time.perf_counter() - started
        assert first.total > 0
        assert first.end_cursor is not None
        result: dict[str, Any] = {
            "open_to_first_answer_s": first_answer,
            "open_to_search_s": search_ready,
            "nodes": await store.count_nodes(),
            "common_term_hits": first.total,
        }
        cursor = first.end_cursor
        sessions = iter(range(rounds + 1))

        def probe() -> Any:
            return probes[next(sessions, 0) % PROBE_SESSIONS]

        result["search_top20_p50_ms"] = await _timed(
            rounds, lambda: search.search_nodes(store, COMMON_TERM, first=20)
        )
        result["search_page2_p50_ms"] = await _timed(
            rounds, lambda: search.search_nodes(store, COMMON_TERM, first=20, after=cursor)
        )
        result["search_session_p50_ms"] = await _timed(
            rounds,
            lambda: search.search_nodes(
                store, probe().probes.search_term, session_id=probe().session_id, first=20
            ),
        )
        result["chain_view_goal_p50_ms"] = await _timed(
            rounds,
            lambda: chains.get_chain(store, probe().probes.step, chains.ChainKind.VIEW_GOAL),
        )
        result["chain_related_task_p50_ms"] = await _timed(
            rounds,
            lambda: chains.get_chain(
                store, probe().probes.artifact, chains.ChainKind.VIEW_RELATED_TASK
            ),
        )
        result["trace_claim_p50_ms"] = await _timed(
            rounds, lambda: provenance.trace_provenance(store, probe().probes.claim)
        )
        gc.collect()
        result["rss_per_node_b"] = (rss_of() - before) / result["nodes"]
        # Sessions no preload or earlier ingest of this directory wrote (each adds hundreds of
        # nodes, so a larger store starts further on).
        result["ingest_events_per_s"] = await _ingest(store, 30_000_000 + result["nodes"])
    finally:
        await store.aclose()
    return result


def _measure_in_child(engine: str, directory: Path, rounds: int) -> dict[str, Any]:
    """``rounds`` 0: ingest only."""
    completed = subprocess.run(
        [sys.executable, "-m", "bench.embedded", "measure", engine, str(directory), str(rounds)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPOSITORY,
        timeout=3600,
    )
    return dict(json.loads(completed.stdout.splitlines()[-1]))


async def _build(directory: Path, nodes: int, engine: str = "log") -> dict[str, Any]:
    store = await ENGINES[engine](directory, fsync=False)
    try:
        report = await preload(store, generate_sessions(SEED), nodes)
        if isinstance(store, FileStore):
            await store.snapshot()
    finally:
        await store.aclose()
    return {"nodes": report.nodes, "events": report.events, "preload_s": report.seconds}


async def _migrate(directory: Path) -> float:
    started = time.perf_counter()
    store = await SqliteStore.open(directory, fsync=False)
    seconds = time.perf_counter() - started
    await store.aclose()
    return seconds


def _disk(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def _prepare(
    workdir: Path, size: int, engines: list[str]
) -> tuple[dict[str, Path], dict[str, Any]]:
    """The preloaded directories of ``size`` (built unless ``workdir`` has them already): a
    log-engine directory and its migration to SQLite, or with ``engines`` ``["sqlite"]`` a
    SQLite directory preloaded directly."""
    dirs = {engine: workdir / f"{engine}-{size}" for engine in engines}
    info = workdir / f"built-{size}.json"
    if info.exists() and all(directory.is_dir() for directory in dirs.values()):
        print(f"reusing {', '.join(map(str, dirs.values()))}", file=sys.stderr)
        return dirs, dict(json.loads(info.read_text()))
    for leftover in dirs.values():
        shutil.rmtree(leftover, ignore_errors=True)
    if "log" not in dirs:
        sqlite_dir = dirs["sqlite"]
        sqlite_dir.mkdir(parents=True)
        built = asyncio.run(_build(sqlite_dir, size, "sqlite"))
        built["disk_sqlite_b"] = _disk(sqlite_dir)
        print(f"built {size}: {built}", file=sys.stderr)
        info.write_text(json.dumps(built))
        return dirs, built
    log_dir, sqlite_dir = dirs["log"], dirs["sqlite"]
    built = asyncio.run(_build(log_dir, size))
    print(f"built {size}: {built}", file=sys.stderr)
    shutil.copytree(log_dir, sqlite_dir)
    built["migrate_s"] = asyncio.run(_migrate(sqlite_dir))
    built["disk_log_b"] = _disk(log_dir)
    built["disk_sqlite_b"] = sum(p.stat().st_size for p in sqlite_dir.glob("graph.sqlite3*"))
    shutil.rmtree(sqlite_dir / "migrated-from-log")
    print(f"migrated {size}: {built['migrate_s']:.1f} s", file=sys.stderr)
    info.write_text(json.dumps(built))
    return dirs, built


def _on_copy(
    directory: Path, measure: Callable[[Path], dict[str, Any]], *, in_place: bool = False
) -> dict[str, Any]:
    """``measure`` of a fresh copy of ``directory`` (ingest adds sessions to what it opens),
    or of ``directory`` itself ``in_place``."""
    if in_place:
        return measure(directory)
    copy = directory.with_name(directory.name + "-measured")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(directory, copy)
    try:
        return measure(copy)
    finally:
        shutil.rmtree(copy)


async def _search_ready(client: httpx.AsyncClient, url: str, probe: Session) -> None:
    """Wait until ``url`` answers the search of the common term (``SEARCH_READY_S`` at most)."""
    (query,) = [q for q in QUERIES if COMMON_TERM in q.name]
    deadline = time.monotonic() + SEARCH_READY_S
    while True:
        try:
            await _once(client, url, query, probe)
            return
        except BenchError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1.0)


async def _over_http(
    dirs: dict[str, Path], rounds: int, ingest_rounds: int = 0, *, in_place: bool = False
) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """p50 ms of every read over HTTP on each engine, the gateways answering in turn; then,
    ``ingest_rounds`` times, each gateway's ingest of ``INGEST_CALLERS`` fresh sessions sent
    by as many callers over HTTP (fsync on), the engines alternating: events per second.
    Each gateway runs on a copy of its engine's directory, or ``in_place`` on the directory
    itself (linked as its data directory's graph)."""
    probes = [generate_session(SEED, index) for index in range(PROBE_SESSIONS)]
    with tempfile.TemporaryDirectory(
        prefix="sm-engines-", dir=next(iter(dirs.values())).parent
    ) as tmp:
        data_dirs = {engine: Path(tmp) / engine for engine in dirs}
        for engine, directory in dirs.items():
            if in_place:
                data_dirs[engine].mkdir()
                (data_dirs[engine] / "graph").symlink_to(directory.resolve())
            else:
                shutil.copytree(directory, data_dirs[engine] / "graph")
        async with contextlib.AsyncExitStack() as stack, http_client() as client:
            urls = []
            for engine, data_dir in data_dirs.items():
                settings = {"FILE_ENGINE": engine}
                gateway = await stack.enter_async_context(running_gateway(data_dir, settings))
                urls.append(gateway.graphql)
            for url in urls:  # steady state: the log engine builds its search index after /health
                await _search_ready(client, url, probes[0])
            samples = await alternate(client, urls, QUERIES, probes, rounds, give_up=True)
            ingested: dict[str, list[float]] = {engine: [] for engine in dirs}
            for number in range(ingest_rounds):
                fresh = [
                    generate_session(SEED, 20_000_000 + number * INGEST_CALLERS + index)
                    for index in range(INGEST_CALLERS)
                ]
                for engine, url in zip(dirs, urls, strict=True):
                    done = await ingest(client, url, fresh, INGEST_CALLERS)
                    ingested[engine].append(done.per_second)
                    print(f"{engine} ingest over HTTP: {done.per_second:,.0f}", file=sys.stderr)
    reads = {
        engine: {name: Latency.of(values).p50 for name, values in side.items() if values}
        for engine, side in zip(dirs, samples, strict=True)
        if rounds
    }
    return reads, ingested


def run(
    sizes: list[int],
    workdir: Path,
    rounds: int,
    *,
    only_ingest: bool,
    repeat: int,
    keep: bool,
    http_rounds: int = 0,
    http_ingest: int = 0,
    engines: list[str] | None = None,
    in_place: bool = False,
) -> dict[str, Any]:
    results: dict[str, Any] = {"load_before": os.getloadavg(), "sizes": {}}
    for size in sizes:
        dirs, built = _prepare(workdir, size, engines or list(ENGINES))
        for number in range(repeat):
            for engine in dirs:
                measure = functools.partial(
                    _measure_in_child, engine, rounds=0 if only_ingest else rounds
                )
                measured = _on_copy(dirs[engine], measure, in_place=in_place)
                measured["load_1min"] = os.getloadavg()[0]
                built.setdefault("runs", {}).setdefault(engine, []).append(measured)
                print(f"{engine} {size} #{number + 1}: {measured}", file=sys.stderr)
        for engine, runs in built.get("runs", {}).items():
            built[engine] = {
                key: statistics.median(run[key] for run in runs)
                if isinstance(runs[0][key], float)
                else runs[0][key]
                for key in runs[0]
            }
        if http_rounds or http_ingest:
            built["http"], built["http_ingest"] = asyncio.run(
                _over_http(dirs, http_rounds, http_ingest, in_place=in_place)
            )
            built["http_load_1min"] = os.getloadavg()[0]
        results["sizes"][size] = built
        if not keep:
            for directory in dirs.values():
                shutil.rmtree(directory)
            (workdir / f"built-{size}.json").unlink()
    results["load_after"] = os.getloadavg()
    return results


ROWS = (
    ("open to first answer", "open_to_first_answer_s", "{:.2f} s"),
    ("open to search", "open_to_search_s", "{:.2f} s"),
    ("RSS per node", "rss_per_node_b", "{:,.0f} B"),
    ("search `tp53` top-20 p50", "search_top20_p50_ms", "{:.2f} ms"),
    ("search `tp53` page 2 (cursor) p50", "search_page2_p50_ms", "{:.2f} ms"),
    ("search in a session p50", "search_session_p50_ms", "{:.2f} ms"),
    ("getChain viewGoal p50", "chain_view_goal_p50_ms", "{:.2f} ms"),
    ("getChain viewRelatedTask p50", "chain_related_task_p50_ms", "{:.2f} ms"),
    ("traceProvenance claim p50", "trace_claim_p50_ms", "{:.2f} ms"),
    ("ingest, 16 callers, fsync on", "ingest_events_per_s", "{:,.0f} events/s"),
)


def table(results: dict[str, Any]) -> str:
    sizes = results["sizes"]
    columns = [(s, e) for s in sizes for e in ENGINES if e in sizes[s].get("runs", {})]
    header = "| | " + " | ".join(f"{s:,} {e}" for s, e in columns) + " |"
    lines = [header, "|---" * (1 + len(columns)) + "|"]
    for name, key, form in ROWS:
        if any(key not in sizes[s][e] for s, e in columns):
            continue
        cells = [form.format(sizes[s][e][key]) for s, e in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for s, built in sizes.items():
        migration = f", migration {built['migrate_s']:.1f} s" if "migrate_s" in built else ""
        log_disk = f"log {built['disk_log_b'] / 2**20:,.0f} MiB, " if "disk_log_b" in built else ""
        lines.append(
            f"\n{s:,}: {built['nodes']:,} nodes, {built['events']:,} events, preload "
            f"{built['preload_s']:.0f} s{migration}, "
            f"`tp53` hits {built.get('sqlite', {}).get('common_term_hits', '-')}, disk: "
            f"{log_disk}SQLite {built['disk_sqlite_b'] / 2**20:,.0f} MiB"
        )
        for engine, runs in built.get("runs", {}).items():
            each = ", ".join(
                f"{run['ingest_events_per_s']:,.0f} (load {run['load_1min']:.1f})" for run in runs
            )
            lines.append(f"{s:,} {engine} ingest, each run: {each}")
        if built.get("http"):
            lines += _http_table(s, built["http"], built["http_load_1min"])
        for engine, runs in built.get("http_ingest", {}).items():
            if not runs:
                continue
            each = ", ".join(f"{run:,.0f}" for run in runs)
            lines.append(f"{s:,} {engine} ingest over HTTP, {INGEST_CALLERS} callers: {each}")
    return "\n".join(lines)


def _http_table(size: int, http: dict[str, dict[str, float]], load: float) -> list[str]:
    engines = list(http)
    trivial = QUERIES[0].name
    lines = [
        f"\n{size:,} over HTTP (1-minute load {load:.1f} at the end): p50 ms"
        " (and ÷ `{ __typename }`)",
        "",
        "| request | " + " | ".join(engines) + " |",
        "|---" * (1 + len(engines)) + "|",
    ]
    for query in QUERIES:
        cells = [
            f"{http[e][query.name]:.2f} ({http[e][query.name] / http[e][trivial]:.1f}x)"
            if query.name in http[e]
            else "failed"
            for e in engines
        ]
        lines.append(f"| {query.name} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    if sys.argv[1:2] == ["measure"]:
        engine, directory, rounds = sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
        if rounds == 0:
            print(json.dumps(asyncio.run(_measure_ingest(engine, directory))))
        else:
            print(json.dumps(asyncio.run(_measure(engine, directory, rounds))))
        return
    parser = argparse.ArgumentParser(prog="python -m bench.embedded")
    parser.add_argument("--nodes", default="100000,300000", help="comma-separated store sizes")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument(
        "--workdir", type=Path, default=None, help="reuses the preloaded directories in it"
    )
    parser.add_argument("--only", choices=["ingest"], default=None, help="measure only this")
    parser.add_argument("--repeat", type=int, default=1, help="measurements of each engine")
    parser.add_argument("--keep", action="store_true", help="keep the preloaded directories")
    parser.add_argument(
        "--engines",
        default="log,sqlite",
        choices=["log,sqlite", "sqlite"],
        help="sqlite: preload SQLite directly and measure it alone",
    )
    parser.add_argument(
        "--in-place", action="store_true", help="measure the preloaded directories, not copies"
    )
    parser.add_argument(
        "--http", type=int, default=0, metavar="ROUNDS", help="also read over HTTP, both engines"
    )
    parser.add_argument(
        "--http-ingest",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="also ingest over HTTP, the engines alternating ROUNDS times",
    )
    arguments = parser.parse_args()
    if arguments.in_place and arguments.http_ingest:
        parser.error("--http-ingest sends the same sessions every run: measure it on copies")
    sizes = [int(value) for value in arguments.nodes.split(",")]
    workdir = arguments.workdir or Path(tempfile.mkdtemp(prefix="bench-embedded-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results = run(
        sizes,
        workdir,
        arguments.rounds,
        only_ingest=arguments.only == "ingest",
        repeat=arguments.repeat,
        keep=arguments.keep,
        http_rounds=arguments.http,
        http_ingest=arguments.http_ingest,
        engines=arguments.engines.split(","),
        in_place=arguments.in_place,
    )
    (workdir / "embedded.json").write_text(json.dumps(results, indent=2))
    print(table(results))
    print(f"\nload average before {results['load_before']}, after {results['load_after']}")


if __name__ == "__main__":
    main()
