"""memory_stats and session_greeting, on every backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

from resolvers.memory import MemoryRecordType, memory_stats, record_memory, session_greeting
from tests.memory.factories import days_ago, finding, ideation, pitfall, strategy

if TYPE_CHECKING:
    from resolvers.memory import MemoryStore


async def test_stats_of_an_empty_store(memory_store: MemoryStore) -> None:
    stats = await memory_stats(memory_store)

    assert (stats.total, stats.top_projects, stats.top_tags, stats.size_bytes) == (0, (), (), 0)
    assert stats.by_type == tuple((kind, 0) for kind in MemoryRecordType)


async def test_stats_count_types_projects_and_tags(memory_store: MemoryStore) -> None:
    await record_memory(memory_store, finding(project="b", tags=("x", "y")))
    await record_memory(memory_store, pitfall(project="a", tags=("y",)))
    await record_memory(memory_store, pitfall(project="b", issue="other"))

    stats = await memory_stats(memory_store)

    assert stats.total == 3
    assert dict(stats.by_type) == {
        MemoryRecordType.FINDING: 1,
        MemoryRecordType.IDEATION: 0,
        MemoryRecordType.STRATEGY: 0,
        MemoryRecordType.PITFALL: 2,
    }
    assert stats.top_projects == (("b", 2), ("a", 1))
    assert stats.top_tags == (("y", 2), ("x", 1))
    assert stats.size_bytes > 0


async def test_greeting_of_an_empty_memory(memory_store: MemoryStore) -> None:
    text = await session_greeting(memory_store)

    assert text.startswith("ScienceMemory is empty")


async def test_greeting_counts_types_and_shows_the_latest_finding_of_the_latest_project(
    memory_store: MemoryStore,
) -> None:
    await record_memory(memory_store, finding(project="liver", finding="old", date=days_ago(9)))
    await record_memory(memory_store, finding(project="liver", finding="new", date=days_ago(5)))
    await record_memory(memory_store, finding(project="lung", finding="lung", date=days_ago(8)))
    await record_memory(memory_store, ideation(project="liver", date=days_ago(1)))
    await record_memory(memory_store, strategy(project="lung", date=days_ago(3)))

    text = await session_greeting(memory_store)

    assert text == (
        "ScienceMemory holds 5 records (3 findings, 1 ideation verdict, 1 strategy, "
        "0 pitfalls). The most recent project is liver (last entry 2025-05-31); "
        "its latest finding (2025-05-27): new — relapse."
    )


async def test_greeting_says_when_the_latest_project_has_no_finding(
    memory_store: MemoryStore,
) -> None:
    await record_memory(memory_store, finding(project="liver", date=days_ago(2)))
    await record_memory(memory_store, pitfall(project="lung", date=days_ago(1)))

    text = await session_greeting(memory_store)

    assert text.endswith(
        "The most recent project is lung (last entry 2025-05-31); it has no findings yet."
    )
