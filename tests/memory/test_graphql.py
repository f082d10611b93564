"""The memory fields through real GraphQL documents (schema.execute, no HTTP)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
import strawberry

from gateway.schema.errors import EXCEPTION_HANDLERS
from gateway.schema.memory import MEMORY_TYPES, MemoryMutation, MemoryQuery
from resolvers.errors import MemoryGraphDisabledError
from resolvers.memory import record_memory
from tests.memory.factories import days_ago, finding, pitfall, strategy

if TYPE_CHECKING:
    from resolvers.memory import MemoryStore

SCHEMA = strawberry.Schema(
    query=MemoryQuery,
    mutation=MemoryMutation,
    types=MEMORY_TYPES,
    exception_handlers=EXCEPTION_HANDLERS,
)

RECORD = """
mutation Record($input: MemoryRecordInput!) {
  recordMemory(input: $input) {
    __typename
    ... on MemoryRecorded {
      record {
        __typename id type date tags project sessionId
        ... on Finding { finding significance gene sources }
        ... on Ideation { direction feasibility reason }
      }
    }
    ... on InvalidInput { code field message }
  }
}
"""

FINDING_INPUT = {
    "project": "onco",
    "finding": "TP53 loss",
    "significance": "relapse",
    "gene": "TP53",
    "date": "2025-06-01",
    "sessionId": "s1",
}


@dataclass
class Context:
    store: MemoryStore | None

    @property
    def memory(self) -> MemoryStore:
        if self.store is None:
            raise MemoryGraphDisabledError
        return self.store


async def execute(
    store: MemoryStore | None, document: str, variables: dict[str, Any] | None = None
) -> dict[str, Any]:
    result = await SCHEMA.execute(document, variable_values=variables, context_value=Context(store))
    assert result.errors is None, result.errors
    assert result.data is not None
    return result.data


async def test_record_memory_returns_the_stored_record(memory_store: MemoryStore) -> None:
    data = await execute(memory_store, RECORD, {"input": {"finding": FINDING_INPUT}})

    record = data["recordMemory"]["record"]
    assert data["recordMemory"]["__typename"] == "MemoryRecorded"
    assert record | {"id": None} == {
        "__typename": "Finding",
        "id": None,
        "type": "FINDING",
        "date": "2025-06-01",
        "tags": [],
        "project": "onco",
        "sessionId": "s1",
        "finding": "TP53 loss",
        "significance": "relapse",
        "gene": "TP53",
        "sources": [],
    }


async def test_record_memory_twice_stores_once(memory_store: MemoryStore) -> None:
    first = await execute(memory_store, RECORD, {"input": {"finding": FINDING_INPUT}})

    second = await execute(memory_store, RECORD, {"input": {"finding": FINDING_INPUT}})

    assert second == first
    assert len(await memory_store.all_records()) == 1


async def test_record_memory_defaults_the_date_to_today(memory_store: MemoryStore) -> None:
    ideation = {"project": "p", "direction": "d", "feasibility": "DEAD_END", "reason": "r"}

    data = await execute(memory_store, RECORD, {"input": {"ideation": ideation}})

    record = data["recordMemory"]["record"]
    assert (record["date"], record["feasibility"]) == (
        datetime.date.today().isoformat(),
        "DEAD_END",
    )


async def test_empty_required_text_is_invalid_input_as_data(memory_store: MemoryStore) -> None:
    invalid = {**FINDING_INPUT, "significance": "  "}

    data = await execute(memory_store, RECORD, {"input": {"finding": invalid}})

    assert data["recordMemory"] == {
        "__typename": "InvalidInput",
        "code": "INVALID_INPUT",
        "field": "finding.significance",
        "message": "finding.significance: must not be empty",
    }
    assert list(await memory_store.all_records()) == []


@pytest.mark.parametrize(
    "record_input",
    [
        {},
        {
            "finding": FINDING_INPUT,
            "pitfall": {"project": "p", "context": "c", "issue": "i", "fix": "f"},
        },
    ],
)
async def test_the_input_takes_exactly_one_kind_of_record(
    memory_store: MemoryStore, record_input: dict[str, Any]
) -> None:
    result = await SCHEMA.execute(
        RECORD, variable_values={"input": record_input}, context_value=Context(memory_store)
    )

    assert result.errors
    assert "exactly one key" in result.errors[0].message
    assert list(await memory_store.all_records()) == []


RECALL = """
query Recall($topic: String!, $types: [MemoryRecordType!], $limit: Int) {
  recall(topic: $topic, types: $types, limitPerType: $limit) {
    __typename
    ... on Recall {
      groups { type total records { __typename project } }
    }
    ... on InvalidInput { field }
  }
}
"""


async def test_recall_groups_matches_by_type(memory_store: MemoryStore) -> None:
    await record_memory(memory_store, finding(project="old", date=days_ago(2)))
    await record_memory(memory_store, finding(project="new", date=days_ago(1)))
    await record_memory(memory_store, pitfall(issue="TP53 probe"))

    data = await execute(
        memory_store, RECALL, {"topic": "tp53", "types": ["FINDING", "PITFALL"], "limit": 1}
    )

    assert data["recall"]["groups"] == [
        {"type": "FINDING", "total": 2, "records": [{"__typename": "Finding", "project": "new"}]},
        {"type": "PITFALL", "total": 1, "records": [{"__typename": "Pitfall", "project": "onco"}]},
    ]


async def test_recall_limit_out_of_range_is_invalid_input(memory_store: MemoryStore) -> None:
    data = await execute(memory_store, RECALL, {"topic": "tp53", "limit": 101})

    assert data["recall"] == {"__typename": "InvalidInput", "field": "limitPerType"}


LESSONS = """
query Lessons($limit: Int) {
  lessons(limit: $limit) {
    __typename
    ... on Lessons { records { __typename ... on Strategy { task tools } } }
    ... on InvalidInput { field }
  }
}
"""


async def test_lessons(memory_store: MemoryStore) -> None:
    await record_memory(memory_store, strategy(tools=("DESeq2",)))

    data = await execute(memory_store, LESSONS)

    assert data["lessons"]["records"] == [
        {"__typename": "Strategy", "task": "DE analysis", "tools": ["DESeq2"]}
    ]


async def test_lessons_limit_out_of_range_is_invalid_input(memory_store: MemoryStore) -> None:
    data = await execute(memory_store, LESSONS, {"limit": 201})

    assert data["lessons"] == {"__typename": "InvalidInput", "field": "limit"}


async def test_memory_stats(memory_store: MemoryStore) -> None:
    await record_memory(memory_store, finding(tags=("liver",)))
    document = """{ memoryStats { ... on MemoryStats {
        total byType { type count } topProjects { project count } topTags { tag count } sizeBytes
    } } }"""

    data = await execute(memory_store, document)

    stats = data["memoryStats"]
    assert stats["total"] == 1
    assert stats["byType"][0] == {"type": "FINDING", "count": 1}
    assert (stats["topProjects"], stats["topTags"]) == (
        [{"project": "onco", "count": 1}],
        [{"tag": "liver", "count": 1}],
    )
    assert stats["sizeBytes"] > 0


async def test_session_greeting(memory_store: MemoryStore) -> None:
    data = await execute(memory_store, "{ sessionGreeting { ... on SessionGreeting { text } } }")

    assert data["sessionGreeting"]["text"].startswith("ScienceMemory is empty")


async def test_compact_memory_below_the_threshold(memory_store: MemoryStore) -> None:
    await record_memory(memory_store, finding())
    document = """mutation { compactMemory { ... on MemoryCompaction {
        before after compacted backup
    } } }"""

    data = await execute(memory_store, document)

    assert data["compactMemory"] == {"before": 1, "after": 1, "compacted": False, "backup": None}


@pytest.mark.parametrize(
    "document",
    [
        '{ recall(topic: "x") { __typename } }',
        "{ lessons { __typename } }",
        "{ memoryStats { __typename } }",
        "{ sessionGreeting { __typename } }",
        "mutation { compactMemory { __typename } }",
        'mutation { recordMemory(input: {pitfall: {project: "p", context: "c", issue: "i", '
        'fix: "f"}}) { __typename } }',
    ],
)
async def test_every_field_answers_disabled_when_memory_is_off(document: str) -> None:
    data = await execute(None, document)

    assert next(iter(data.values())) == {"__typename": "MemoryGraphDisabled"}
