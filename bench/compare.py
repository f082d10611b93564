"""Reads of two source trees side by side: ``python -m bench.compare --before DIR``.

    git archive <commit> | tar -x -C /tmp/before           # the tree to compare with
    python -m bench.compare --before /tmp/before [--nodes 10k] [--rounds 60] [--only subgraph]

One store is preloaded in-process (as ``python -m bench`` does), copied twice, and a gateway is
started on each copy: one from ``--before``, one from this checkout. Every request of
``bench.reads`` is then sent to both, one after the other (each side first every other round),
round by round, so whatever else the machine does hits both alike; the table gives each side's
p50 / p99 (ms), the ratio of the p50s and each p50 over the same side's ``{ __typename }``.
``--only`` keeps the requests whose name contains one of the comma-separated words
(``{ __typename }`` is always kept). ``--store DIR`` copies a store directory preloaded before
(``python -m bench.embedded --keep`` leaves ``log-N`` and ``sqlite-N``) instead of preloading
one, and ``--engine sqlite`` serves it with the SQLite engine:

    python -m bench.compare --before /tmp/before --store /tmp/emb/sqlite-100000 --engine sqlite
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from bench.client import BenchError, Latency, http_client
from bench.generate import generate_session, generate_sessions
from bench.preload import preload
from bench.reads import QUERIES, ReadQuery, _once
from bench.run import PROBE_SESSIONS, parse_size
from bench.server import running_gateway
from gateway.stores.file.store import FileStore

if TYPE_CHECKING:
    from collections.abc import Sequence

    import httpx

    from bench.generate import Session

HERE = Path(__file__).resolve().parent.parent
TRIVIAL = QUERIES[0]
SLOW_ROUNDS = 20  # rounds of a request slower than this many ms at its warm-up
SLOW_MS = 500.0


async def compare(
    before: Path,
    nodes: int,
    rounds: int,
    queries: Sequence[ReadQuery],
    seed: int,
    *,
    store_dir: Path | None = None,
    engine: str = "log",
) -> str:
    probes = [generate_session(seed, index) for index in range(PROBE_SESSIONS)]
    with tempfile.TemporaryDirectory(
        prefix="sm-compare-", dir=None if store_dir is None else store_dir.parent
    ) as name:
        tmp = Path(name)
        if store_dir is None:
            store = await FileStore.open(tmp / "store" / "graph", fsync=False)
            try:
                nodes = (await preload(store, generate_sessions(seed), nodes)).nodes
            finally:
                await store.aclose()
        else:
            shutil.copytree(
                store_dir, tmp / "store" / "graph", ignore=shutil.ignore_patterns("LOCK")
            )
        for side in ("before", "after"):
            shutil.copytree(tmp / "store", tmp / side)
        load = [f"{os.getloadavg()[0]:.2f}"]
        settings = {"FILE_ENGINE": engine}
        async with contextlib.AsyncExitStack() as stack, http_client() as client:
            urls = [
                (
                    await stack.enter_async_context(running_gateway(tmp / side, settings, code))
                ).graphql
                for side, code in (("before", before), ("after", HERE))
            ]
            samples = await alternate(client, urls, queries, probes, rounds)
        load.append(f"{os.getloadavg()[0]:.2f}")
    stored = f"{nodes:,} stored nodes" if store_dir is None else f"a copy of {store_dir}"
    return _table(samples, queries, f"{stored} ({engine} engine)", load)


async def alternate(
    client: httpx.AsyncClient,
    urls: Sequence[str],
    queries: Sequence[ReadQuery],
    probes: Sequence[Session],
    rounds: int,
    *,
    give_up: bool = False,
) -> list[dict[str, list[float]]]:
    """Every query of ``queries`` sent to each of ``urls`` in turn, ``rounds`` times (a
    warm-up round over every probe first, in which every probe must answer): each URL's
    latencies by query name. Whatever else the machine does hits every side alike.

    With ``give_up``, a query a side fails in the warm-up (a ``QueryLimitExceeded``, say) is
    not sent to that side again and keeps no latency there; without it the failure raises."""
    samples: list[dict[str, list[float]]] = [{q.name: [] for q in queries} for _ in urls]
    slow: set[str] = set()
    failed: set[tuple[int, str]] = set()
    for session in probes:
        for query in queries:
            for side, url in enumerate(urls):
                if (side, query.name) in failed:
                    continue
                try:
                    elapsed, _ = await _once(client, url, query, session)
                except BenchError as exc:
                    if not give_up:
                        raise
                    print(f"{url}: {query.name} left out: {exc}", file=sys.stderr)
                    failed.add((side, query.name))
                    continue
                if elapsed * 1000 > SLOW_MS:
                    slow.add(query.name)
    sides = list(enumerate(urls))
    for index in range(rounds):
        session = probes[index % len(probes)]
        # Each side goes first every other round: the second request of a pair was
        # measured ~10% faster (warm client), which skewed one side's ratios.
        order = sides if index % 2 == 0 else sides[::-1]
        for query in queries:
            if query.name in slow and index >= SLOW_ROUNDS:
                continue
            for side, url in order:
                if (side, query.name) not in failed:
                    elapsed, _ = await _once(client, url, query, session)
                    samples[side][query.name].append(elapsed)
    return samples


def _table(
    samples: list[dict[str, list[float]]],
    queries: Sequence[ReadQuery],
    stored: str,
    load: list[str],
) -> str:
    before, after = ({name: Latency.of(s) for name, s in side.items()} for side in samples)
    lines = [
        f"{stored}; 1-minute load average {load[0]} before, {load[1]} after",
        "",
        "| request | before p50 / p99 ms | after p50 / p99 ms | after ÷ before (p50) "
        "| p50 ÷ `{ __typename }` before → after |",
        "|---|---|---|---|---|",
    ]
    for query in queries:
        old, new = before[query.name], after[query.name]
        old_ratio = old.p50 / before[TRIVIAL.name].p50
        new_ratio = new.p50 / after[TRIVIAL.name].p50
        lines.append(
            f"| {query.name} | {old.p50:.2f} / {old.p99:.2f} | {new.p50:.2f} / {new.p99:.2f} "
            f"| {new.p50 / old.p50:.2f} | {old_ratio:.1f} → {new_ratio:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.compare",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--before", type=Path, required=True, help="source tree to compare with")
    parser.add_argument("--nodes", default="10k", help="stored nodes (default 10k)")
    parser.add_argument("--rounds", type=int, default=60, help="timed requests per query")
    parser.add_argument("--only", default="", help="comma-separated words of request names")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--store", type=Path, default=None, help="a preloaded store to copy")
    parser.add_argument("--engine", choices=["log", "sqlite"], default="log")
    args = parser.parse_args(argv)
    words = [word for word in args.only.split(",") if word]
    queries = [q for q in QUERIES if q is TRIVIAL or not words or any(w in q.name for w in words)]
    table = asyncio.run(
        compare(
            args.before.resolve(),
            parse_size(args.nodes),
            args.rounds,
            queries,
            args.seed,
            store_dir=args.store,
            engine=args.engine,
        )
    )
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
