"""The evolving research memory (SPEC §9): findings, ideation verdicts, strategies, pitfalls.

* ``records`` — the record types, validation (``prepare_record``), ids and the stored form;
* ``store`` — the ``MemoryStore`` port the backends implement;
* ``recollection`` — ``record_memory``, ``recall``, ``lessons``;
* ``stats`` — ``memory_stats``, ``session_greeting``;
* ``compaction`` — ``compact_memory`` and its retention rules.
"""

from resolvers.memory.compaction import CompactionReport, compact_memory
from resolvers.memory.recollection import (
    DEFAULT_LESSONS,
    DEFAULT_LIMIT_PER_TYPE,
    MAX_LESSONS,
    MAX_LIMIT_PER_TYPE,
    Recall,
    RecallGroup,
    lessons,
    recall,
    record_memory,
)
from resolvers.memory.records import (
    Feasibility,
    FindingRecord,
    IdeationRecord,
    MemoryRecord,
    MemoryRecordBase,
    MemoryRecordType,
    PitfallRecord,
    StrategyRecord,
    headline,
    prepare_record,
    record_from_dict,
    record_to_dict,
)
from resolvers.memory.stats import MemoryStats, memory_stats, session_greeting
from resolvers.memory.store import MemoryStore, Replaced

__all__ = [
    "DEFAULT_LESSONS",
    "DEFAULT_LIMIT_PER_TYPE",
    "MAX_LESSONS",
    "MAX_LIMIT_PER_TYPE",
    "CompactionReport",
    "Feasibility",
    "FindingRecord",
    "IdeationRecord",
    "MemoryRecord",
    "MemoryRecordBase",
    "MemoryRecordType",
    "MemoryStats",
    "MemoryStore",
    "PitfallRecord",
    "Recall",
    "RecallGroup",
    "Replaced",
    "StrategyRecord",
    "compact_memory",
    "headline",
    "lessons",
    "memory_stats",
    "prepare_record",
    "recall",
    "record_from_dict",
    "record_memory",
    "record_to_dict",
    "session_greeting",
]
