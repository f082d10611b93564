"""The memory commands of ``science-memory``: recall, lessons, memory-stats, compact-memory,
import-findings.

Each works on the file store in ``<dataDir>/memory``. Reads open it read-only (no lock), so they
also work beside a running gateway; ``compact-memory`` and ``import-findings`` take the writer
lock and say so when the gateway holds it. Exit codes: 0 done (an import with bad lines too: they
are listed), 1 the store cannot be used, 2 bad arguments or an unreadable import file.
"""

from __future__ import annotations

import asyncio
import datetime
import re
import shutil
import sys
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.stores.file.memory import FileMemoryStore, MemoryFileError
from gateway.stores.file.memory_import import ImportReport, import_findings
from resolvers import memory
from resolvers.errors import DomainError, InvalidInputError
from resolvers.memory.compaction import THRESHOLD

if TYPE_CHECKING:
    import argparse
    from collections.abc import Awaitable, Callable, Sequence

    from gateway.settings import Settings

_TYPE_CHOICES = [kind.value for kind in memory.MemoryRecordType]
_PLURALS = {
    memory.MemoryRecordType.FINDING: "FINDINGS",
    memory.MemoryRecordType.IDEATION: "IDEATION",
    memory.MemoryRecordType.STRATEGY: "STRATEGIES",
    memory.MemoryRecordType.PITFALL: "PITFALLS",
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the memory subcommands; each sets ``handler(args, settings) -> exit code``."""
    recall = subparsers.add_parser("recall", help="recall memory records about a topic")
    recall.add_argument("topic", nargs="+", help="words to look for (any of them)")
    recall.add_argument(
        "--type", action="append", type=str.lower, choices=_TYPE_CHOICES, dest="types"
    )
    recall.add_argument("--limit", type=int, default=memory.DEFAULT_LIMIT_PER_TYPE)
    recall.set_defaults(handler=recall_command)

    lessons = subparsers.add_parser("lessons", help="the most recent strategies and pitfalls")
    lessons.add_argument("--limit", type=int, default=memory.DEFAULT_LESSONS)
    lessons.set_defaults(handler=lessons_command)

    stats = subparsers.add_parser("memory-stats", help="what the research memory holds")
    stats.set_defaults(handler=memory_stats_command)

    compact = subparsers.add_parser("compact-memory", help="apply the memory retention rules")
    compact.add_argument("--force", action="store_true", help="even at 500 records or fewer")
    compact.set_defaults(handler=compact_memory_command)

    imports = subparsers.add_parser("import-findings", help="import an existing findings.jsonl")
    imports.add_argument("file", type=_path)
    imports.set_defaults(handler=import_findings_command)


# --- handlers -----------------------------------------------------------------------------


def recall_command(args: argparse.Namespace, settings: Settings) -> int:
    topic = " ".join(args.topic)
    kinds = [memory.MemoryRecordType(value) for value in args.types] if args.types else None

    async def run(store: memory.MemoryStore) -> None:
        _print_recall(topic, await memory.recall(store, topic, kinds, args.limit))

    return _run(settings, run, read_only=True)


def lessons_command(args: argparse.Namespace, settings: Settings) -> int:
    async def run(store: memory.MemoryStore) -> None:
        records = await memory.lessons(store, args.limit)
        if not records:
            print("No strategies or pitfalls recorded yet.")
            return
        rows = [(r.type.value, r.date.isoformat(), r.project, memory.headline(r)) for r in records]
        _print_lines(_table(("TYPE", "DATE", "PROJECT", "LESSON"), rows))

    return _run(settings, run, read_only=True)


def memory_stats_command(args: argparse.Namespace, settings: Settings) -> int:
    async def run(store: memory.MemoryStore) -> None:
        _print_stats(await memory.memory_stats(store), _memory_dir(settings))

    return _run(settings, run, read_only=True)


def compact_memory_command(args: argparse.Namespace, settings: Settings) -> int:
    async def run(store: memory.MemoryStore) -> None:
        today = datetime.date.today()
        _print_compaction(await memory.compact_memory(store, today, force=args.force), args.force)

    return _run(settings, run, read_only=False)


def import_findings_command(args: argparse.Namespace, settings: Settings) -> int:
    path: Path = args.file
    if not path.is_file():
        print(f"error: {path}: no such file", file=sys.stderr)
        return 2

    async def run(store: memory.MemoryStore) -> None:
        _print_import(path, await import_findings(store, path))

    return _run(settings, run, read_only=False)


def _run(
    settings: Settings,
    action: Callable[[memory.MemoryStore], Awaitable[None]],
    *,
    read_only: bool,
) -> int:
    async def main() -> None:
        directory = _memory_dir(settings)
        store = await FileMemoryStore.open(directory, fsync=settings.fsync, read_only=read_only)
        try:
            await action(store)
        finally:
            await store.aclose()

    try:
        asyncio.run(main())
    except InvalidInputError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (MemoryFileError, DomainError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _memory_dir(settings: Settings) -> Path:
    return settings.data_dir / "memory"


def _path(value: str) -> Path:
    return Path(value).expanduser()


# --- output -------------------------------------------------------------------------------


def _print_recall(topic: str, found: memory.Recall) -> None:
    groups = [group for group in found.groups if group.total]
    if not groups:
        print(f'Nothing recalled for "{topic}".')
        return
    for index, group in enumerate(groups):
        shown = len(group.records)
        count = f"{shown} of {group.total}" if shown < group.total else str(group.total)
        print(("\n" if index else "") + f"{_PLURALS[group.type]} ({count})")
        rows = [(r.date.isoformat(), r.project, memory.headline(r)) for r in group.records]
        _print_lines(_table(("DATE", "PROJECT", "RECORD"), rows), indent="  ")


def _print_stats(stats: memory.MemoryStats, directory: Path) -> None:
    print(f"{_n(stats.total, 'record')}, {_size(stats.size_bytes)} in {directory}")
    print()
    _print_lines(_table(("TYPE", "RECORDS"), [(k.value, str(n)) for k, n in stats.by_type]))
    if stats.top_projects:
        print()
        rows = [(project, str(n)) for project, n in stats.top_projects]
        _print_lines(_table(("TOP PROJECTS", "RECORDS"), rows))
    if stats.top_tags:
        print()
        _print_lines(_table(("TOP TAGS", "RECORDS"), [(tag, str(n)) for tag, n in stats.top_tags]))


def _print_compaction(report: memory.CompactionReport, forced: bool) -> None:
    if report.compacted:
        dropped = report.before - report.after
        print(f"Compacted: {report.before} → {report.after} records ({dropped} dropped).")
        print(f"Backup of the original: {report.backup}")
    elif report.before <= THRESHOLD and not forced:
        print(
            f"Nothing to compact: {_n(report.before, 'record')} "
            f"(compaction starts above {THRESHOLD}; --force runs it anyway)."
        )
    else:
        print(f"Nothing to compact: all {report.before} records are kept by the retention rules.")


def _print_import(path: Path, report: ImportReport) -> None:
    print(
        f"Imported {_n(report.imported, 'record')} from {path} "
        f"({report.already_present} already present)."
    )
    if report.bad_lines:
        print(f"{_n(len(report.bad_lines), 'bad line')} not imported:")
        for bad in report.bad_lines:
            print(f"  line {bad.line}: {bad.reason}")


def _print_lines(lines: Sequence[str], indent: str = "") -> None:
    for line in lines:
        print(f"{indent}{line}".rstrip())


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Aligned columns (CJK counted as two cells); the last column is cut to the terminal.
    A control character of a cell is shown escaped (``\x1b``), a line break or tab as a
    space: a record stored before they were refused would otherwise drive the terminal."""
    rows = [[_CONTROL.sub(_shown, cell) for cell in row] for row in rows]
    widths = [max(_width(cell) for cell in column) for column in zip(headers, *rows, strict=True)]
    room = max(shutil.get_terminal_size((120, 24)).columns - sum(widths[:-1]) - 2 * len(widths), 20)
    lines = []
    for row in (headers, *rows):
        cells = [_pad(cell, width) for cell, width in zip(row[:-1], widths, strict=False)]
        lines.append("  ".join([*cells, _cut(row[-1], room)]))
    return lines


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _shown(control: re.Match[str]) -> str:
    character = control.group(0)
    return " " if character in "\t\n\r" else f"\\x{ord(character):02x}"


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _pad(text: str, width: int) -> str:
    return text + " " * (width - _width(text))


def _cut(text: str, room: int) -> str:
    text = " ".join(text.split())
    if _width(text) <= room:
        return text
    kept, used = [], 0
    for char in text:
        used += _width(char)
        if used > room - 1:
            break
        kept.append(char)
    return "".join(kept) + "…"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / 1024 / 1024:.1f} MiB"
