"""``compact_memory``: the retention rules of SPEC §9.

* Compaction runs only when the store holds more than ``THRESHOLD`` (500) records, or when forced;
  exactly 500 records are left alone.
* Every record dated on or after ``today - 90 days`` is kept: a record exactly 90 days old is
  kept, one 91 days old is "older". Records dated in the future count as recent.
* Of the older records: every finding, every HIGH or MEDIUM ideation (LOW and DEAD_END go), and
  the ``KEEP_LESSONS`` (100) most recent strategies and pitfalls *taken together* (one budget for
  both types, by date and then by the order they were stored).
* Kept records keep their stored order. When nothing would be dropped the store is not rewritten
  (``compacted`` is false); otherwise the original is backed up first and replaced atomically
  (``MemoryStore.replace_all``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from resolvers.memory.records import (
    Feasibility,
    FindingRecord,
    IdeationRecord,
    MemoryRecord,
    PitfallRecord,
    StrategyRecord,
    newest_first,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from resolvers.memory.store import MemoryStore

THRESHOLD = 500
KEEP_DAYS = 90
KEEP_LESSONS = 100


@dataclass(frozen=True, slots=True)
class CompactionReport:
    before: int
    after: int
    compacted: bool
    backup: str | None = None


async def compact_memory(
    store: MemoryStore, today: dt.date, *, force: bool = False
) -> CompactionReport:
    records = await store.all_records()
    before = len(records)
    if before <= THRESHOLD and not force:
        return CompactionReport(before, before, compacted=False)
    if len(retained(records, today)) == before:
        return CompactionReport(before, before, compacted=False)
    # Decided again on the records as they are when the store replaces them: a record
    # appended since the snapshot above is kept or dropped by the rules, never lost unseen.
    replaced = await store.replace_all(lambda current: retained(current, today), backup=True)
    return CompactionReport(replaced.before, replaced.after, compacted=True, backup=replaced.backup)


def retained(records: Sequence[MemoryRecord], today: dt.date) -> list[MemoryRecord]:
    """The records compaction keeps, in their stored order (the threshold is not checked)."""
    cutoff = today - dt.timedelta(days=KEEP_DAYS)
    older = [record for record in records if record.date < cutoff]
    lessons = [r for r in newest_first(older) if isinstance(r, StrategyRecord | PitfallRecord)]
    kept_lessons = {record.id for record in lessons[:KEEP_LESSONS]}
    return [
        record
        for record in records
        if record.date >= cutoff or _kept_by_type(record) or record.id in kept_lessons
    ]


def _kept_by_type(record: MemoryRecord) -> bool:
    if isinstance(record, FindingRecord):
        return True
    if isinstance(record, IdeationRecord):
        return record.feasibility in (Feasibility.HIGH, Feasibility.MEDIUM)
    return False
