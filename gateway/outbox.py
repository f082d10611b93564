"""The outbox: observe events journalled while the selected Neo4j is unreachable.

``<dataDir>/outbox`` holds a checksummed record log (``gateway.stores.file.log``) of events,
each durable before the mutation answers ``queued: true``. ``drain`` applies them in order and
then marks them consumed with an empty snapshot of the generation it drained, so a restart
resumes after it. Applying an event is idempotent, so a drain interrupted half-way is simply
repeated.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import TYPE_CHECKING

from gateway.stores.file.log import (
    DirectoryLock,
    RecordLog,
    read_latest_snapshot,
    write_snapshot,
)
from resolvers.events import Event, event_from_dict, event_to_dict

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path


class Outbox:
    """A durable FIFO of events. Use ``await Outbox.open(directory)``."""

    def __init__(
        self, directory: Path, lock: DirectoryLock, log: RecordLog, base: int, pending: int
    ) -> None:
        self._directory = directory
        self._lock = lock
        self._log = log
        self._base = base
        self._pending = pending
        self._draining = asyncio.Lock()
        # Held while appending and while a drain counts and rotates: an append in flight at the
        # rotation would land in the drained generation uncounted and be dropped with it.
        self._appending = asyncio.Lock()

    @classmethod
    async def open(cls, directory: Path, *, fsync: bool = True) -> Outbox:
        lock = await asyncio.to_thread(DirectoryLock.acquire, directory)
        try:
            log, base, pending = await asyncio.to_thread(_load, directory, fsync)
        except BaseException:
            lock.release()
            raise
        return cls(directory, lock, log, base, pending)

    @property
    def pending(self) -> int:
        """Events journalled and not yet applied."""
        return self._pending

    async def append(self, event: Event) -> None:
        """Journal ``event``; returns once it is durable."""
        payload = json.dumps(event_to_dict(event), ensure_ascii=False, separators=(",", ":"))
        async with self._appending:
            await self._log.append(payload.encode())
            self._pending += 1

    async def drain(self, apply: Callable[[Event], Awaitable[object]]) -> int:
        """Apply every event journalled so far, in order; returns how many were applied.

        An exception from ``apply`` stops the drain; the events stay journalled."""
        async with self._draining:
            async with self._appending:
                count = self._pending
                if count == 0:
                    return 0
                generation = await self._log.rotate()
            payloads = await asyncio.to_thread(self._read, count)
            applied = 0
            try:
                for payload in payloads:
                    await apply(event_from_dict(json.loads(payload)))
                    applied += 1
                    self._pending -= 1
            except BaseException:
                self._pending += applied
                raise
            await asyncio.to_thread(write_snapshot, self._directory, generation, [])
            await asyncio.to_thread(self._log.drop_generations, generation)
            self._base = generation
            return applied

    def _read(self, count: int) -> list[bytes]:
        return list(itertools.islice(self._log.replay(after_generation=self._base), count))

    async def aclose(self) -> None:
        await self._log.aclose()
        self._lock.release()


def _load(directory: Path, fsync: bool) -> tuple[RecordLog, int, int]:
    log = RecordLog.open(directory, fsync=fsync)
    snapshot = read_latest_snapshot(directory)
    base = snapshot[0] if snapshot is not None else -1
    pending = sum(1 for _ in log.replay(after_generation=base))
    return log, base, pending
