"""Write throughput and per-write latency through HTTP GraphQL.

A simulated caller is one control plane mirroring its sessions: it sends a session's mutations
one after the other (the order the generator produced, partly out of order), waiting for each
answer. ``clients`` callers run concurrently, each with its own sessions, over one keep-alive
connection pool.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.client import Latency, timed
from resolvers.events import ExecutionObserved

if TYPE_CHECKING:
    from collections.abc import Sequence

    import httpx

    from bench.generate import Session
    from bench.mutations import Mutation

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
    """``observeExecution`` latency by session step window, plus a drift-free control: the
    first window of a fresh session measured while alternating with the last window."""

    steps: int
    mutations: int
    seconds: float
    windows: dict[str, Latency]
    control: Latency | None

    def ratio(self) -> float:
        """p50 of the last window over the p50 of the first."""
        windows = list(self.windows.values())
        return windows[-1].p50 / windows[0].p50

    def control_ratio(self) -> float | None:
        """p50 of the last window over the fresh session's first window, same moment."""
        if self.control is None:
            return None
        return list(self.windows.values())[-1].p50 / self.control.p50


def window_name(low: int, high: int) -> str:
    return f"{low:,}-{high:,}"


class _Timings:
    def __init__(self) -> None:
        self.values: dict[tuple[int, int], list[float]] = {w: [] for w in LATENCY_WINDOWS}

    def add(self, mutation: Mutation, elapsed: float) -> None:
        if isinstance(mutation.event, ExecutionObserved):
            for low, high in LATENCY_WINDOWS:
                if low <= mutation.step <= high:
                    self.values[(low, high)].append(elapsed)

    def latencies(self) -> dict[str, Latency]:
        return {window_name(*w): Latency.of(v) for w, v in self.values.items() if v}


async def write_latency(
    client: httpx.AsyncClient, url: str, session: Session, control: Session
) -> WriteLatency:
    """Send one long session alone and time its executions by step. From the last window on,
    its writes alternate with those of ``control``, a fresh session, so that the early-step
    cost is also measured under the same machine conditions as the late one."""
    long, fresh = _Timings(), _Timings()
    last = LATENCY_WINDOWS[-1][0]
    split = next((i for i, m in enumerate(session.mutations) if m.step >= last), None)
    head = session.mutations if split is None else session.mutations[:split]
    started = time.perf_counter()
    for mutation in head:
        long.add(mutation, await send(client, url, mutation))
    if split is not None:
        tail = session.mutations[split:]
        for ours, theirs in itertools.zip_longest(tail, control.mutations):
            if ours is not None:
                long.add(ours, await send(client, url, ours))
            if theirs is not None:
                fresh.add(theirs, await send(client, url, theirs))
    early = fresh.latencies().get(window_name(*LATENCY_WINDOWS[0]))
    return WriteLatency(
        max(m.step for m in session.mutations),
        len(session.mutations),
        time.perf_counter() - started,
        long.latencies(),
        early,
    )
