"""The memory commands of the CLI, through argparse, on the file store."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

import pytest

from gateway.cli.memory import register
from gateway.settings import Settings
from gateway.stores.file.memory import FILE_NAME

if TYPE_CHECKING:
    from pathlib import Path


def record(kind: str, project: str, date: str = "2025-06-01", **fields: object) -> str:
    defaults: dict[str, dict[str, object]] = {
        "finding": {"finding": "TP53 loss", "significance": "relapse"},
        "ideation": {"direction": "screen", "feasibility": "HIGH", "reason": "cheap"},
        "strategy": {"task": "DE", "strategy": "DESeq2", "outcome": "clean"},
        "pitfall": {"context": "GEO", "issue": "timeout", "fix": "retry"},
    }
    data = {"type": kind, "date": date, "tags": [], "project": project}
    return json.dumps({**data, **defaults[kind], **fields}, ensure_ascii=False)


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("COLUMNS", "100")
    return Settings(data_dir=tmp_path / "data")


def seed(settings: Settings, *lines: str) -> None:
    directory = settings.data_dir / "memory"
    directory.mkdir(parents=True)
    (directory / FILE_NAME).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def main(settings: Settings, *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="science-memory")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.handler(args, settings)
    return code


def test_recall_prints_matches_grouped_by_type(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(
        settings,
        record("finding", "liver", finding="TP53突变"),
        record("pitfall", "lung", issue="TP53 probe"),
        record("strategy", "lung"),
    )

    code = main(settings, "recall", "tp53")

    assert code == 0
    assert capsys.readouterr().out.splitlines() == [
        "FINDINGS (1)",
        "  DATE        PROJECT  RECORD",
        "  2025-06-01  liver    TP53突变 — relapse",
        "",
        "PITFALLS (1)",
        "  DATE        PROJECT  RECORD",
        "  2025-06-01  lung     GEO: TP53 probe → fix: retry",
    ]


def test_recall_shows_a_stored_control_character_escaped(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    # Stored before control characters were refused: printed raw, ESC [2J clears the screen.
    seed(settings, record("finding", "imp\u001b[2J", finding="TP53\nloss\u0000"))

    assert main(settings, "recall", "tp53") == 0

    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "\x00" not in out
    assert "  2025-06-01  imp\\x1b[2J  TP53 loss\\x00 — relapse" in out.splitlines()


def test_recall_by_type_and_limit_says_how_many_are_shown(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(
        settings,
        record("finding", "a", finding="tp53 one"),
        record("finding", "b", finding="tp53 two"),
        record("pitfall", "c", issue="tp53"),
    )

    code = main(settings, "recall", "tp53", "--type", "FINDING", "--limit", "1")

    assert code == 0
    assert capsys.readouterr().out.splitlines()[0] == "FINDINGS (1 of 2)"


def test_recall_without_matches(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(settings, "recall", "nothing", "here")

    assert code == 0
    assert capsys.readouterr().out == 'Nothing recalled for "nothing here".\n'


def test_recall_with_a_bad_limit_exits_2(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(settings, "recall", "tp53", "--limit", "0")

    assert code == 2
    assert "limitPerType" in capsys.readouterr().err


def test_lessons_prints_a_table(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    seed(settings, record("strategy", "a", "2025-05-01"), record("pitfall", "项目", "2025-05-02"))

    code = main(settings, "lessons", "--limit", "5")

    assert code == 0
    assert capsys.readouterr().out.splitlines() == [
        "TYPE      DATE        PROJECT  LESSON",
        "pitfall   2025-05-02  项目     GEO: timeout → fix: retry",
        "strategy  2025-05-01  a        DE: DESeq2 → clean",
    ]


def test_memory_stats(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    seed(settings, record("finding", "a", tags=["x"]), record("pitfall", "a"))

    code = main(settings, "memory-stats")

    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("2 records, ")
    assert "finding   1" in out
    assert "TOP PROJECTS  RECORDS\na             2" in out
    assert "TOP TAGS  RECORDS\nx         1" in out


def test_compact_memory_below_the_threshold(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(settings, record("ideation", "a", "2020-01-01", feasibility="LOW"))

    code = main(settings, "compact-memory")

    assert code == 0
    assert capsys.readouterr().out.startswith("Nothing to compact: 1 record ")


def test_compact_memory_forced(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    seed(settings, record("ideation", "a", "2020-01-01", feasibility="LOW"), record("finding", "a"))

    code = main(settings, "compact-memory", "--force")

    out = capsys.readouterr().out
    assert code == 0
    assert "Compacted: 2 → 1 records (1 dropped)." in out
    assert "findings.jsonl.bak" in out


def test_import_findings_reports_bad_lines_and_exits_0(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "old.jsonl"
    source.write_text(f"{record('finding', 'a')}\nnot json\n", encoding="utf-8")

    code = main(settings, "import-findings", str(source))

    out = capsys.readouterr().out
    assert code == 0
    assert f"Imported 1 record from {source} (0 already present)." in out
    assert "1 bad line not imported:\n  line 2: invalid JSON" in out


def test_import_findings_twice_imports_nothing_new(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "old.jsonl"
    source.write_text(f"{record('finding', 'a')}\n", encoding="utf-8")
    main(settings, "import-findings", str(source))

    main(settings, "import-findings", str(source))

    assert capsys.readouterr().out.splitlines()[-1].startswith("Imported 0 records")


def test_import_findings_of_a_missing_file_exits_2(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(settings, "import-findings", str(tmp_path / "absent.jsonl"))

    assert code == 2
    assert "no such file" in capsys.readouterr().err


def test_a_corrupt_memory_file_exits_1_with_the_line(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(settings, "not json", record("finding", "a"))

    code = main(settings, "memory-stats")

    assert code == 1
    assert "line 1" in capsys.readouterr().err
