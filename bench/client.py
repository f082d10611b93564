"""A small GraphQL-over-HTTP client that times each request and checks every answer."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

CONNECTIONS = 32


class BenchError(RuntimeError):
    """A request failed or answered something other than the expected result type."""


def http_client() -> httpx.AsyncClient:
    """One keep-alive client shared by every simulated caller."""
    limits = httpx.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS)
    return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(120.0))


async def execute(
    client: httpx.AsyncClient, url: str, document: str, variables: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """POST one document; the ``data`` of the answer, or ``BenchError``."""
    response = await client.post(url, json={"query": document, "variables": variables or {}})
    if response.status_code != 200:
        raise BenchError(f"HTTP {response.status_code}: {response.text[:300]}")
    body: dict[str, Any] = response.json()
    if body.get("errors"):
        raise BenchError(f"GraphQL errors: {body['errors']}")
    data: dict[str, Any] = body["data"]
    return data


async def timed(
    client: httpx.AsyncClient,
    url: str,
    document: str,
    variables: Mapping[str, Any] | None = None,
    expect: str | None = None,
) -> tuple[float, dict[str, Any]]:
    """Seconds one request took (send to parsed answer) and its only root field's value."""
    started = time.perf_counter()
    data = await execute(client, url, document, variables)
    elapsed = time.perf_counter() - started
    (value,) = data.values()
    if expect is not None and (not isinstance(value, dict) or value.get("__typename") != expect):
        raise BenchError(f"expected {expect}, got {value!r:.400}")
    return elapsed, value


@dataclass(frozen=True, slots=True)
class Latency:
    """Percentiles of a sample, in milliseconds."""

    count: int
    p50: float
    p99: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Latency:
        ordered = sorted(seconds)
        return cls(len(ordered), percentile(ordered, 50) * 1000, percentile(ordered, 99) * 1000)


def percentile(ordered: Sequence[float], percent: float) -> float:
    """Nearest-rank percentile of an already sorted sample."""
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return ordered[rank - 1]
