"""Durability layer of the file store: the record log of generation files.

The file layout and line format are described in ``framing.py``; snapshots in ``snapshot.py``.

Guarantees:

* ``await append(p)`` returns only after ``p`` is written and, with ``fsync=True``, fsync'ed.
  Records appear in the file in the order of the ``append()`` calls. One writer thread does all
  log I/O and commits everything queued with one write and one fsync (group commit), so the
  event loop never blocks on the disk.
* A failed write or fsync (``OSError``) fails the appends of that batch with ``LogWriteError`` and
  cuts the file back to its last durable length (retried before the next write if the cut itself
  fails), so no partial record stays behind. From then on every append is refused, with the same
  error, until the owner calls ``resume()``: a record built on one that was lost never reaches the
  file, and the owner undoes the refused ones before it resumes.
* A log file that was deleted or replaced under the open log (``rm -rf`` of the directory) is
  detected after each write's fsync, before the append returns: the append fails as above
  (``ENOENT``) instead of acknowledging a record that no restart would find.
* On open, a torn or corrupt tail of the newest generation (a crash mid-write) is truncated with a
  warning. Any other bad record — one followed by valid records, or any in an older generation —
  raises ``CorruptLogError`` naming file and byte offset: nothing is ever skipped silently.
* ``rotate()`` closes the current generation once everything before it is durable; the owner then
  writes a snapshot for the closed generation (temp file, fsync, atomic rename, directory fsync)
  and drops the generations it covers. Start-up reads the newest complete snapshot and replays
  the generations after it; ``replay`` refuses a gap in the generation sequence, and ``open``
  never appends to a generation that an existing snapshot already covers.

Errors (each derives from ``Exception``; the store maps them to domain errors):

    StoreLockedError    another process holds the directory (defined in ``lock.py``)
    CorruptLogError     a bad record where truncating would drop committed records
                        (defined in ``framing.py``)
    LogWriteError       an append or a rotation could not be made durable
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import queue
import threading
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from gateway.stores.file.faults import check_still_linked
from gateway.stores.file.framing import (
    LOG_NAME,
    SNAPSHOT_NAME,
    CorruptLogError,
    corrupt_error,
    decode_line,
    encode_line,
    fsync_directory,
    list_generations,
    log_path,
    read_records,
)
from gateway.stores.file.lock import DirectoryLock, StoreLockedError
from gateway.stores.file.snapshot import read_latest_snapshot, write_snapshot

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

__all__ = [
    "CorruptLogError",
    "DirectoryLock",
    "LogWriteError",
    "RecordLog",
    "StoreLockedError",
    "read_latest_snapshot",
    "write_snapshot",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_A = TypeVar("_A")


class LogWriteError(Exception):
    """An append or a rotation could not be made durable (the ``OSError`` is the cause; its
    ``errno`` is copied here)."""

    errno: int | None = None


class RecordLog:
    """Append-only log of checksummed records in generation files ``<dir>/log.<gen:08d>.jsonl``.

    ``open`` does not lock the directory: the caller holds a ``DirectoryLock``. One event loop
    uses a log at a time; ``generation``, ``size_bytes`` and ``drop_generations`` may also be
    used from worker threads.
    """

    def __init__(self, writer: _Writer) -> None:
        self._writer = writer
        self._stopped: asyncio.Future[None] | None = None

    @classmethod
    def open(cls, directory: Path, *, fsync: bool = True) -> RecordLog:
        """Validate and repair the generation files, then start the writer thread (blocking).

        A torn or corrupt tail of the newest generation is truncated with a warning; any other
        bad record raises ``CorruptLogError``. ``fsync=False`` trusts the OS page cache.
        """
        directory.mkdir(parents=True, exist_ok=True)
        generations = list_generations(directory, LOG_NAME)
        _recover(directory, generations, fsync=fsync)
        current = _current_generation(directory, generations, fsync=fsync)
        closed = {gen: log_path(directory, gen).stat().st_size for gen in generations}
        closed.pop(current, None)
        writer = _Writer(directory, current, closed, fsync=fsync)
        writer.thread.start()
        return cls(writer)

    def replay(self, after_generation: int = -1) -> Iterator[bytes]:
        """Payloads of every generation > ``after_generation``, in order (blocking reads).

        Only records already durable when iteration starts are read. Raises ``CorruptLogError`` if
        a generation in the sequence is missing or a record no longer validates.
        """
        return (payload for _, _, payload in self.replay_located(after_generation))

    def replay_located(self, after_generation: int = -1) -> Iterator[tuple[Path, int, bytes]]:
        """Like ``replay``, each payload with its file and byte offset (for error messages)."""
        directory = self._writer.directory
        generations = [g for g in list_generations(directory, LOG_NAME) if g > after_generation]
        _check_contiguous(directory, generations, first=after_generation + 1)
        current, durable = self._writer.position()
        for gen in generations:
            path = log_path(directory, gen)
            for offset, payload in read_records(path, durable if gen == current else None):
                yield path, offset, payload

    @property
    def generation(self) -> int:
        """The generation currently appended to."""
        return self._writer.position()[0]

    @property
    def size_bytes(self) -> int:
        """Durable bytes in all generation files still on disk (what a restart would replay)."""
        return self._writer.size_bytes()

    def still_linked(self) -> bool:
        """Whether the file appended to is still the one at its path (blocking, any thread)."""
        try:
            self._writer.check_still_linked(locked=True)
        except OSError:
            return False
        return True

    @property
    def fsync_count(self) -> int:
        """How many fsyncs the writer thread has issued (observability)."""
        return self._writer.fsync_count

    async def append(self, payload: bytes) -> None:
        """Return once ``payload`` is durable; raise ``LogWriteError`` if it could not be.

        ``ValueError`` for a payload with a newline or invalid UTF-8. Cancelling the caller does
        not withdraw the record: it may still be written.
        """
        record = encode_line(payload)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._submit(_Append(record, future))
        await future

    async def resume(self) -> None:
        """Accept appends again after a failed one (every append before this call is settled)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._submit(_Resume(future))
        await future

    async def rotate(self) -> int:
        """Once every earlier append is settled, start generation + 1; return the closed one."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._submit(_Rotate(future))
        return await future

    def drop_generations(self, up_to: int) -> None:
        """Delete the log files of generations <= ``up_to`` (blocking; a snapshot covers them).

        ``ValueError`` if that includes the generation being appended to.
        """
        if up_to >= self.generation:
            raise ValueError(f"cannot drop generation {up_to}: it is still appended to")
        for gen in list_generations(self._writer.directory, LOG_NAME):
            if gen <= up_to:
                log_path(self._writer.directory, gen).unlink(missing_ok=True)
                self._writer.forget(gen)

    async def aclose(self) -> None:
        """Settle every queued append, close the file and stop the thread; idempotent."""
        if self._stopped is None:
            self._stopped = asyncio.get_running_loop().create_future()
            self._writer.requests.put(_Stop(self._stopped))
        await asyncio.shield(self._stopped)
        await asyncio.to_thread(self._writer.thread.join)

    def close_now(self) -> None:
        """Stop a log that was never appended to, from any thread, blocking (a failed start)."""
        if self._stopped is None:
            self._writer.requests.put(_Stop(None))
            self._writer.thread.join()

    def _submit(self, request: _Request) -> None:
        if self._stopped is not None:
            raise LogWriteError(f"the record log in {self._writer.directory} is closed")
        self._writer.requests.put(request)


@dataclass(slots=True)
class _Append:
    record: bytes
    future: asyncio.Future[None]


@dataclass(slots=True)
class _Rotate:
    future: asyncio.Future[int]


@dataclass(slots=True)
class _Resume:
    future: asyncio.Future[None]


@dataclass(slots=True)
class _Stop:
    future: asyncio.Future[None] | None  # None: nobody on an event loop waits (``close_now``)


_Request: TypeAlias = _Append | _Rotate | _Resume | _Stop


class _Writer:
    """The writer thread and the open generation file it alone writes to.

    ``position``, ``size_bytes`` and ``forget`` may be called from any thread.
    """

    def __init__(self, directory: Path, generation: int, closed: dict[int, int], *, fsync: bool):
        self.directory = directory
        self.requests: queue.SimpleQueue[_Request] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="record-log-writer", daemon=True)
        self.fsync_count = 0
        self._fsync = fsync
        self._fd = _open_log(log_path(directory, generation), create=False)
        self._generation = generation
        self._offset = os.fstat(self._fd).st_size  # durable length of the current file
        self._closed_sizes = closed  # generation -> size, for closed files still on disk
        self._dirty = False  # the file may hold bytes past ``_offset``
        self._refusing: LogWriteError | None = None  # why appends are refused until resumed
        self._state = threading.Lock()

    def position(self) -> tuple[int, int]:
        """(current generation, its durable length)."""
        with self._state:
            return self._generation, self._offset

    def size_bytes(self) -> int:
        with self._state:
            return self._offset + sum(self._closed_sizes.values())

    def forget(self, generation: int) -> None:
        with self._state:
            self._closed_sizes.pop(generation, None)

    def _run(self) -> None:
        running = True
        while running:
            batch = self._next_batch()
            try:
                running = self._handle(batch)
            except Exception as exc:  # a bug must not leave callers awaiting forever
                logger.exception("record log writer failed")
                self._dirty = True
                self._refusing = LogWriteError(f"record log writer failed: {exc!r}")
                for request in batch:
                    if request.future is not None:
                        _fail(request.future, _copy(self._refusing))

    def _next_batch(self) -> list[_Request]:
        batch = [self.requests.get()]
        with suppress(queue.Empty):
            while True:
                batch.append(self.requests.get_nowait())
        return batch

    def _handle(self, batch: list[_Request]) -> bool:
        """Commit runs of appends, with rotations in between; False once stopped."""
        appends: list[_Append] = []
        for request in batch:
            if isinstance(request, _Append):
                appends.append(request)
                continue
            self._commit(appends)
            appends = []
            if isinstance(request, _Stop):
                self._stop(request)
                return False
            if isinstance(request, _Resume):
                self._refusing = None
                _resolve(request.future, None)
                continue
            self._rotate(request)
        self._commit(appends)
        return True

    def _commit(self, appends: list[_Append]) -> None:
        if not appends:
            return
        if self._refusing is not None:
            for append in appends:
                _fail(append.future, _copy(self._refusing))
            return
        data = b"".join(append.record for append in appends)
        try:
            self._write(data)
        except OSError as exc:
            self._discard_partial()
            self._refusing = self._error("append to", exc)
            for append in appends:
                _fail(append.future, _copy(self._refusing))
            return
        for append in appends:
            _resolve(append.future, None)

    def _write(self, data: bytes) -> None:
        self._cut_back()
        self._dirty = True
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        self._sync(self._fd)
        self.check_still_linked()
        with self._state:
            self._offset += len(data)
        self._dirty = False

    def check_still_linked(self, *, locked: bool = False) -> None:
        """Raise ``ENOENT`` when the open file is no longer the one at its path (deleted,
        replaced or moved away): what was just written would not survive a restart.
        ``locked`` from other threads than the writer's (a rotation may swap the file)."""
        if locked:
            with self._state:
                self.check_still_linked()
            return
        check_still_linked(self._fd, self._path)

    def _cut_back(self) -> None:
        """Drop whatever a failed write left past the durable length."""
        if self._dirty:
            os.ftruncate(self._fd, self._offset)
            self._sync(self._fd)
            self._dirty = False

    def _discard_partial(self) -> None:
        try:
            self._cut_back()
        except OSError as exc:
            logger.warning(
                "could not cut %s back to %d bytes (%s); retrying before the next write",
                self._path,
                self._offset,
                _errno_name(exc),
            )

    def _rotate(self, request: _Rotate) -> None:
        try:
            self._cut_back()
            closed = self._open_next()
        except OSError as exc:
            _fail(request.future, self._error("rotate", exc))
            return
        _resolve(request.future, closed)

    def _open_next(self) -> int:
        path = log_path(self.directory, self._generation + 1)
        fd = _open_log(path, create=True)
        try:
            self._sync_directory()
        except OSError:
            os.close(fd)
            with suppress(OSError):
                path.unlink()
            raise
        with self._state:
            closed, previous, self._fd = self._generation, self._fd, fd
            self._closed_sizes[closed] = self._offset
            self._generation, self._offset = closed + 1, 0
        # Closed after the swap: ``still_linked`` may be using it until then.
        with suppress(OSError):  # the data is already durable; a failing close changes nothing
            os.close(previous)
        return closed

    def _stop(self, request: _Stop) -> None:
        try:
            self._cut_back()
        except OSError as exc:
            logger.warning("closing %s with a partial record (%s)", self._path, _errno_name(exc))
        with suppress(OSError):
            os.close(self._fd)
        if request.future is not None:
            _resolve(request.future, None)

    def _sync(self, fd: int) -> None:
        if self._fsync:
            os.fsync(fd)
            self.fsync_count += 1

    def _sync_directory(self) -> None:
        if self._fsync:
            fsync_directory(self.directory)
            self.fsync_count += 1

    @property
    def _path(self) -> Path:
        return log_path(self.directory, self._generation)

    def _error(self, action: str, exc: OSError) -> LogWriteError:
        error = LogWriteError(f"could not {action} {self._path}: {_errno_name(exc)} ({exc})")
        error.__cause__ = exc
        error.errno = exc.errno
        return error


