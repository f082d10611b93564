"""compact_memory: the retention rules of SPEC §9, on every backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from resolvers.memory import Feasibility, MemoryRecord, compact_memory
from tests.memory.factories import TODAY, days_ago, finding, ideation, pitfall, prepared, strategy

if TYPE_CHECKING:
    from collections.abc import Sequence

    from resolvers.memory import MemoryStore


def old_dead_ends(count: int) -> list[MemoryRecord]:
    return prepared(
        *(
            ideation(direction=f"d{i}", feasibility=Feasibility.DEAD_END, date=days_ago(200))
            for i in range(count)
        )
    )


async def stored_after_forced_compaction(
    store: MemoryStore, *records: MemoryRecord
) -> list[MemoryRecord]:
    await store.append_many(prepared(*records))
    await compact_memory(store, TODAY, force=True)
    return list(await store.all_records())


async def test_exactly_500_records_are_not_compacted(memory_store: MemoryStore) -> None:
    await memory_store.append_many(old_dead_ends(500))

    report = await compact_memory(memory_store, TODAY)

    assert (report.before, report.after, report.compacted, report.backup) == (500, 500, False, None)
    assert len(await memory_store.all_records()) == 500


async def test_501_records_are_compacted(memory_store: MemoryStore) -> None:
    await memory_store.append_many([*old_dead_ends(500), *prepared(finding(date=days_ago(200)))])

    report = await compact_memory(memory_store, TODAY)

    assert (report.before, report.after, report.compacted) == (501, 1, True)
    assert report.backup is not None
    assert [record.type.value for record in await memory_store.all_records()] == ["finding"]


@pytest.mark.parametrize(("age", "kept"), [(0, True), (90, True), (91, False)])
async def test_records_of_the_last_90_days_are_kept(
    memory_store: MemoryStore, age: int, kept: bool
) -> None:
    record = ideation(feasibility=Feasibility.LOW, date=days_ago(age))

    stored = await stored_after_forced_compaction(memory_store, record)

    assert bool(stored) is kept


@pytest.mark.parametrize(
    ("record", "kept"),
    [
        (finding(date=days_ago(91)), True),
        (ideation(feasibility=Feasibility.HIGH, date=days_ago(91)), True),
        (ideation(feasibility=Feasibility.MEDIUM, date=days_ago(91)), True),
        (ideation(feasibility=Feasibility.LOW, date=days_ago(91)), False),
        (ideation(feasibility=Feasibility.DEAD_END, date=days_ago(91)), False),
        (strategy(date=days_ago(91)), True),
        (pitfall(date=days_ago(91)), True),
    ],
)
async def test_older_records_are_kept_by_type(
    memory_store: MemoryStore, record: MemoryRecord, kept: bool
) -> None:
    stored = await stored_after_forced_compaction(memory_store, record)

    assert bool(stored) is kept


async def test_of_older_strategies_and_pitfalls_together_the_100_most_recent_are_kept(
    memory_store: MemoryStore,
) -> None:
    old = [
        (strategy if i % 2 else pitfall)(project=f"p{i}", date=days_ago(91 + i)) for i in range(102)
    ]
    recent = strategy(project="recent", date=days_ago(1))

    stored = await stored_after_forced_compaction(memory_store, recent, *old)

    projects = [record.project for record in stored]
    assert projects == ["recent", *(f"p{i}" for i in range(100))]


async def test_the_lesson_budget_breaks_date_ties_by_the_last_stored(
    memory_store: MemoryStore,
) -> None:
    old = [pitfall(project=f"p{i}", date=days_ago(100)) for i in range(101)]

    stored = await stored_after_forced_compaction(memory_store, *old)

    assert [record.project for record in stored] == [f"p{i}" for i in range(1, 101)]


async def test_compaction_keeps_the_stored_order(memory_store: MemoryStore) -> None:
    records = [finding(finding="b", date=days_ago(300)), finding(finding="a", date=days_ago(1))]

    stored = await stored_after_forced_compaction(
        memory_store,
        records[0],
        ideation(feasibility=Feasibility.LOW, date=days_ago(95)),
        records[1],
    )

    assert stored == prepared(*records)


async def test_nothing_to_drop_leaves_the_store_alone(memory_store: MemoryStore) -> None:
    await memory_store.append_many(prepared(finding(date=days_ago(300))))

    report = await compact_memory(memory_store, TODAY, force=True)

    assert (report.before, report.after, report.compacted, report.backup) == (1, 1, False, None)


async def test_a_record_appended_while_compaction_runs_is_never_lost(
    memory_store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another request (or replica) records a finding after compaction read the records and
    # before it replaced them: the replacement keeps it.
    await memory_store.append_many([*old_dead_ends(500), *prepared(finding(date=days_ago(200)))])
    snapshot = memory_store.all_records
    (late,) = prepared(finding(finding="recorded meanwhile"))

    async def then_an_append() -> Sequence[MemoryRecord]:
        records = await snapshot()
        await memory_store.append(late)
        return records

    monkeypatch.setattr(memory_store, "all_records", then_an_append)
    report = await compact_memory(memory_store, TODAY)
    monkeypatch.undo()

    assert (report.before, report.after, report.compacted) == (502, 2, True)
    assert [record.id for record in await memory_store.all_records()][-1] == late.id
