"""Recording and recalling memory: ``record_memory``, ``recall``, ``lessons``.

Recall rules (SPEC §9): a record matches when any topic term is a prefix of one of its tokens
(``resolvers.text`` tokenisation over ``record_text``: per-type text, tags and project, so a
Chinese term matches inside a Chinese run). Matches are grouped by type — one group per requested
type, in the order FINDING, IDEATION, STRATEGY, PITFALL, empty groups included — and ranked by
the number of distinct matched terms, then recency (date, then the last stored first). A group
shows at most ``limit_per_type`` records; its ``total`` counts every match.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from resolvers.errors import InvalidInputError
from resolvers.memory.records import (
    MemoryRecord,
    MemoryRecordType,
    PitfallRecord,
    StrategyRecord,
    newest_first,
    prepare_record,
    record_text,
)
from resolvers.text import query_terms, tokens

if TYPE_CHECKING:
    from collections.abc import Sequence

    from resolvers.memory.store import MemoryStore

DEFAULT_LIMIT_PER_TYPE = 10
MAX_LIMIT_PER_TYPE = 100
DEFAULT_LESSONS = 20
MAX_LESSONS = 200


@dataclass(frozen=True, slots=True)
class RecallGroup:
    type: MemoryRecordType
    records: tuple[MemoryRecord, ...]
    total: int


@dataclass(frozen=True, slots=True)
class Recall:
    groups: tuple[RecallGroup, ...]


async def record_memory(store: MemoryStore, record: MemoryRecord) -> MemoryRecord:
    """Validate and store a record; an identical record already stored is returned as is."""
    prepared = prepare_record(record)
    if await store.append(prepared):
        return prepared
    return await store.get(prepared.id) or prepared


async def recall(
    store: MemoryStore,
    topic: str,
    types: Sequence[MemoryRecordType] | None = None,
    limit_per_type: int = DEFAULT_LIMIT_PER_TYPE,
) -> Recall:
    terms = query_terms(topic)
    if not terms:
        raise InvalidInputError("topic", "must contain at least one word")
    check_limit("limitPerType", limit_per_type, MAX_LIMIT_PER_TYPE)
    wanted = _requested(types)
    ranked = _rank(terms, await store.all_records())
    return Recall(tuple(_group(kind, ranked, limit_per_type) for kind in wanted))


async def lessons(
    store: MemoryStore, limit: int = DEFAULT_LESSONS
) -> list[StrategyRecord | PitfallRecord]:
    """The most recent strategies and pitfalls, across projects."""
    check_limit("limit", limit, MAX_LESSONS)
    records = newest_first(await store.all_records())
    return [r for r in records if isinstance(r, StrategyRecord | PitfallRecord)][:limit]


def check_limit(argument: str, value: int, maximum: int) -> None:
    if not 1 <= value <= maximum:
        raise InvalidInputError(argument, f"must be between 1 and {maximum}, got {value}")


def _requested(types: Sequence[MemoryRecordType] | None) -> list[MemoryRecordType]:
    if types is None:
        return list(MemoryRecordType)
    if not types:
        raise InvalidInputError("types", "give at least one type, or leave it out for all")
    return [kind for kind in MemoryRecordType if kind in types]


def _rank(terms: list[str], records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    scored = [(record, _matched(terms, record)) for record in newest_first(records)]
    scored = [item for item in scored if item[1]]
    scored.sort(key=lambda item: item[1], reverse=True)  # stable: recency breaks ties
    return [record for record, _ in scored]


def _group(kind: MemoryRecordType, ranked: list[MemoryRecord], limit: int) -> RecallGroup:
    matches = [record for record in ranked if record.type is kind]
    return RecallGroup(kind, tuple(matches[:limit]), len(matches))


def _matched(terms: list[str], record: MemoryRecord) -> int:
    words = _tokens(record)
    return sum(1 for term in terms if any(word.startswith(term) for word in words))


@lru_cache(maxsize=8192)
def _tokens(record: MemoryRecord) -> frozenset[str]:
    return frozenset(tokens(record_text(record)))
