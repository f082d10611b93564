"""File-store cold start, measured in a fresh interpreter: ``python -m bench.coldstart DIR``.

Prints one JSON object: seconds to open the store (lock, load the newest snapshot, replay the
log after it: from then on every read but search is served), seconds until search is served too
(the search-term index is built in the background after the open), the nodes it holds, and the
resident memory the store holds once that index is complete (``VmRSS`` after minus before, with
the gateway's modules already imported, so only the graph and its indexes count).
"""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.server import rss_of
from gateway.stores.file.store import FileStore

TIMEOUT = 1200
REPOSITORY = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class ColdStart:
    seconds: float
    search_ready_seconds: float
    nodes: int
    rss_delta_bytes: int

    @property
    def bytes_per_node(self) -> float:
        return self.rss_delta_bytes / self.nodes


def measure_cold_start(directory: Path) -> ColdStart:
    """Open the (closed) store at ``directory`` in a child interpreter."""
    completed = subprocess.run(
        [sys.executable, "-m", "bench.coldstart", str(directory)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
        cwd=REPOSITORY,
    )
    return ColdStart(**json.loads(completed.stdout))


async def _open(directory: Path) -> ColdStart:
    gc.collect()
    before = rss_of()
    started = time.perf_counter()
    store = await FileStore.open(directory, fsync=False)
    seconds = time.perf_counter() - started
    await store.search(["0"])  # waits for the search-term index
    search_ready_seconds = time.perf_counter() - started
    gc.collect()
    after = rss_of()
    nodes = await store.count_nodes()
    await store.aclose()
    return ColdStart(seconds, search_ready_seconds, nodes, after - before)


def main() -> None:
    result = asyncio.run(_open(Path(sys.argv[1])))
    print(
        json.dumps(
            {
                "seconds": result.seconds,
                "search_ready_seconds": result.search_ready_seconds,
                "nodes": result.nodes,
                "rss_delta_bytes": result.rss_delta_bytes,
            }
        )
    )


if __name__ == "__main__":
    main()
