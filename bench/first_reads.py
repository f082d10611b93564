"""First reads of many sessions, two source trees side by side: what the explorer pays when it
opens sessions nobody drew since the gateway started.

    git archive <commit> | tar -x -C /tmp/before
    python -m bench.first_reads /tmp/emb/sqlite-100000 --before /tmp/before [--rounds 3]

The store directory is a SQLite engine's graph directory (``python -m bench.embedded --keep``
leaves ``sqlite-N``). Each round starts a gateway of each tree in turn (``--before`` first every
other round) on a fresh copy of it and asks every session of ``--sessions`` (the largest first)
for its ``subgraph`` once, then each again in the same order. The sessions outnumber what the
gateway keeps of read pages and of what it made from them, so the second pass is mostly first
reads too: what it measures is the cost of reading a session's rows and making its objects,
and what the cyclic collector spends on the objects kept meanwhile. Per side and round: p50 of
the first pass and of the second, mean, p95 and max of both, ``{ __typename }``'s p50, and the
server's CPU per request (``/proc/<pid>/stat``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.client import http_client, timed
from bench.reads import SUBGRAPH, TRIVIAL
from bench.server import running_gateway
from gateway.stores.sqlite.migrate import DATABASE_NAME

HERE = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")


def largest_sessions(store: Path, count: int) -> list[str]:
    database = sqlite3.connect(f"file:{store / DATABASE_NAME}?mode=ro", uri=True)
    try:
        rows = database.execute(
            "SELECT session FROM nodes GROUP BY session ORDER BY count(*) DESC, session LIMIT ?",
            (count,),
        ).fetchall()
    finally:
        database.close()
    return [session for (session,) in rows]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


async def one_side(code: Path, store: Path, sessions: list[str], tmp: Path) -> dict[str, float]:
    data = tmp / "data"
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(store, data / "graph", ignore=shutil.ignore_patterns("LOCK"))
    async with (
        running_gateway(data, {"FILE_ENGINE": "sqlite"}, code) as gateway,
        http_client() as client,
    ):
        url = gateway.graphql
        for _ in range(50):
            await timed(client, url, TRIVIAL)
        trivial = [(await timed(client, url, TRIVIAL))[0] for _ in range(200)]
        cpu = cpu_seconds(gateway.pid)
        passes: list[list[float]] = []
        for _ in range(2):
            times = []
            for session in sessions:
                seconds, _ = await timed(client, url, SUBGRAPH, {"s": session}, "Subgraph")
                times.append(seconds)
            passes.append(times)
        cpu = cpu_seconds(gateway.pid) - cpu
    both = sorted(passes[0] + passes[1])
    return {
        "typename": statistics.median(trivial) * 1000,
        "first": statistics.median(passes[0]) * 1000,
        "again": statistics.median(passes[1]) * 1000,
        "mean": statistics.mean(both) * 1000,
        "p95": both[int(len(both) * 0.95)] * 1000,
        "max": both[-1] * 1000,
        "cpu": cpu / len(both) * 1000,
    }


async def run(store: Path, before: Path, count: int, rounds: int) -> str:
    sessions = largest_sessions(store, count)
    sides = {"before": before, "now": HERE}
    lines = [
        f"{len(sessions)} sessions, each read twice; ms (server CPU: ms a request)",
        "",
        "| round | side | `{ __typename }` p50 | first p50 | again p50 | mean | p95 | max "
        "| server CPU | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory(prefix="bench-first-reads-") as tmp:
        for number in range(rounds):
            order = list(sides) if number % 2 == 0 else list(reversed(sides))
            for name in order:
                found = await one_side(sides[name], store, sessions, Path(tmp))
                load = os.getloadavg()[0]
                lines.append(
                    f"| {number + 1} | {name} | "
                    + " | ".join(f"{found[key]:.1f}" for key in found)
                    + f" | {load:.1f} |"
                )
                print(lines[-1], file=sys.stderr)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path, help="a SQLite engine's graph directory")
    parser.add_argument("--before", type=Path, required=True, help="the source tree to compare")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    started = time.perf_counter()
    print(asyncio.run(run(options.store, options.before, options.sessions, options.rounds)))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
