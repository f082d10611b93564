"""Preloading a store in-process through the real use cases (no HTTP, no GraphQL).

Much faster than sending the same events over HTTP, and it exercises the same write path below
the schema: ``resolvers.observe`` / ``resolvers.declare`` on a ``GraphStore``. Sessions are
applied by several concurrent tasks, so the file store's group commit batches their log appends.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from resolvers import declare
from resolvers.events import ClaimDeclared, ClaimsLinked, Event, EvidenceDeclared
from resolvers.observe import APPLY

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    from bench.generate import Session
    from resolvers.store import GraphStore

CONCURRENT_SESSIONS = 8
FREEZE_EVERY = 40 * CONCURRENT_SESSIONS  # sessions

_USE_CASES: dict[type[Event], Callable[[GraphStore, Any], Awaitable[object]]] = {
    **APPLY,
    EvidenceDeclared: declare.declare_evidence,
    ClaimDeclared: declare.declare_claim,
    ClaimsLinked: functools.partial(declare.link_claims_to_report, wait_seconds=0.0),
}


async def apply_event(store: GraphStore, event: Event) -> None:
    """Apply one event with the use case its mutation calls."""
    await _USE_CASES[type(event)](store, event)


async def apply_session(store: GraphStore, session: Session) -> int:
    for mutation in session.mutations:
        await apply_event(store, mutation.event)
    return len(session.mutations)


@dataclass(frozen=True, slots=True)
class PreloadReport:
    sessions: int
    events: int
    nodes: int
    seconds: float


async def preload(
    store: GraphStore, sessions: Iterator[Session], target_nodes: int
) -> PreloadReport:
    """Apply sessions until the store holds at least ``target_nodes`` nodes."""
    started = time.perf_counter()
    applied = events = 0
    try:
        while (nodes := await store.count_nodes()) < target_nodes:
            batch = [next(sessions) for _ in range(CONCURRENT_SESSIONS)]
            counts = await asyncio.gather(*(apply_session(store, s) for s in batch))
            applied += len(batch)
            events += sum(counts)
            if applied % FREEZE_EVERY == 0:
                # The loader's own hygiene: full collections over a growing graph would
                # otherwise make preloading a large store quadratic.
                gc.freeze()
    finally:
        gc.unfreeze()
    return PreloadReport(applied, events, nodes, time.perf_counter() - started)
