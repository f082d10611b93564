"""Failed writes on a full disk: ``python -m bench.disk_faults [--nodes N] [--failures K]``.

Fills a file store with ``N`` nodes, then makes ``K`` writes fail with ``ENOSPC`` (``os.write``
on the store's log raises, as on a full disk) and prints one JSON object: the process's resident
memory before and after the failures (target: flat — a failed write undoes its own change and
copies nothing), the mean and worst time a failed write takes to answer (target: independent of
``N`` — nothing is replayed), and whether the graph after the failures is the graph before.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import gc
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.server import rss_of
from gateway.stores.file.store import FileStore
from resolvers.errors import StoreWriteError
from resolvers.records import Label, NodeRecord, utc_now

BATCH = 1_000


def _node(session: str, number: int) -> NodeRecord:
    return NodeRecord(
        f"Artifact:a{number}#v1",
        Label.ARTIFACT,
        f"a{number}#v1",
        session,
        utc_now(),
        {"artifact_id": f"a{number}", "version": 1, "title": f"figure {number} of {session}"},
    )


async def _fill(store: FileStore, nodes: int) -> None:
    for start in range(0, nodes, BATCH):
        async with store.transaction("s1") as tx:
            for number in range(start, min(nodes, start + BATCH)):
                await tx.put_node(_node("s1", number))


def _refuse_writes(path: Path) -> None:
    real_write = os.write

    def write(fd: int, data: bytes | memoryview) -> int:
        if os.path.samestat(os.fstat(fd), path.stat()):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    os.write = write


async def measure(directory: Path, nodes: int, failures: int) -> dict[str, Any]:
    store = await FileStore.open(directory, fsync=False)
    try:
        await _fill(store, nodes)
        await store.search(["figure"])  # the search-term index is complete
        gc.freeze()  # as after a load: the collector does not walk the graph at every pass
        count_before = await store.count_nodes()
        gc.collect()
        rss_before = rss_of()
        real_write = os.write
        _refuse_writes(directory / f"log.{store._log.generation:08d}.jsonl")
        timings = []
        try:
            for number in range(failures):
                started = time.perf_counter()
                try:
                    async with store.transaction("s2") as tx:
                        await tx.put_node(_node("s2", nodes + number))
                except StoreWriteError:
                    pass
                timings.append(time.perf_counter() - started)
        finally:
            os.write = real_write
        gc.collect()
        rss_after = rss_of()
        unchanged = await store.count_nodes() == count_before
    finally:
        await store.aclose()
    return {
        "nodes": nodes,
        "failed_writes": failures,
        "rss_before_mib": round(rss_before / 2**20, 1),
        "rss_after_mib": round(rss_after / 2**20, 1),
        "rss_ratio": round(rss_after / rss_before, 3),
        "failed_write_ms_mean": round(1000 * sum(timings) / len(timings), 3),
        "failed_write_ms_max": round(1000 * max(timings), 3),
        "graph_unchanged": unchanged,
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.disk_faults")
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--failures", type=int, default=100)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # not one warning per refused write
    with tempfile.TemporaryDirectory(prefix="bench-disk-faults-") as directory:
        result = asyncio.run(measure(Path(directory), args.nodes, args.failures))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
