"""Record rules: validation, normalisation, deterministic ids and the stored form."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from resolvers.errors import InvalidInputError
from resolvers.memory import (
    Feasibility,
    IdeationRecord,
    MemoryRecord,
    prepare_record,
    record_from_dict,
    record_to_dict,
)
from tests.memory.factories import TODAY, finding, ideation, pitfall, strategy


@pytest.mark.parametrize(
    ("record", "field"),
    [
        (finding(finding="  "), "finding.finding"),
        (finding(significance=""), "finding.significance"),
        (finding(project=""), "finding.project"),
        (ideation(direction=""), "ideation.direction"),
        (ideation(reason="\n"), "ideation.reason"),
        (strategy(task=""), "strategy.task"),
        (strategy(strategy=""), "strategy.strategy"),
        (strategy(outcome=""), "strategy.outcome"),
        (pitfall(context=""), "pitfall.context"),
        (pitfall(issue=""), "pitfall.issue"),
        (pitfall(fix=" "), "pitfall.fix"),
    ],
)
def test_empty_required_text_is_invalid_input_naming_the_field(
    record: MemoryRecord, field: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        prepare_record(record)

    assert caught.value.field == field


def test_overlong_text_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError) as caught:
        prepare_record(pitfall(fix="x" * 20_001))

    assert caught.value.field == "pitfall.fix"


NOW = dt.datetime.now(dt.UTC).date()  # the real today: "tomorrow" is the machine's


@pytest.mark.parametrize(
    ("record", "field"),
    [
        (finding(date=dt.date(9999, 12, 31)), "date"),  # "the most recent" for ever
        (finding(date=NOW + dt.timedelta(days=2)), "date"),
        (finding(date=dt.date(1, 1, 1)), "date"),
        (finding(project="m\x01"), "finding.project"),
        (finding(project="two\nlines"), "finding.project"),
        (finding(tags=("ok", "\x1b[2J")), "finding.tags"),
        (pitfall(context="c\x00"), "pitfall.context"),
        (finding(sources=("a", "b\x9b")), "finding.sources"),
        (finding(session_id="s\x07"), "finding.sessionId"),
        (finding(tags=("a\tb",)), "finding.tags"),
    ],
)
def test_a_new_record_out_of_the_date_range_or_with_control_characters_is_refused(
    record: MemoryRecord, field: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        prepare_record(record)

    assert caught.value.field == field
    assert prepare_record(record, new=False).id  # as the store reads what it holds


def test_a_new_record_may_be_dated_up_to_tomorrow_and_hold_newlines_in_its_text() -> None:
    record = pitfall(date=NOW + dt.timedelta(days=1), fix="first\nthen\tsecond")

    assert prepare_record(record).fix == "first\nthen\tsecond"


def test_prepare_strips_text_drops_empty_optionals_and_repeated_tags() -> None:
    record = finding(finding=" TP53 ", gene=" ", tags=(" a", "a", "", "b"), session_id="")

    result = prepare_record(record)

    assert (result.finding, result.gene, result.tags, result.session_id) == (
        "TP53",
        None,
        ("a", "b"),
        None,
    )


def test_same_content_has_the_same_id_whatever_the_session() -> None:
    first = prepare_record(finding(session_id="s1", tags=("a", "b")))

    second = prepare_record(finding(session_id="s2", tags=("b", "a")))

    assert first.id == second.id


def test_different_content_has_a_different_id() -> None:
    first = prepare_record(finding())

    second = prepare_record(finding(significance="something else"))

    assert first.id != second.id


def test_an_existing_id_is_kept() -> None:
    result = prepare_record(finding(id="kept-id"))

    assert result.id == "kept-id"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("HIGH", Feasibility.HIGH),
        ("medium", Feasibility.MEDIUM),
        ("Low", Feasibility.LOW),
        ("dead-end", Feasibility.DEAD_END),
        ("dead end", Feasibility.DEAD_END),
        ("DEAD_END", Feasibility.DEAD_END),
    ],
)
def test_feasibility_accepts_the_spellings_found_in_files(text: str, expected: Feasibility) -> None:
    assert Feasibility.parse(text) is expected


def test_unknown_feasibility_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError) as caught:
        Feasibility.parse("maybe")

    assert caught.value.field == "ideation.feasibility"


@pytest.mark.parametrize(
    "record",
    [
        finding(gene="TP53", sources=("doi:1",), tags=("t",), session_id="s1"),
        ideation(feasibility=Feasibility.DEAD_END),
        strategy(tools=("DESeq2",)),
        pitfall(),
    ],
)
def test_stored_form_round_trips(record: MemoryRecord) -> None:
    stored = prepare_record(record)

    assert record_from_dict(record_to_dict(stored)) == stored


def test_stored_form_is_the_established_findings_format() -> None:
    record = prepare_record(ideation(feasibility=Feasibility.LOW, tags=("t",)))

    data = record_to_dict(record)

    assert data == {
        "type": "ideation",
        "date": TODAY.isoformat(),
        "tags": ["t"],
        "project": "onco",
        "direction": "CRISPR screen",
        "reason": "cheap",
        "feasibility": "LOW",
        "id": record.id,
    }


def test_stored_form_accepts_older_variations() -> None:
    data = {
        "type": "Ideation",
        "date": "2025-06-01T10:00:00",
        "tags": "a,b",
        "project": "onco",
        "direction": "d",
        "feasibility": "dead end",
        "reason": "r",
    }

    record = record_from_dict(data)

    assert record == IdeationRecord(
        date=TODAY,
        project="onco",
        tags=("a", "b"),
        direction="d",
        feasibility=Feasibility.DEAD_END,
        reason="r",
    )


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"type": "note", "date": "2025-06-01"}, "type"),
        ({"type": "pitfall", "date": "June"}, "date"),
        ({"type": "pitfall", "date": "2025-06-01", "fix": 3}, "pitfall.fix"),
        ({"type": "strategy", "date": "2025-06-01", "tools": [1]}, "strategy.tools"),
    ],
)
def test_stored_form_rejects_wrong_values(data: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        record_from_dict(data)

    assert caught.value.field == field


def test_records_are_frozen() -> None:
    record = finding()

    with pytest.raises(dataclasses.FrozenInstanceError):
        record.project = "other"  # type: ignore[misc]
