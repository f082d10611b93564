"""The file store's durability layer: record log, snapshots and the directory lock."""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from gateway.stores.file.log import (
    CorruptLogError,
    DirectoryLock,
    LogWriteError,
    RecordLog,
    StoreLockedError,
    read_latest_snapshot,
    write_snapshot,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

REPO_ROOT = Path(__file__).resolve().parents[3]
LOCK_SCRIPT = (
    "import pathlib, sys; from gateway.stores.file.log import DirectoryLock; "
    "DirectoryLock.acquire(pathlib.Path(sys.argv[1]))"
)


def line(payload: bytes) -> bytes:
    """One record as it must appear on disk, built independently of the code under test."""
    return f"{zlib.crc32(payload):08x} ".encode() + payload + b"\n"


def log_file(directory: Path, generation: int = 0) -> Path:
    return directory / f"log.{generation:08d}.jsonl"


def file_names(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


async def write_log(directory: Path, *payloads: bytes) -> None:
    log = RecordLog.open(directory)
    for payload in payloads:
        await log.append(payload)
    await log.aclose()


async def replayed(directory: Path) -> list[bytes]:
    log = RecordLog.open(directory)
    try:
        return list(log.replay())
    finally:
        await log.aclose()


def break_log_file(monkeypatch: pytest.MonkeyPatch, path: Path, call: str) -> None:
    """Make ``os.write`` (half the bytes, then ENOSPC) or ``os.fsync`` (EIO) fail on ``path``."""
    real_write, real_fsync = os.write, os.fsync

    def is_target(fd: int) -> bool:
        return os.path.samestat(os.fstat(fd), path.stat())

    def write(fd: int, data: bytes | memoryview) -> int:
        if is_target(fd):
            real_write(fd, bytes(data)[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    def fsync(fd: int) -> None:
        if is_target(fd):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_fsync(fd)

    monkeypatch.setattr(os, call, write if call == "write" else fsync)


def acquire_in_subprocess(directory: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", LOCK_SCRIPT, str(directory)]
    return subprocess.run(
        command, capture_output=True, text=True, cwd=REPO_ROOT, timeout=60, check=False
    )


@pytest.fixture
async def log(tmp_path: Path) -> AsyncIterator[RecordLog]:
    record_log = RecordLog.open(tmp_path)
    yield record_log
    await record_log.aclose()


@pytest.fixture
def held_lock(tmp_path: Path) -> Iterator[DirectoryLock]:
    lock = DirectoryLock.acquire(tmp_path)
    yield lock
    lock.release()


async def test_appended_records_replay_after_reopen(tmp_path: Path) -> None:
    payloads = [b'{"n":1}', '{"title":"Schrödinger, 量子, 🧪"}'.encode()]

    await write_log(tmp_path, *payloads)

    assert await replayed(tmp_path) == payloads
    assert log_file(tmp_path).read_bytes() == b"".join(map(line, payloads))


async def test_concurrent_appends_are_durable_in_call_order_with_group_commit(
    log: RecordLog, tmp_path: Path
) -> None:
    payloads = [b"%d" % n for n in range(200)]

    await asyncio.gather(*(log.append(payload) for payload in payloads))

    assert log_file(tmp_path).read_bytes() == b"".join(map(line, payloads))
    assert 0 < log.fsync_count < len(payloads)


async def test_torn_tail_is_truncated_and_later_appends_follow(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await write_log(tmp_path, b"1")
    with log_file(tmp_path).open("ab") as file:
        file.write(b'0badc0de {"torn')

    await write_log(tmp_path, b"2")

    assert log_file(tmp_path).read_bytes() == line(b"1") + line(b"2")
    assert f"at byte offset {len(line(b'1'))}" in caplog.text


async def test_bad_checksum_at_the_tail_is_truncated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await write_log(tmp_path, b"1", b"2")
    path = log_file(tmp_path)
    path.write_bytes(path.read_bytes().replace(line(b"2"), b"00000000 2\n"))

    payloads = await replayed(tmp_path)

    assert payloads == [b"1"]
    assert path.read_bytes() == line(b"1")
    assert f"at byte offset {len(line(b'1'))}" in caplog.text


async def test_corrupt_record_followed_by_valid_records_raises(tmp_path: Path) -> None:
    await write_log(tmp_path, b"1", b"2", b"3")
    path = log_file(tmp_path)
    damaged = path.read_bytes().replace(line(b"2"), line(b"2").replace(b"2\n", b"9\n"))
    path.write_bytes(damaged)

    with pytest.raises(CorruptLogError, match=r"log\.00000000\.jsonl at byte offset 11\b"):
        RecordLog.open(tmp_path)

    assert path.read_bytes() == damaged


async def test_corrupt_tail_of_a_closed_generation_raises(log: RecordLog, tmp_path: Path) -> None:
    await log.append(b"1")
    await log.rotate()
    await log.aclose()
    with log_file(tmp_path, 0).open("ab") as file:
        file.write(b"torn")

    with pytest.raises(CorruptLogError, match=r"log\.00000000\.jsonl at byte offset 11\b"):
        RecordLog.open(tmp_path)


@pytest.mark.parametrize(
    ("payload", "message"),
    [(b'{"a":\n1}', "newline"), (b'"\xff"', "utf-8")],
    ids=["newline", "bad-utf8"],
)
async def test_append_rejects_payloads_that_would_break_the_format(
    log: RecordLog, payload: bytes, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        await log.append(payload)


async def test_append_after_aclose_raises(log: RecordLog) -> None:
    await log.aclose()
    await log.aclose()

    with pytest.raises(LogWriteError, match="closed"):
        await log.append(b"1")


@pytest.mark.parametrize(("call", "errno_name"), [("write", "ENOSPC"), ("fsync", "EIO")])
async def test_failed_append_raises_and_leaves_no_partial_record(
    log: RecordLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, errno_name: str
) -> None:
    await log.append(b"1")
    break_log_file(monkeypatch, log_file(tmp_path), call)

    with pytest.raises(LogWriteError, match=errno_name):
        await log.append(b"2")

    assert log_file(tmp_path).read_bytes() == line(b"1")


@pytest.mark.parametrize("call", ["write", "fsync"])
async def test_log_accepts_appends_again_once_the_disk_recovers(
    log: RecordLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    break_log_file(monkeypatch, log_file(tmp_path), call)
    with pytest.raises(LogWriteError):
        await log.append(b"1")
    monkeypatch.undo()

    await log.resume()
    await log.append(b"2")

    assert log_file(tmp_path).read_bytes() == line(b"2")


async def test_after_a_failed_append_every_later_one_is_refused_until_resumed(
    log: RecordLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await log.append(b"1")
    break_log_file(monkeypatch, log_file(tmp_path), "write")
    with pytest.raises(LogWriteError, match="ENOSPC"):
        await log.append(b"2")
    monkeypatch.undo()

    with pytest.raises(LogWriteError, match="ENOSPC"):
        await log.append(b"3")  # the disk is fine again, but "3" may have been built on "2"
    await log.resume()
    await log.append(b"4")

    assert log_file(tmp_path).read_bytes() == line(b"1") + line(b"4")


async def test_an_append_to_a_deleted_log_file_fails_before_it_returns(
    log: RecordLog, tmp_path: Path
) -> None:
    await log.append(b"1")
    log_file(tmp_path).unlink()

    with pytest.raises(LogWriteError, match="ENOENT"):
        await log.append(b"2")


async def test_rotate_starts_a_new_generation_and_replay_skips_older_ones(log: RecordLog) -> None:
    await log.append(b"1")

    closed = await log.rotate()
    await log.append(b"2")

    assert (closed, log.generation) == (0, 1)
    assert list(log.replay(after_generation=0)) == [b"2"]
    assert list(log.replay()) == [b"1", b"2"]


async def test_drop_generations_deletes_the_covered_files(log: RecordLog, tmp_path: Path) -> None:
    await log.append(b"1")
    await log.rotate()
    await log.append(b"22")
    size_before = log.size_bytes

    log.drop_generations(0)

    assert file_names(tmp_path) == ["log.00000001.jsonl"]
    assert list(log.replay(after_generation=0)) == [b"22"]
    assert (size_before, log.size_bytes) == (len(line(b"1")) + len(line(b"22")), len(line(b"22")))


async def test_drop_generations_refuses_the_current_generation(log: RecordLog) -> None:
    with pytest.raises(ValueError, match="still appended to"):
        log.drop_generations(0)


async def test_replay_refuses_a_missing_generation(log: RecordLog) -> None:
    await log.rotate()
    log.drop_generations(0)

    with pytest.raises(CorruptLogError, match="generation 00000000 is missing"):
        list(log.replay())


async def test_open_appends_to_a_generation_after_the_newest_snapshot(tmp_path: Path) -> None:
    write_snapshot(tmp_path, 4, [b"1"])

    log = RecordLog.open(tmp_path)
    generation = log.generation
    await log.aclose()

    assert generation == 5


def test_snapshot_round_trip(tmp_path: Path) -> None:
    payloads = [b'{"n":1}', '"ü"'.encode()]

    path = write_snapshot(tmp_path, 3, payloads)
    snapshot = read_latest_snapshot(tmp_path)

    assert snapshot is not None
    assert (snapshot[0], list(snapshot[1])) == (3, payloads)
    assert path.read_bytes() == b"".join(map(line, [*payloads, b'{"snapshot_end": 2}']))


def test_write_snapshot_deletes_older_snapshots(tmp_path: Path) -> None:
    write_snapshot(tmp_path, 1, [b"1"])

    write_snapshot(tmp_path, 2, [b"2"])

    assert file_names(tmp_path) == ["snapshot.00000002.jsonl"]


@pytest.mark.parametrize(
    "content",
    [
        line(b"2"),
        line(b"2") + line(b'{"snapshot_end": 2}'),
        b"00000000 2\n" + line(b'{"snapshot_end": 1}'),
    ],
    ids=["no-trailer", "wrong-count", "bad-checksum"],
)
def test_incomplete_newest_snapshot_is_ignored_for_an_older_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes
) -> None:
    write_snapshot(tmp_path, 1, [b"1"])
    (tmp_path / "snapshot.00000002.jsonl").write_bytes(content)

    snapshot = read_latest_snapshot(tmp_path)

    assert snapshot is not None
    assert (snapshot[0], list(snapshot[1])) == (1, [b"1"])
    assert "snapshot.00000002.jsonl" in caplog.text


def test_no_snapshot_reads_as_none(tmp_path: Path) -> None:
    assert read_latest_snapshot(tmp_path) is None


def test_second_lock_in_the_same_process_is_refused(
    held_lock: DirectoryLock, tmp_path: Path
) -> None:
    with pytest.raises(StoreLockedError) as excinfo:
        DirectoryLock.acquire(tmp_path)

    assert str(tmp_path) in str(excinfo.value)
    assert f"pid {os.getpid()}" in str(excinfo.value)


def test_second_lock_from_another_process_is_refused(
    held_lock: DirectoryLock, tmp_path: Path
) -> None:
    result = acquire_in_subprocess(tmp_path)

    assert result.returncode != 0
    assert "StoreLockedError" in result.stderr
    assert f"{tmp_path} is locked by another process (pid {os.getpid()})" in result.stderr


def test_released_lock_is_free_for_another_process(tmp_path: Path) -> None:
    lock = DirectoryLock.acquire(tmp_path)

    lock.release()
    lock.release()
    result = acquire_in_subprocess(tmp_path)

    assert result.returncode == 0, result.stderr
