"""record_memory, recall and lessons, on every backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from resolvers.errors import InvalidInputError
from resolvers.memory import (
    FindingRecord,
    MemoryRecordType,
    StrategyRecord,
    lessons,
    recall,
    record_memory,
)
from tests.memory.factories import days_ago, finding, ideation, pitfall, strategy

if TYPE_CHECKING:
    from resolvers.memory import MemoryStore, Recall


def texts(found: Recall, kind: MemoryRecordType) -> list[str]:
    group = next(group for group in found.groups if group.type is kind)
    return [record.finding for record in group.records if isinstance(record, FindingRecord)]


async def test_record_memory_stores_a_validated_record(memory_store: MemoryStore) -> None:
    stored = await record_memory(memory_store, finding(finding=" TP53 loss "))

    assert isinstance(stored, FindingRecord)
    assert stored.finding == "TP53 loss"
    assert stored.id
    assert list(await memory_store.all_records()) == [stored]


async def test_recording_an_identical_record_again_changes_nothing(
    memory_store: MemoryStore,
) -> None:
    first = await record_memory(memory_store, finding(session_id="s1"))

    second = await record_memory(memory_store, finding(session_id="s2"))

    assert second == first
    assert len(await memory_store.all_records()) == 1


async def test_an_invalid_record_is_not_stored(memory_store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError):
        await record_memory(memory_store, pitfall(fix=""))

    assert list(await memory_store.all_records()) == []


async def test_recall_matches_any_term_by_prefix(memory_store: MemoryStore) -> None:
    await record_memory(memory_store, finding(finding="apoptosis in liver"))
    await record_memory(memory_store, finding(finding="TP53 mutation"))
    await record_memory(memory_store, finding(finding="unrelated"))

    found = await recall(memory_store, "apopt tp53")

    assert sorted(texts(found, MemoryRecordType.FINDING)) == ["TP53 mutation", "apoptosis in liver"]


async def test_recall_searches_tags_project_and_per_type_fields(
    memory_store: MemoryStore,
) -> None:
    await record_memory(memory_store, strategy(tools=("DESeq2",)))
    await record_memory(memory_store, pitfall(project="glioma"))
    await record_memory(memory_store, ideation(tags=("crispr",)))

    found = await recall(memory_store, "deseq2 glioma crispr")

    assert [group.total for group in found.groups] == [0, 1, 1, 1]


async def test_recall_groups_by_type_in_a_fixed_order(memory_store: MemoryStore) -> None:
    await record_memory(memory_store, pitfall(issue="TP53 probe fails"))
    await record_memory(memory_store, finding(finding="TP53 loss"))

    found = await recall(memory_store, "tp53")

    assert [(group.type, group.total) for group in found.groups] == [
        (MemoryRecordType.FINDING, 1),
        (MemoryRecordType.IDEATION, 0),
        (MemoryRecordType.STRATEGY, 0),
        (MemoryRecordType.PITFALL, 1),
    ]


async def test_recall_only_requested_types(memory_store: MemoryStore) -> None:
    await record_memory(memory_store, pitfall(issue="TP53 probe fails"))
    await record_memory(memory_store, finding(finding="TP53 loss"))

    found = await recall(memory_store, "tp53", [MemoryRecordType.PITFALL])

    assert [(group.type, group.total) for group in found.groups] == [(MemoryRecordType.PITFALL, 1)]


async def test_recall_ranks_by_matched_terms_then_date(memory_store: MemoryStore) -> None:
    await record_memory(memory_store, finding(finding="tp53 old", date=days_ago(9)))
    await record_memory(memory_store, finding(finding="tp53 apoptosis", date=days_ago(5)))
    await record_memory(memory_store, finding(finding="tp53 new", date=days_ago(1)))

    found = await recall(memory_store, "tp53 apoptosis")

    assert texts(found, MemoryRecordType.FINDING) == ["tp53 apoptosis", "tp53 new", "tp53 old"]


async def test_recall_breaks_date_ties_by_the_last_stored_first(
    memory_store: MemoryStore,
) -> None:
    await record_memory(memory_store, finding(finding="tp53 first"))
    await record_memory(memory_store, finding(finding="tp53 second"))

    found = await recall(memory_store, "tp53")

    assert texts(found, MemoryRecordType.FINDING) == ["tp53 second", "tp53 first"]


async def test_recall_limits_each_group_but_counts_every_match(
    memory_store: MemoryStore,
) -> None:
    for day in range(3):
        await record_memory(memory_store, finding(finding=f"tp53 day{day}", date=days_ago(day)))

    found = await recall(memory_store, "tp53", limit_per_type=2)

    assert texts(found, MemoryRecordType.FINDING) == ["tp53 day0", "tp53 day1"]
    assert found.groups[0].total == 3


async def test_recall_finds_chinese_text_by_a_chinese_term(memory_store: MemoryStore) -> None:
    await record_memory(memory_store, finding(finding="TP53突变与肝癌预后相关"))
    await record_memory(memory_store, finding(finding="乳腺癌"))

    found = await recall(memory_store, "肝癌")

    assert texts(found, MemoryRecordType.FINDING) == ["TP53突变与肝癌预后相关"]


@pytest.mark.parametrize(
    ("topic", "types", "limit", "field"),
    [
        (" ,; ", None, 10, "topic"),
        ("tp53", [], 10, "types"),
        ("tp53", None, 0, "limitPerType"),
        ("tp53", None, 101, "limitPerType"),
    ],
)
async def test_recall_rejects_bad_arguments(
    memory_store: MemoryStore,
    topic: str,
    types: list[MemoryRecordType] | None,
    limit: int,
    field: str,
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await recall(memory_store, topic, types, limit)

    assert caught.value.field == field


async def test_lessons_are_the_newest_strategies_and_pitfalls(
    memory_store: MemoryStore,
) -> None:
    await record_memory(memory_store, strategy(date=days_ago(3), project="a"))
    await record_memory(memory_store, finding(date=days_ago(0)))
    await record_memory(memory_store, pitfall(date=days_ago(1), project="b"))
    await record_memory(memory_store, ideation(date=days_ago(0)))
    await record_memory(memory_store, pitfall(date=days_ago(2), project="c"))

    result = await lessons(memory_store)

    assert [(record.type.value, record.project) for record in result] == [
        ("pitfall", "b"),
        ("pitfall", "c"),
        ("strategy", "a"),
    ]


async def test_lessons_limit(memory_store: MemoryStore) -> None:
    await record_memory(memory_store, strategy(task="old", date=days_ago(2)))
    await record_memory(memory_store, strategy(task="new", date=days_ago(1)))

    result = await lessons(memory_store, limit=1)

    assert [record.task for record in result if isinstance(record, StrategyRecord)] == ["new"]


@pytest.mark.parametrize("limit", [0, 201])
async def test_lessons_rejects_a_limit_out_of_range(memory_store: MemoryStore, limit: int) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await lessons(memory_store, limit)

    assert caught.value.field == "limit"