def _scan(path: Path) -> tuple[int, int | None]:
    """(file length, offset of the first bad line or None); a bad line must be the tail."""
    offset, first_bad = 0, None
    with path.open("rb") as file:
        for line in file:
            if decode_line(line) is None:
                first_bad = offset if first_bad is None else first_bad
            elif first_bad is not None:
                raise corrupt_error(path, first_bad, "valid records follow it")
            offset += len(line)
    return offset, first_bad


def _recover(directory: Path, generations: list[int], *, fsync: bool) -> None:
    for generation in generations:
        path = log_path(directory, generation)
        length, first_bad = _scan(path)
        if first_bad is None:
            continue
        if generation != generations[-1]:
            raise corrupt_error(path, first_bad, "it is in a closed generation")
        logger.warning(
            "truncating the torn or corrupt tail of %s at byte offset %d (%d bytes discarded)",
            path,
            first_bad,
            length - first_bad,
        )
        with path.open("r+b") as file:
            file.truncate(first_bad)
            if fsync:
                os.fsync(file.fileno())


def _current_generation(directory: Path, generations: list[int], *, fsync: bool) -> int:
    """The newest generation, or a new one if there is none or a snapshot already covers it."""
    newest = generations[-1] if generations else -1
    snapshots = list_generations(directory, SNAPSHOT_NAME)
    current = max(newest, snapshots[-1] + 1 if snapshots else 0)
    if current != newest:
        os.close(_open_log(log_path(directory, current), create=True))
        if fsync:
            fsync_directory(directory)
    return current


