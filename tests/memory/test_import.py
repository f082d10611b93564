"""import_findings: tolerant, reported, idempotent import of an existing findings.jsonl."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gateway.stores.file.memory_import import BadLine, import_findings
from resolvers.memory import Feasibility, IdeationRecord

if TYPE_CHECKING:
    from pathlib import Path

    from resolvers.memory import MemoryStore

LINES = [
    '{"type": "finding", "date": "2025-06-01", "tags": ["liver"], "project": "onco", '
    '"gene": "TP53", "finding": "肝癌", "significance": "预后", "sources": ["doi:1"]}',
    "{broken",
    "",
    '{"type": "ideation", "date": "2025-06-01", "tags": [], "project": "onco", '
    '"direction": "d", "feasibility": "dead-end", "reason": "r"}',
    '{"type": "pitfall", "date": "2025-06-01", "tags": [], "project": "onco", '
    '"context": "c", "issue": "", "fix": "f"}',
    '{"type": "memo", "date": "2025-06-01"}',
    "[1, 2]",
]


@pytest.fixture
def findings_file(tmp_path: Path) -> Path:
    path = tmp_path / "findings.jsonl"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


async def test_import_keeps_good_lines_and_reports_each_bad_one(
    memory_store: MemoryStore, findings_file: Path
) -> None:
    report = await import_findings(memory_store, findings_file)

    assert (report.imported, report.already_present) == (2, 0)
    assert [bad.line for bad in report.bad_lines] == [2, 5, 6, 7]
    assert report.bad_lines[1] == BadLine(5, "pitfall.issue: must not be empty")
    assert "invalid JSON" in report.bad_lines[0].reason
    assert "type" in report.bad_lines[2].reason
    assert [record.type.value for record in await memory_store.all_records()] == [
        "finding",
        "ideation",
    ]


async def test_import_reads_the_older_feasibility_spelling(
    memory_store: MemoryStore, findings_file: Path
) -> None:
    await import_findings(memory_store, findings_file)

    ideas = [r for r in await memory_store.all_records() if isinstance(r, IdeationRecord)]

    assert [idea.feasibility for idea in ideas] == [Feasibility.DEAD_END]


async def test_importing_twice_adds_nothing(memory_store: MemoryStore, findings_file: Path) -> None:
    await import_findings(memory_store, findings_file)

    report = await import_findings(memory_store, findings_file)

    assert (report.imported, report.already_present) == (0, 2)
    assert len(await memory_store.all_records()) == 2


async def test_a_line_repeated_in_the_file_is_imported_once(
    memory_store: MemoryStore, tmp_path: Path
) -> None:
    path = tmp_path / "twice.jsonl"
    path.write_text(f"{LINES[0]}\n{LINES[0]}", encoding="utf-8")

    report = await import_findings(memory_store, path)

    assert (report.imported, report.already_present, report.bad_lines) == (1, 1, ())


async def test_a_missing_file_raises(memory_store: MemoryStore, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await import_findings(memory_store, tmp_path / "absent.jsonl")


async def test_a_line_holding_a_non_finite_number_is_reported_with_the_field(
    memory_store: MemoryStore, tmp_path: Path
) -> None:
    path = tmp_path / "findings.jsonl"
    good = (
        '{"type": "pitfall", "date": "2025-06-01", "tags": [], "project": "onco", '
        '"context": "c", "issue": "i", "fix": "f"'
    )
    path.write_text(f'{good}, "score": NaN}}\n{good}, "ranks": [1, -Infinity]}}\n{good}}}\n')

    report = await import_findings(memory_store, path)

    assert report.imported == 1
    assert [(bad.line, bad.reason.split(":")[0]) for bad in report.bad_lines] == [
        (1, "score"),
        (2, "ranks[1]"),
    ]
    assert "finite" in report.bad_lines[0].reason
    assert len(await memory_store.all_records()) == 1
