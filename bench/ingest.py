"""Write throughput and per-write latency through HTTP GraphQL.

A simulated caller is one control plane mirroring its sessions: it sends a session's mutations
one after the other (the order the generator produced, partly out of order), waiting for each
answer. ``clients`` callers run concurrently, each with its own sessions, over one keep-alive
connection pool.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.client import Latency, timed
from resolvers.events import ExecutionObserved

if TYPE_CHECKING:
    from collections.abc import Sequence

    import httpx

    from bench.generate import Mutation, Session

LATENCY_WINDOWS = ((50, 150), (950, 1050), (4950, 5050), (9950, 10050))


@dataclass(frozen=True, slots=True)
class Throughput:
    clients: int
    sessions: int
    mutations: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.mutations / self.seconds


async def send(client: httpx.AsyncClient, url: str, mutation: Mutation) -> float:
    field = mutation.field
    elapsed, _ = await timed(client, url, field.document, mutation.variables, field.success)
    return elapsed


async def ingest(
    client: httpx.AsyncClient, url: str, sessions: Sequence[Session], clients: int
) -> Throughput:
    """Send every session, ``clients`` callers at a time; mutations per second overall."""
    shares = [sessions[index::clients] for index in range(clients)]

    async def caller(own: Sequence[Session]) -> int:
        sent = 0
        for session in own:
            for mutation in session.mutations:
                await send(client, url, mutation)
                sent += 1
        return sent

    started = time.perf_counter()
    sent = await asyncio.gather(*(caller(own) for own in shares))
    return Throughput(clients, len(sessions), sum(sent), time.perf_counter() - started)


@dataclass(frozen=True, slots=True)
class WriteLatency:
    """``observeExecution`` latency by session step window."""

    steps: int
    mutations: int
    seconds: float
    windows: dict[str, Latency]

    def ratio(self) -> float:
        """p50 of the last window over the p50 of the first."""
        windows = list(self.windows.values())
        return windows[-1].p50 / windows[0].p50


def window_name(low: int, high: int) -> str:
    return f"{low:,}-{high:,}"


async def write_latency(client: httpx.AsyncClient, url: str, session: Session) -> WriteLatency:
    """Send one long session alone and time its executions by step."""
    samples: dict[tuple[int, int], list[float]] = {window: [] for window in LATENCY_WINDOWS}
    started = time.perf_counter()
    for mutation in session.mutations:
        elapsed = await send(client, url, mutation)
        if isinstance(mutation.event, ExecutionObserved):
            for low, high in LATENCY_WINDOWS:
                if low <= mutation.step <= high:
                    samples[(low, high)].append(elapsed)
    return WriteLatency(
        max(m.step for m in session.mutations),
        len(session.mutations),
        time.perf_counter() - started,
        {window_name(*w): Latency.of(values) for w, values in samples.items() if values},
    )
