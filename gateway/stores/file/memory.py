"""FileMemoryStore: the research memory of the file backend, as JSON lines.

Storage format (``<dataDir>/memory``):

* ``findings.jsonl`` — one record per line, in the order stored, in the established format
  (``resolvers.memory.records.record_to_dict``: ``type``, ``date``, ``tags``, ``project``, the
  per-type fields in snake_case, ``session_id`` and ``id``), UTF-8, non-ASCII text kept as is.
  Lines without an ``id`` (files written by older tools) get their deterministic id on load.
* ``findings.jsonl.bak`` — the content before the last ``replace_all`` (compaction).
* ``LOCK`` — held (``flock``) by a writable store: a second writer, in this process or another,
  is refused with ``MemoryStoreLockedError``. A read-only store takes no lock.

Guarantees:

* an append is written and fsync'ed before the call returns; disk I/O runs in worker threads
  under one ``asyncio.Lock``, never on the event loop; a caller's cancellation does not abandon a
  write half way (the commit is shielded);
* a failed append truncates what it may have written, so the file stays a list of whole lines;
* on open, a torn last line (invalid JSON or UTF-8, typically a write cut short) is truncated
  with a warning; a complete last line missing its newline gets one; a bad line anywhere before
  the last one refuses to open (``CorruptMemoryFileError`` with the line number) — a damaged
  file is never silently skipped. Blank lines are ignored; a repeated id keeps the first line;
* ``replace_all`` copies the current file to ``findings.jsonl.bak`` (fsync'ed), writes the new
  content to a temporary file, fsyncs it and renames it over ``findings.jsonl`` (atomic).

All records are held in memory (a list in stored order plus an index by id): the memory is
compacted to a few thousand records, and every use case reads them all.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.stores.file.faults import check_still_linked, disk_fault
from resolvers.errors import InvalidInputError, StoreUnavailableError, StoreWriteError
from resolvers.memory.records import prepare_record, record_from_dict, record_to_dict
from resolvers.memory.store import Replaced
from resolvers.records import Backend
from resolvers.values import check_finite

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from resolvers.memory.records import MemoryRecord

logger = logging.getLogger(__name__)

FILE_NAME = "findings.jsonl"
BACKUP_NAME = "findings.jsonl.bak"
LOCK_NAME = "LOCK"


class MemoryFileError(Exception):
    """The memory directory cannot be used (corrupt file, or locked by another writer)."""


class CorruptMemoryFileError(MemoryFileError):
    def __init__(self, path: Path, line: int, reason: str) -> None:
        super().__init__(
            f"{path}, line {line}: {reason}. The file is damaged before its last line; "
            "repair or remove that line (a backup may be in findings.jsonl.bak)."
        )
        self.path = path
        self.line = line


class MemoryStoreLockedError(MemoryFileError):
    def __init__(self, directory: Path) -> None:
        super().__init__(
            f"{directory} is in use by another writer (is the gateway running?); "
            "stop it, or use the GraphQL API instead."
        )


def encode_line(record: MemoryRecord) -> bytes:
    return (json.dumps(record_to_dict(record), ensure_ascii=False) + "\n").encode("utf-8")


def decode_line(line: bytes, *, finite: bool = False) -> MemoryRecord:
    """The prepared record of one line; raises ``ValueError`` (bad JSON or UTF-8) or
    ``InvalidInputError`` (not a valid record). With ``finite`` (an import), a line holding a
    ``NaN`` or infinity anywhere, which JSON lacks, is not a valid record either, nor one a
    new record could not be (``prepare_record``); the store's own lines are read as they were
    written."""
    data = json.loads(line.decode("utf-8-sig"))
    if not isinstance(data, dict):
        raise InvalidInputError(None, "a line must hold a JSON object")
    if finite:
        check_finite(data, "")
    return prepare_record(record_from_dict(data), new=finite)


def bad_line_reason(exc: ValueError | InvalidInputError) -> str:
    """Why ``decode_line`` refused a line, in words."""
    if isinstance(exc, InvalidInputError):
        return exc.message
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return f"invalid JSON ({exc})"


@dataclass(slots=True)
class _Loaded:
    records: list[MemoryRecord]
    intact: int  # length of the prefix made of whole, valid lines
    newline_missing: bool = False


class FileMemoryStore:
    """The file backend of ``resolvers.memory.MemoryStore``. Use ``await FileMemoryStore.open``."""

    backend = Backend.FILE

    def __init__(
        self, directory: Path, loaded: _Loaded, *, fsync: bool, lock_fd: int | None
    ) -> None:
        self.directory = directory
        self.path = directory / FILE_NAME
        self._records = loaded.records
        self._by_id = {record.id: record for record in loaded.records}
        self._size = loaded.intact
        self._fsync = fsync
        self._lock_fd = lock_fd
        self._fd: int | None = None
        self._write_lock = asyncio.Lock()
        self._closed = False

    @classmethod
    async def open(
        cls, directory: Path, *, fsync: bool = True, read_only: bool = False
    ) -> FileMemoryStore:
        """Load ``<directory>/findings.jsonl`` (created on the first write).

        A writable store locks the directory and repairs a torn tail; a read-only one (for
        command-line reads beside a running gateway) does neither and refuses writes.
        Raises ``MemoryStoreLockedError`` and ``CorruptMemoryFileError``.
        """
        if read_only:
            loaded = await asyncio.to_thread(_load, directory / FILE_NAME, repair=False)
            return cls(directory, loaded, fsync=fsync, lock_fd=None)
        lock_fd = await asyncio.to_thread(_lock, directory)
        try:
            loaded = await asyncio.to_thread(_load, directory / FILE_NAME, repair=True)
        except BaseException:
            _unlock(lock_fd)
            raise
        return cls(directory, loaded, fsync=fsync, lock_fd=lock_fd)

    async def append(self, record: MemoryRecord) -> bool:
        return await self.append_many([record]) == 1

    async def append_many(self, records: Sequence[MemoryRecord]) -> int:
        self._check_writable()
        return await asyncio.shield(self._append(list(records)))

    async def get(self, record_id: str) -> MemoryRecord | None:
        return self._by_id.get(record_id)

    async def all_records(self) -> Sequence[MemoryRecord]:
        return tuple(self._records)

    async def replace_all(
        self,
        keep: Callable[[Sequence[MemoryRecord]], Sequence[MemoryRecord]],
        *,
        backup: bool = True,
    ) -> Replaced:
        self._check_writable()
        return await asyncio.shield(self._replace(keep, backup))

    async def size_bytes(self) -> int:
        return self._size

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        async with self._write_lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            if self._lock_fd is not None:
                _unlock(self._lock_fd)
                self._lock_fd = None

    # --- writes -------------------------------------------------------------------------

    def _check_writable(self) -> None:
        """Checked on the call and again under the lock (a close may have come in between)."""
        if self._closed:
            raise StoreUnavailableError(Backend.FILE.value, detail="The memory store is closed.")
        if self._lock_fd is None:
            raise StoreWriteError("The memory store is open read-only.", backend=Backend.FILE.value)

    async def _append(self, records: list[MemoryRecord]) -> int:
        async with self._write_lock:
            self._check_writable()
            fresh = _unique(records, skip=self._by_id)
            if not fresh:
                return 0
            payload = b"".join(encode_line(record) for record in fresh)
            await asyncio.to_thread(self._write, payload)
            self._records.extend(fresh)
            self._by_id.update((record.id, record) for record in fresh)
            self._size += len(payload)
            return len(fresh)

    def _write(self, payload: bytes) -> None:
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            _write_all(self._fd, payload)
            if self._fsync:
                os.fsync(self._fd)
            check_still_linked(self._fd, self.path)
        except OSError as exc:
            if self._fd is not None:
                _truncate_quietly(self._fd, self._size)
            logger.warning("a memory record could not be made durable: %s", exc)
            raise StoreWriteError(
                f"The memory record could not be made durable: {disk_fault(exc.errno)}.",
                backend=Backend.FILE.value,
            ) from exc

    async def _replace(
        self, keep: Callable[[Sequence[MemoryRecord]], Sequence[MemoryRecord]], backup: bool
    ) -> Replaced:
        async with self._write_lock:
            self._check_writable()
            before = len(self._records)
            unique = _unique(list(keep(tuple(self._records))), skip={})
            payload = b"".join(encode_line(record) for record in unique)
            backup_path = await asyncio.to_thread(self._rewrite, payload, backup)
            self._records = unique
            self._by_id = {record.id: record for record in unique}
            self._size = len(payload)
            return Replaced(before, len(unique), str(backup_path) if backup_path else None)

    def _rewrite(self, payload: bytes, backup: bool) -> Path | None:
        if self._fd is not None:  # it would keep pointing at the replaced file
            os.close(self._fd)
            self._fd = None
        backup_path = self.directory / BACKUP_NAME if backup else None
        try:
            if backup_path is not None:
                _backup(self.path, backup_path)
            _atomic_write(self.path, payload)
        except OSError as exc:
            raise StoreWriteError(
                f"The memory file could not be rewritten: {exc}", backend=Backend.FILE.value
            ) from exc
        return backup_path


# --- loading ------------------------------------------------------------------------------


def _load(path: Path, *, repair: bool) -> _Loaded:
    if not path.exists():
        return _Loaded([], 0)
    data = path.read_bytes()
    loaded = _parse(data, path)
    if loaded.intact < len(data):
        logger.warning(
            "%s: %s a torn last line (%d bytes)",
            path,
            "truncated" if repair else "ignoring",
            len(data) - loaded.intact,
        )
    if repair and (loaded.intact < len(data) or loaded.newline_missing):
        _repair(path, loaded)
    return loaded


def _parse(data: bytes, path: Path) -> _Loaded:
    loaded = _Loaded([], 0)
    seen: set[str] = set()
    for number, start, end in _lines(data):
        line = data[start:end]
        if line.strip():
            try:
                record = decode_line(line)
            except (ValueError, InvalidInputError) as exc:
                if _is_torn_tail(data, end, exc):
                    return loaded
                raise CorruptMemoryFileError(path, number, bad_line_reason(exc)) from exc
            _keep(loaded, seen, record, path, number)
        loaded.intact = min(end + 1, len(data))
        loaded.newline_missing = end == len(data)
    return loaded


def _lines(data: bytes) -> list[tuple[int, int, int]]:
    """``(line number, start, end)`` of each line; ``end`` excludes the newline."""
    result: list[tuple[int, int, int]] = []
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        result.append((len(result) + 1, start, end))
        start = end + 1
    return result


def _is_torn_tail(data: bytes, end: int, exc: Exception) -> bool:
    # Only an unparsable line can be a cut-short write; a parsable bad record is damage.
    return not isinstance(exc, InvalidInputError) and not data[end + 1 :].strip()


def _keep(loaded: _Loaded, seen: set[str], record: MemoryRecord, path: Path, number: int) -> None:
    if record.id in seen:
        logger.warning("%s, line %d: repeats record %s; the first is kept", path, number, record.id)
        return
    seen.add(record.id)
    loaded.records.append(record)


def _repair(path: Path, loaded: _Loaded) -> None:
    with path.open("r+b") as handle:
        handle.truncate(loaded.intact)
        if loaded.newline_missing:
            handle.seek(0, os.SEEK_END)
            handle.write(b"\n")
            loaded.intact += 1
        handle.flush()
        os.fsync(handle.fileno())


# --- file primitives ----------------------------------------------------------------------


def _unique(records: list[MemoryRecord], skip: dict[str, MemoryRecord]) -> list[MemoryRecord]:
    seen = set(skip)
    fresh = []
    for record in records:
        if record.id not in seen:
            seen.add(record.id)
            fresh.append(record)
    return fresh


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def _truncate_quietly(fd: int, size: int) -> None:
    try:
        os.ftruncate(fd, size)
    except OSError:
        logger.exception("could not truncate a failed memory append")


def _backup(path: Path, backup_path: Path) -> None:
    temporary = backup_path.with_name(backup_path.name + ".tmp")
    if path.exists():
        shutil.copyfile(path, temporary)
    else:
        temporary.write_bytes(b"")
    _fsync_path(temporary)
    os.replace(temporary, backup_path)


def _atomic_write(path: Path, payload: bytes) -> None:
    temporary = path.with_name(path.name + ".tmp")
    try:
        with temporary.open("wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    _fsync_path(path.parent)


def _fsync_path(path: Path) -> None:
    """fsync a file or a directory (a directory, so that a rename in it is durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _lock(directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise MemoryStoreLockedError(directory) from None
    return fd


def _unlock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
