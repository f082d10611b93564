"""Single-writer lock on a file-store data directory.

The owner holds ``fcntl.flock(LOCK_EX | LOCK_NB)`` on ``<dir>/LOCK`` for as long as it uses the
directory, and writes its pid into that file so that the error a second opener gets names the
holder. The kernel drops the lock when the holder exits, however it exits, so a leftover ``LOCK``
file never blocks a restart (the file is therefore never deleted). A flock belongs to the open file
description: a second ``DirectoryLock`` in the same process conflicts exactly like another process.
"""

from __future__ import annotations

import fcntl
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

LOCK_FILE_NAME = "LOCK"


class StoreLockedError(Exception):
    """Another process (or another ``DirectoryLock`` in this one) holds the data directory."""


class DirectoryLock:
    """Exclusive single-writer lock on a data directory (non-blocking ``flock`` on ``<dir>/LOCK``).

    Use ``acquire()``; a second acquisition anywhere raises ``StoreLockedError`` naming the
    directory and the pid of the holder. ``release()`` is idempotent.
    """

    def __init__(self, directory: Path, fd: int) -> None:
        self._directory = directory
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, directory: Path) -> DirectoryLock:
        """Lock ``directory`` (created if missing) or raise ``StoreLockedError`` at once."""
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise StoreLockedError(_locked_message(directory, holder)) from None
        except BaseException:
            os.close(fd)
            raise
        lock = cls(directory, fd)
        try:
            _write_pid(fd)
        except BaseException:
            lock.release()
            raise
        return lock

    def release(self) -> None:
        """Give the directory up; a second call does nothing."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _write_pid(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def _read_pid(fd: int) -> int | None:
    """The holder's pid, or None while the holder has not written it yet."""
    try:
        return int(os.pread(fd, 32, 0).decode("ascii").strip())
    except (OSError, ValueError):
        return None


def _locked_message(directory: Path, holder: int | None) -> str:
    if holder is None:
        who = "another process (pid unknown)"
    elif holder == os.getpid():
        who = f"this process (pid {holder}) through another DirectoryLock"
    else:
        who = f"another process (pid {holder})"
    return (
        f"data directory {directory} is locked by {who}; only one writer may use it at a time: "
        "stop that process or choose another data directory"
    )