def _check_contiguous(directory: Path, generations: list[int], *, first: int) -> None:
    for expected, generation in enumerate(generations, start=max(first, 0)):
        if generation != expected:
            raise CorruptLogError(
                f"log generation {expected:08d} is missing from {directory} "
                f"(next present: {generation:08d}); refusing to replay around the gap: restore "
                f"log.{expected:08d}.jsonl, or the snapshot covering it if one was reported "
                "damaged, from a backup"
            )


def _open_log(path: Path, *, create: bool) -> int:
    flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT | os.O_EXCL if create else 0)
    return os.open(path, flags, 0o644)


def _copy(error: LogWriteError) -> LogWriteError:
    """A new exception per refused append: one instance raised in several tasks would share
    (and grow) one traceback."""
    copy = LogWriteError(*error.args)
    copy.__cause__ = error.__cause__
    copy.errno = error.errno
    return copy


def _errno_name(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, f"errno {exc.errno}")


def _resolve(future: asyncio.Future[_T], value: _T) -> None:
    _settle_on_loop(future, future.set_result, value)


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    _settle_on_loop(future, future.set_exception, error)


def _settle_on_loop(future: asyncio.Future[_T], setter: Callable[[_A], None], arg: _A) -> None:
    def settle() -> None:
        if not future.done():  # the caller may have been cancelled meanwhile
            setter(arg)

    with suppress(RuntimeError):  # the loop is closed: nobody awaits the result any more
        future.get_loop().call_soon_threadsafe(settle)
