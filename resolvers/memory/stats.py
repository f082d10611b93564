"""Overviews of the memory: ``memory_stats`` and ``session_greeting``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from resolvers.memory.records import (
    FindingRecord,
    MemoryRecord,
    MemoryRecordType,
    headline,
    newest_first,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from resolvers.memory.store import MemoryStore

TOP = 10

_NOUNS: dict[MemoryRecordType, tuple[str, str]] = {
    MemoryRecordType.FINDING: ("finding", "findings"),
    MemoryRecordType.IDEATION: ("ideation verdict", "ideation verdicts"),
    MemoryRecordType.STRATEGY: ("strategy", "strategies"),
    MemoryRecordType.PITFALL: ("pitfall", "pitfalls"),
}


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """Totals by type (every type, fixed order), the ``TOP`` projects and tags by number of
    records (ties by name), and the storage size in bytes."""

    total: int
    by_type: tuple[tuple[MemoryRecordType, int], ...]
    top_projects: tuple[tuple[str, int], ...]
    top_tags: tuple[tuple[str, int], ...]
    size_bytes: int


async def memory_stats(store: MemoryStore) -> MemoryStats:
    records = await store.all_records()
    return MemoryStats(
        total=len(records),
        by_type=_by_type(records),
        top_projects=_top(record.project for record in records),
        top_tags=_top(tag for record in records for tag in record.tags),
        size_bytes=await store.size_bytes(),
    )


async def session_greeting(store: MemoryStore) -> str:
    """One paragraph: counts by type, the most recent project and its latest finding."""
    records = newest_first(await store.all_records())
    if not records:
        return (
            "ScienceMemory is empty: no findings, ideation verdicts, strategies or pitfalls "
            "have been recorded yet."
        )
    counts = ", ".join(_count(n, *_NOUNS[kind]) for kind, n in _by_type(records))
    latest = records[0]
    text = (
        f"ScienceMemory holds {_count(len(records), 'record', 'records')} ({counts}). "
        f"The most recent project is {latest.project} (last entry {latest.date.isoformat()})"
    )
    return f"{text}{_latest_finding(records, latest.project)}"


def _latest_finding(records: list[MemoryRecord], project: str) -> str:
    for record in records:
        if isinstance(record, FindingRecord) and record.project == project:
            summary = headline(record)
            stop = "" if summary.endswith((".", "。", "!", "?")) else "."
            return f"; its latest finding ({record.date.isoformat()}): {summary}{stop}"
    return "; it has no findings yet."


def _by_type(records: Sequence[MemoryRecord]) -> tuple[tuple[MemoryRecordType, int], ...]:
    counts = Counter(record.type for record in records)
    return tuple((kind, counts[kind]) for kind in MemoryRecordType)


def _top(values: Iterable[str]) -> tuple[tuple[str, int], ...]:
    counts = Counter(values)
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:TOP])


def _count(n: int, singular: str, plural: str) -> str:
    return f"{n} {singular if n == 1 else plural}"
