"""The memory store port: what a backend supplies to the memory use cases.

A backend stores prepared records (``prepare_record``: validated, with their deterministic id)
and remembers the order in which they were first stored; the use cases do all the ranking,
grouping and retention. Records are few (compaction keeps them in the low thousands), so the
port hands out whole snapshots rather than queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from resolvers.memory.records import MemoryRecord


@dataclass(frozen=True, slots=True)
class Replaced:
    """What ``MemoryStore.replace_all`` did: how many records before and after, the backup."""

    before: int
    after: int
    backup: str | None


class MemoryStore(Protocol):
    async def append(self, record: MemoryRecord) -> bool:
        """Store one prepared record durably before returning.

        Returns ``True`` when it was written, ``False`` (writing nothing) when a record with the
        same ``id`` is already stored. Raises ``StoreWriteError`` / ``StoreUnavailableError`` when
        the write could not be made durable; nothing is stored then.
        """
        ...

    async def append_many(self, records: Sequence[MemoryRecord]) -> int:
        """Store several prepared records durably, in order, in one write.

        Records whose ``id`` is already stored (or repeated earlier in ``records``) are skipped.
        Returns how many were written. All or nothing on failure, like ``append``.
        """
        ...

    async def get(self, record_id: str) -> MemoryRecord | None:
        """The stored record with this id, or ``None``."""
        ...

    async def all_records(self) -> Sequence[MemoryRecord]:
        """A snapshot of every stored record, in the order they were first stored.

        The order is the tie-breaker for recency among records of the same date, so a backend
        must keep it (the file store by line order, Neo4j by a stored sequence number).
        """
        ...

    async def replace_all(
        self,
        keep: Callable[[Sequence[MemoryRecord]], Sequence[MemoryRecord]],
        *,
        backup: bool = True,
    ) -> Replaced:
        """Replace the whole content by ``keep(current records)`` (kept in the given order),
        atomically: ``keep`` sees the records as they are once no append can come in between
        (an append meanwhile waits, and is kept or dropped by ``keep`` like any other).

        With ``backup``, a copy of the previous content is written first and its location
        (a path, or a backend-specific name) is returned; without it, ``backup`` is ``None``.
        Readers see either the old or the new content, never a mix.
        """
        ...

    async def size_bytes(self) -> int:
        """The storage size of the records (the file size; an estimate on a server backend)."""
        ...

    async def aclose(self) -> None:
        """Release the store's resources. A second call is a no-op."""
        ...
