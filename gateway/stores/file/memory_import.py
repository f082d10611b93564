"""``import_findings``: bring an existing ``findings.jsonl`` into any ``MemoryStore``.

* Tolerant: a line that is not a valid record (bad JSON, not UTF-8, unknown type, empty required
  text, a ``NaN`` or infinity anywhere, …) is not imported and is reported with its line number
  and the reason; the other lines are imported. Blank lines are ignored. Nothing is dropped
  without a report.
* Idempotent: ids are deterministic (``resolvers.memory.records.record_id``), so a record already
  stored — or repeated in the file — is counted as already present and not written again;
  importing the same file twice adds nothing the second time.
* Durable and in order: the good records are appended in file order, in one write.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.stores.file.memory import bad_line_reason, decode_line
from resolvers.errors import InvalidInputError

if TYPE_CHECKING:
    from pathlib import Path

    from resolvers.memory import MemoryRecord, MemoryStore


@dataclass(frozen=True, slots=True)
class BadLine:
    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class ImportReport:
    imported: int
    already_present: int
    bad_lines: tuple[BadLine, ...]


async def import_findings(store: MemoryStore, path: Path) -> ImportReport:
    """Import ``path``; raises ``OSError`` (``FileNotFoundError``…) when it cannot be read."""
    data = await asyncio.to_thread(path.read_bytes)
    records, bad_lines = parse_findings(data)
    imported = await store.append_many(records)
    return ImportReport(imported, len(records) - imported, tuple(bad_lines))


def parse_findings(data: bytes) -> tuple[list[MemoryRecord], list[BadLine]]:
    """The valid records of a findings file, in order, and a report of every other line."""
    records: list[MemoryRecord] = []
    bad_lines: list[BadLine] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            records.append(decode_line(line, finite=True))
        except (ValueError, InvalidInputError) as exc:
            bad_lines.append(BadLine(number, bad_line_reason(exc)))
    return records, bad_lines
