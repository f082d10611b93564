"""What one benchmark run measured, as plain dataclasses (written to ``results.json``)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from bench.check import Equivalence
    from bench.coldstart import ColdStart
    from bench.ingest import Throughput, WriteLatency
    from bench.preload import PreloadReport
    from bench.reads import ReadResult


@dataclass(frozen=True, slots=True)
class IngestResults:
    one_client: Throughput
    many_clients: Throughput
    latency: WriteLatency
    equivalence: Equivalence


@dataclass(frozen=True, slots=True)
class StoreResults:
    """A preloaded file store: how it was filled and how fast it opens."""

    target: int
    preload: PreloadReport
    cold_log: ColdStart
    snapshot_seconds: float
    cold_snapshot: ColdStart

    @property
    def nodes(self) -> int:
        return self.cold_snapshot.nodes


@dataclass(frozen=True, slots=True)
class SizeResults:
    store: StoreResults
    server_start_seconds: float
    server_rss_bytes: int
    reads: dict[str, ReadResult]


@dataclass(frozen=True, slots=True)
class Neo4jResults:
    """Gateway over HTTP vs. hand-written Cypher through the driver, on the same Neo4j."""

    nodes: int
    preload_seconds: float
    gateway: dict[str, ReadResult]
    cypher: dict[str, ReadResult]
    one_client: Throughput
    many_clients: Throughput


@dataclass(slots=True)
class Results:
    machine: dict[str, str]
    command: str
    ingest: IngestResults | None = None
    sizes: list[SizeResults] = field(default_factory=list)
    profiles: dict[str, str] = field(default_factory=dict)
    neo4j: Neo4jResults | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def write_json(self, path: Path) -> None:
        path.write_text(json.dumps(_plain(self), indent=2) + "\n", encoding="utf-8")


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value
