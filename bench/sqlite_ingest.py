"""The 16-caller ingest of ``bench.embedded`` on a copy of a SQLite data directory, in this
process, with what it cost: events/s, CPU (all threads, and the event loop's alone) and bytes
written per event, the wall and CPU time of the writer's commits, checkpoints and merges
(count, seconds, CPU seconds, longest), the writer's statements (``--count``: a trace
callback, which costs CPU itself), then the search reads with the written nodes still in the
search index's tail, the time to reopen the store (the tail is rebuilt) and answer a search,
the merge of the tail, and the same reads after it.

    python -m bench.sqlite_ingest /tmp/emb50k/sqlite-50000 [--count] [--tail-rows N]

Run it with ``PYTHONPATH`` at another checkout to measure that code on the same copy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from bench.embedded import COMMON_TERM, INGEST_CALLERS, SEED, _ingest, _timed
from bench.generate import generate_session
from gateway.stores.sqlite import store as store_module
from gateway.stores.sqlite.store import SqliteStore
from resolvers import search


def _written() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


# The store's functions that run on its writer's (or checkpointer's) thread, where present.
PHASES = ("_commit_sql", "_checkpoint_sql", "_merge_sql")


def _time_phases() -> dict[str, list[float]]:
    """Wrap ``PHASES`` to add up their calls: count, wall s, thread CPU s, longest wall s."""
    found: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    lock = threading.Lock()

    def timed(name: str, function: Any) -> Any:
        def run(*args: Any) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return function(*args)
            finally:
                wall = time.perf_counter() - wall
                with lock:
                    phase = found[name]
                    phase[0] += 1
                    phase[1] += wall
                    phase[2] += time.thread_time() - cpu
                    phase[3] = max(phase[3], wall)

        return run

    for name in PHASES:
        if hasattr(store_module, name):
            setattr(store_module, name, timed(name, getattr(store_module, name)))
    return found


async def _reads(store: SqliteStore, rounds: int) -> dict[str, float]:
    probe = generate_session(SEED, 10_000_000)  # one of the sessions just written
    return {
        "search_top20_p50_ms": await _timed(
            rounds, lambda: search.search_nodes(store, COMMON_TERM, first=20)
        ),
        "search_session_p50_ms": await _timed(
            rounds,
            lambda: search.search_nodes(
                store, probe.probes.search_term, session_id=probe.session_id, first=20
            ),
        ),
    }


async def measure(source: Path, *, count: bool, tail_rows: int | None, rounds: int) -> Any:
    with tempfile.TemporaryDirectory(prefix="sqlite-ingest-") as scratch:
        directory = Path(scratch) / "db"
        shutil.copytree(source, directory)
        options = {} if tail_rows is None else {"tail_rows": tail_rows}
        # No merge while writes pause: the reads below are measured with the tail as the
        # ingest left it, then after merging it whole.
        store_module.IDLE_SECONDS = 3600
        phases = _time_phases()
        store = await SqliteStore.open(directory, fsync=True, **options)
        statements: Counter[str] = Counter()
        try:
            if count:
                store._writer.connection.set_trace_callback(
                    lambda sql: statements.update([" ".join(sql.split()[:3])])
                )
            cpu, written, started = time.process_time(), _written(), time.perf_counter()
            loop_cpu = time.thread_time()  # the event loop's thread
            rate = await _ingest(store)
            events = round(rate * (time.perf_counter() - started))
            cpu, written = time.process_time() - cpu, _written() - written
            loop_cpu = time.thread_time() - loop_cpu
            result: dict[str, Any] = {
                "events_per_s": rate,
                "events": events,
                "cpu_ms_per_event": 1000 * cpu / events,
                "loop_cpu_ms_per_event": 1000 * loop_cpu / events,
                "kb_written_per_event": written / 1000 / events,
                "writer": {name: [round(v, 3) for v in phase] for name, phase in phases.items()},
            }
            tail = getattr(store, "_tail", None)
            result["tail_rows_after"] = None if tail is None else tail.rows
            result["reads_with_tail"] = await _reads(store, rounds)
            await store.aclose()
            started = time.perf_counter()
            store = await SqliteStore.open(directory, fsync=True, **options)
            await search.search_nodes(store, COMMON_TERM, first=20)
            result["reopen_to_search_s"] = time.perf_counter() - started
            if hasattr(store, "merge_search_tail"):
                merge_cpu, merge_written = time.process_time(), _written()
                started = time.perf_counter()
                await store.merge_search_tail()
                result["merge_s"] = time.perf_counter() - started
                result["merge_cpu_s"] = time.process_time() - merge_cpu
                result["merge_mb_written"] = (_written() - merge_written) / 1e6
                result["reads_merged"] = await _reads(store, rounds)
        finally:
            store._writer.connection.set_trace_callback(None)
            await store.aclose()
    return result | {
        "ingest_cpu_s": cpu,
        "ingest_mb_written": written / 1e6,
        "statements": dict(statements.most_common(12)),
        "callers": INGEST_CALLERS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="a SQLite data directory (copied)")
    parser.add_argument("--count", action="store_true", help="count the writer's statements")
    parser.add_argument("--tail-rows", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    found = asyncio.run(
        measure(args.directory, count=args.count, tail_rows=args.tail_rows, rounds=args.rounds)
    )
    print(json.dumps(found))


if __name__ == "__main__":
    main()
