"""Where a Neo4j write's time goes, in-process: the gateway's use case vs one raw statement.

    eval "$(tools/neo4j-test-server/run.sh start)"
    python -m bench.write_breakdown [--steps 60] [--sessions 3] [--profile FILE]

One caller, no HTTP: the observe events of fresh sessions go through the use cases on a
``Neo4jStore`` wrapped as the gateway wraps it (``PublishingStore``), alternating event by event
with the events of other sessions written as the raw column of ``bench.writes`` writes them (one
managed transaction of one ``RawPlan`` statement). Each event's wall time is split by
timestamps taken at the driver's boundary:

* ``before``: from the use case's call to ``execute_write`` (validation, the read plan, the
  session gate, opening the driver session);
* ``begin``: from ``execute_write`` to the transaction function (a pooled connection, BEGIN);
* ``prefetch`` / ``apply`` / ``statement``: each statement, its run and its records, as the
  caller sees it; ``server`` is the part the server reports (available + consumed after);
* ``rules``: the rest of the transaction function (the rules on the snapshot, the overlay,
  building the change rows, the change feed entries);
* ``commit``: from the transaction function's return to ``execute_write``'s;
* ``after``: the rest (closing the session, publishing).

It prints the median of each phase, the process CPU time per event (every phase's Python,
the driver's included) and the socket sends per event. ``--profile FILE`` also writes a
cProfile of the gateway's events only (``python -m pstats FILE``) and prints its top entries.
The benchmark deletes its own ``bench-…`` sessions before and after; nothing else is touched.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import functools
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, LiteralString

import neo4j
from neo4j._async_compat.network import AsyncBoltSocketBase

from bench.neo4j import Connection, clean_bench_sessions
from bench.writes import RawPlan, capture, sessions_for
from gateway.live.bus import EventBus
from gateway.live.publishing import PublishingStore
from gateway.stores.neo4j import Neo4jStore, plans
from gateway.stores.neo4j.store import _Neo4jTransaction
from resolvers.observe import APPLY

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from bench.writes import RawWrite

BASE = 800_000_000
WARM_EVENTS = 30
GATEWAY_PHASES = (
    "before",
    "begin",
    "prefetch",
    "prefetch server",
    "rules",
    "apply",
    "apply server",
    "commit",
    "after",
)
RAW_PHASES = ("begin", "statement", "server", "commit")


class Clock:
    """Phase timestamps of the event being written."""

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}
        self.spent: dict[str, float] = defaultdict(float)
        self.sends = 0
        self.result: neo4j.AsyncResult | None = None

    def reset(self) -> None:
        self.marks.clear()
        self.spent.clear()
        self.sends = 0
        self.result = None

    def mark(self, name: str) -> None:
        self.marks[name] = time.perf_counter()


def _statement_name(query: str) -> str:
    if query == plans.PREFETCH:
        return "prefetch"
    if query == plans.APPLY:
        return "apply"
    return "other"


@contextlib.contextmanager
def instrumented(clock: Clock) -> Iterator[None]:
    """Timestamps at ``execute_write``, the transaction function, each statement, and a count
    of socket sends (patched for the run, restored after)."""
    execute_write = neo4j.AsyncSession.execute_write
    fetch = _Neo4jTransaction._fetch
    tx_run = neo4j.AsyncManagedTransaction.run
    sendall = AsyncBoltSocketBase.sendall

    async def timed_execute_write(self: Any, work: Any, *args: Any, **kwargs: Any) -> Any:
        @functools.wraps(work)
        async def timed_work(tx: Any, *a: Any, **k: Any) -> Any:
            clock.mark("work")
            try:
                return await work(tx, *a, **k)
            finally:
                clock.mark("work_end")

        clock.mark("execute")
        try:
            return await execute_write(self, timed_work, *args, **kwargs)
        finally:
            clock.mark("execute_end")

    async def kept_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        clock.result = await tx_run(self, *args, **kwargs)
        return clock.result

    async def timed_fetch(self: Any, query: LiteralString, **params: Any) -> Any:
        started = time.perf_counter()
        try:
            return await fetch(self, query, **params)
        finally:
            name = _statement_name(query)
            clock.spent[name] += time.perf_counter() - started
            if clock.result is not None:  # its records are read: no round trip
                clock.spent[name + " server"] += _server_seconds(await clock.result.consume())
                clock.result = None

    async def counted_sendall(self: Any, data: Any) -> Any:
        clock.sends += 1
        return await sendall(self, data)  # type: ignore[no-untyped-call]

    neo4j.AsyncSession.execute_write = timed_execute_write  # type: ignore[method-assign,assignment]
    neo4j.AsyncManagedTransaction.run = kept_run  # type: ignore[method-assign]
    _Neo4jTransaction._fetch = timed_fetch  # type: ignore[method-assign]
    AsyncBoltSocketBase.sendall = counted_sendall  # type: ignore[method-assign]
    try:
        yield
    finally:
        neo4j.AsyncSession.execute_write = execute_write  # type: ignore[method-assign]
        neo4j.AsyncManagedTransaction.run = tx_run  # type: ignore[method-assign]
        _Neo4jTransaction._fetch = fetch  # type: ignore[method-assign]
        AsyncBoltSocketBase.sendall = sendall  # type: ignore[method-assign]


def _server_seconds(summary: neo4j.ResultSummary) -> float:
    return ((summary.result_available_after or 0) + (summary.result_consumed_after or 0)) / 1000


def gateway_phases(clock: Clock, started: float, ended: float) -> dict[str, float]:
    marks, spent = clock.marks, clock.spent
    statements = spent["prefetch"] + spent["apply"] + spent["other"]
    return {
        "before": marks["execute"] - started,
        "begin": marks["work"] - marks["execute"],
        "prefetch": spent["prefetch"],
        "prefetch server": spent["prefetch server"],
        "rules": marks["work_end"] - marks["work"] - statements,
        "apply": spent["apply"] + spent["other"],
        "apply server": spent["apply server"] + spent["other server"],
        "commit": marks["execute_end"] - marks["work_end"],
        "after": ended - marks["execute_end"],
    }


async def raw_event(
    session: neo4j.AsyncSession, clock: Clock, statement: LiteralString, params: dict[str, Any]
) -> None:
    async def work(tx: neo4j.AsyncManagedTransaction) -> None:
        started = time.perf_counter()
        summary = await (await tx.run(statement, params)).consume()
        clock.spent["statement"] += time.perf_counter() - started
        clock.spent["server"] += _server_seconds(summary)

    await session.execute_write(work)


def raw_phases(clock: Clock) -> dict[str, float]:
    marks = clock.marks
    return {
        "begin": marks["work"] - marks["execute"],
        "statement": clock.spent["statement"],
        "server": clock.spent["server"],
        "commit": marks["execute_end"] - marks["work_end"],
    }


async def run(seed: int, steps: int, count: int, profile: Path | None, tmp: Path) -> str:
    connection = Connection.from_env(os.environ)
    driver = neo4j.AsyncGraphDatabase.driver(
        connection.uri, auth=(connection.user, connection.password)
    )
    store = await Neo4jStore.open(connection.uri, connection.user, connection.password)
    published = PublishingStore(store, EventBus())
    gateway_sessions = sessions_for(seed, BASE, count, steps)
    raw_sessions = sessions_for(seed, BASE + count, count, steps)
    writes: list[list[RawWrite]] = await capture(raw_sessions, tmp / "capture")
    plan = RawPlan.covering(writes)
    statement = plan.statement
    events = [m.event for s in gateway_sessions for m in s.mutations]
    raws = [write for own in writes for write in own]
    clock = Clock()
    timings: dict[str, dict[str, list[float]]] = {"gateway": defaultdict(list), "raw": {}}
    timings["raw"] = defaultdict(list)
    profiler = cProfile.Profile() if profile is not None else None
    try:
        await clean_bench_sessions(driver)
        async with driver.session() as raw_session:
            with instrumented(clock):
                for index in range(max(len(events), len(raws))):
                    counted = index >= WARM_EVENTS
                    if index < len(events):
                        event = events[index]
                        clock.reset()
                        cpu, started = time.process_time(), time.perf_counter()
                        if profiler is not None and counted:
                            profiler.enable()
                        await APPLY[type(event)](published, event)
                        if profiler is not None and counted:
                            profiler.disable()
                        ended = time.perf_counter()
                        if counted:
                            _record(timings["gateway"], gateway_phases(clock, started, ended))
                            timings["gateway"]["total"].append(ended - started)
                            timings["gateway"]["cpu"].append(time.process_time() - cpu)
                            timings["gateway"]["sends"].append(clock.sends)
                    if index < len(raws):
                        clock.reset()
                        cpu, started = time.process_time(), time.perf_counter()
                        await raw_event(raw_session, clock, statement, plan.params(raws[index]))
                        ended = time.perf_counter()
                        if counted:
                            _record(timings["raw"], raw_phases(clock))
                            timings["raw"]["total"].append(ended - started)
                            timings["raw"]["cpu"].append(time.process_time() - cpu)
                            timings["raw"]["sends"].append(clock.sends)
    finally:
        await clean_bench_sessions(driver)
        await published.aclose()
        await driver.close()
    report = _report(timings, len(events), len(raws))
    if profiler is not None and profile is not None:
        profiler.dump_stats(str(profile))
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text).strip_dirs()
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(40)
        report += "\n\n" + text.getvalue()
    return report


def _record(into: dict[str, list[float]], phases: dict[str, float]) -> None:
    for name, seconds in phases.items():
        into[name].append(seconds)


def _report(timings: dict[str, dict[str, list[float]]], events: int, raws: int) -> str:
    def ms(values: Sequence[float]) -> str:
        return f"{statistics.median(values) * 1000:.2f}"

    def table(row: str, phases: Sequence[str], values: dict[str, list[float]]) -> list[str]:
        return [
            "| | " + " | ".join(phases) + " | total | CPU | sends |",
            "|---|" + "---|" * (len(phases) + 3),
            f"| {row} | "
            + " | ".join(ms(values[name]) for name in phases)
            + f" | {ms(values['total'])} | {ms(values['cpu'])} | "
            f"{statistics.median(values['sends']):.0f} |",
        ]

    gateway, raw = timings["gateway"], timings["raw"]
    lines = [
        f"p50 per event, ms ({len(gateway['total'])} gateway events of {events}, "
        f"{len(raw['total'])} raw of {raws}; the first {WARM_EVENTS} of each not counted)",
        "",
        *table("gateway use case", GATEWAY_PHASES, gateway),
        "",
        *table("raw statement", RAW_PHASES, raw),
    ]
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    lines += ["", f"load average after: {load}"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.write_breakdown", description=__doc__)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--steps", type=int, default=60, help="session steps (default 60)")
    parser.add_argument("--sessions", type=int, default=3, help="sessions per side (default 3)")
    parser.add_argument("--profile", type=Path, help="write a cProfile of the gateway's events")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-breakdown-") as tmp:
        report = asyncio.run(
            run(options.seed, options.steps, options.sessions, options.profile, Path(tmp))
        )
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
