"""Neo4jMemoryStore: the research memory as ``:MemoryRecord`` nodes beside the graph.

Each record is one node ``(:MemoryRecord {id, seq, type, date, project, data})`` where ``data``
is the record's JSON form (the findings.jsonl line) and ``seq`` its insertion order, drawn
from a ``(:MemoryCounter)`` node inside the writing transaction. ``replace_all`` relabels the
current records ``:MemoryRecordBackup`` (dropping an older backup) and writes the new ones in
the same transaction, so readers see the old or the new content, never a mix. It rides on the
graph store's driver, transactions and error mapping.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final, LiteralString

from resolvers.memory.records import record_from_dict, record_to_dict
from resolvers.memory.store import Replaced

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from gateway.stores.neo4j.store import Neo4jStore, _Neo4jTransaction
    from resolvers.memory.records import MemoryRecord

BACKUP_NAME = "neo4j:MemoryRecordBackup"

# The counter's constraint makes replicas that write the first record at the same moment
# share one counter (a MERGE without it may create one each).
SCHEMA: Final[tuple[tuple[LiteralString, LiteralString], ...]] = (
    (
        "memory_record_id",
        "CREATE CONSTRAINT memory_record_id IF NOT EXISTS "
        "FOR (r:MemoryRecord) REQUIRE r.id IS UNIQUE",
    ),
    (
        "memory_counter_name",
        "CREATE CONSTRAINT memory_counter_name IF NOT EXISTS "
        "FOR (c:MemoryCounter) REQUIRE c.name IS UNIQUE",
    ),
)
# Counters made twice before the constraint existed: the highest is kept, so no later record
# takes a number already given.
ONE_COUNTER: Final[LiteralString] = """
MATCH (c:MemoryCounter {name: 'memory'})
WITH c ORDER BY c.seq DESC
WITH collect(c) AS counters
UNWIND counters[1..] AS extra
DETACH DELETE extra
"""
LOCK_COUNTER: Final[LiteralString] = """
MERGE (c:MemoryCounter {name: 'memory'})
  ON CREATE SET c.seq = 0
SET c.locked_at = timestamp()
RETURN c.seq AS seq
"""
EXISTING: Final[LiteralString] = (
    "UNWIND $ids AS id MATCH (r:MemoryRecord {id: id}) RETURN r.id AS id"
)
CREATE: Final[LiteralString] = """
UNWIND $records AS row
CREATE (:MemoryRecord {id: row.id, seq: row.seq, type: row.type, date: row.date,
                       project: row.project, data: row.data})
"""
SET_COUNTER: Final[LiteralString] = "MATCH (c:MemoryCounter {name: 'memory'}) SET c.seq = $seq"
GET: Final[LiteralString] = "MATCH (r:MemoryRecord {id: $id}) RETURN r.data AS data"
ALL: Final[LiteralString] = "MATCH (r:MemoryRecord) RETURN r.data AS data ORDER BY r.seq"
SIZE: Final[LiteralString] = "MATCH (r:MemoryRecord) RETURN coalesce(sum(size(r.data)), 0) AS size"
DROP_BACKUP: Final[LiteralString] = "MATCH (b:MemoryRecordBackup) DETACH DELETE b"
TO_BACKUP: Final[LiteralString] = (
    "MATCH (r:MemoryRecord) REMOVE r:MemoryRecord SET r:MemoryRecordBackup"
)
DELETE_ALL: Final[LiteralString] = "MATCH (r:MemoryRecord) DETACH DELETE r"


def _row(record: MemoryRecord) -> dict[str, Any]:
    data = record_to_dict(record)
    return {
        "id": record.id,
        "type": data["type"],
        "date": data["date"],
        "project": data.get("project"),
        "data": json.dumps(data, ensure_ascii=False, separators=(",", ":")),
    }


async def _append(tx: _Neo4jTransaction, rows: list[dict[str, Any]], *, keep_existing: bool) -> int:
    """Create the rows not stored yet, numbered after the counter (locked first), in order."""
    (counter,) = await tx._fetch(LOCK_COUNTER)
    seq = int(counter["seq"])
    if keep_existing and rows:
        found = await tx._fetch(EXISTING, ids=[row["id"] for row in rows])
        stored = {record["id"] for record in found}
        rows = [row for row in rows if row["id"] not in stored]
    numbered = [{**row, "seq": seq + index + 1} for index, row in enumerate(rows)]
    if numbered:
        await tx._fetch(CREATE, records=numbered)
    await tx._fetch(SET_COUNTER, seq=seq + len(numbered))
    return len(numbered)


class Neo4jMemoryStore:
    """The ``MemoryStore`` port over a connected ``Neo4jStore``."""

    def __init__(self, graph: Neo4jStore) -> None:
        self._graph = graph

    @classmethod
    async def open(cls, graph: Neo4jStore) -> Neo4jMemoryStore:
        async with graph.transaction() as tx:
            await tx._fetch(ONE_COUNTER)
        await graph.ensure_schema(SCHEMA)
        return cls(graph)

    async def append(self, record: MemoryRecord) -> bool:
        return await self.append_many([record]) == 1

    async def append_many(self, records: Sequence[MemoryRecord]) -> int:
        unique = list({record.id: _row(record) for record in records}.values())
        if not unique:
            return 0
        async with self._graph.transaction() as tx:
            return await _append(tx, unique, keep_existing=True)

    async def get(self, record_id: str) -> MemoryRecord | None:
        rows = await self._graph._fetch(GET, id=record_id)
        return record_from_dict(json.loads(rows[0]["data"])) if rows else None

    async def all_records(self) -> Sequence[MemoryRecord]:
        rows = await self._graph._fetch(ALL)
        return [record_from_dict(json.loads(row["data"])) for row in rows]

    async def replace_all(
        self,
        keep: Callable[[Sequence[MemoryRecord]], Sequence[MemoryRecord]],
        *,
        backup: bool = True,
    ) -> Replaced:
        async with self._graph.transaction() as tx:
            await tx._fetch(LOCK_COUNTER)  # appends wait from here to the commit
            current = [record_from_dict(json.loads(row["data"])) for row in await tx._fetch(ALL)]
            rows = list({record.id: _row(record) for record in keep(current)}.values())
            await tx._fetch(DROP_BACKUP)
            await tx._fetch(TO_BACKUP if backup else DELETE_ALL)
            await _append(tx, rows, keep_existing=False)
        return Replaced(len(current), len(rows), BACKUP_NAME if backup else None)

    async def size_bytes(self) -> int:
        (row,) = await self._graph._fetch(SIZE)
        return int(row["size"])

    async def aclose(self) -> None:
        """The graph store owns the connection; nothing to release here."""
