"""Builders of the smallest valid memory records, overridable field by field."""

from __future__ import annotations

import datetime as dt
from typing import Any

from resolvers.memory import (
    Feasibility,
    FindingRecord,
    IdeationRecord,
    MemoryRecord,
    PitfallRecord,
    StrategyRecord,
    prepare_record,
)

TODAY = dt.date(2025, 6, 1)


def days_ago(days: int) -> dt.date:
    return TODAY - dt.timedelta(days=days)


def finding(**fields: Any) -> FindingRecord:
    defaults = {"date": TODAY, "project": "onco", "finding": "TP53 loss", "significance": "relapse"}
    return FindingRecord(**{**defaults, **fields})


def ideation(**fields: Any) -> IdeationRecord:
    defaults = {
        "date": TODAY,
        "project": "onco",
        "direction": "CRISPR screen",
        "feasibility": Feasibility.HIGH,
        "reason": "cheap",
    }
    return IdeationRecord(**{**defaults, **fields})


def strategy(**fields: Any) -> StrategyRecord:
    defaults = {
        "date": TODAY,
        "project": "onco",
        "task": "DE analysis",
        "strategy": "use DESeq2",
        "outcome": "clean",
    }
    return StrategyRecord(**{**defaults, **fields})


def pitfall(**fields: Any) -> PitfallRecord:
    defaults = {
        "date": TODAY,
        "project": "onco",
        "context": "GEO download",
        "issue": "timeout",
        "fix": "retry",
    }
    return PitfallRecord(**{**defaults, **fields})


def prepared(*records: MemoryRecord) -> list[MemoryRecord]:
    return [prepare_record(record) for record in records]
