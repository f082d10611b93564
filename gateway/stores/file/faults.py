"""Disk faults of the embedded store, in words a client and ``/health`` may show, and the watch
both engines (the log and SQLite) keep on their data directory.

Nothing here names a path: these texts leave the server (the ``/health`` endpoint needs no
token); the logs keep the full ``LogWriteError`` with its file.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from typing import TYPE_CHECKING

from resolvers.errors import StoreUnavailableError
from resolvers.records import Backend

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

logger = logging.getLogger(__name__)

DIRECTORY_CHECK_SECONDS = 1.0

# Below this much free space a write of any size may fail: the disk counts as full.
FULL_BELOW_BYTES = 64 * 1024

_FAULTS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "the data directory is not writable",
    errno.EPERM: "the data directory is not writable",
    errno.EIO: "the disk reported an I/O error",
    errno.ENOENT: "the data directory was deleted or replaced while in use (restart the gateway)",
}


def disk_fault(code: int | None) -> str:
    """What an ``OSError`` errno means for the store's writes, with the errno's name."""
    name = errno.errorcode.get(code or 0, f"errno {code}")
    return f"{_FAULTS.get(code or 0, 'the disk refused the write')} ({name})"


def check_still_linked(fd: int, path: Path) -> None:
    """Raise ``OSError(ENOENT)`` when the open file ``fd`` is no longer the file at ``path``
    (deleted, replaced or moved away, e.g. ``rm -rf`` of the data directory): what was written
    to it would not survive a restart."""
    opened = os.fstat(fd)
    try:
        current = os.stat(path)
    except FileNotFoundError:
        current = None
    if opened.st_nlink == 0 or current is None or not os.path.samestat(opened, current):
        raise OSError(errno.ENOENT, "the file was deleted or replaced while open", str(path))


def directory_problem(directory: Path, still_there: Callable[[], bool]) -> str | None:
    """Why writes to ``directory`` would not be durable now, or None (blocking: a few stats).
    ``still_there``: whether the store's own file is still the one it writes to."""
    try:
        stats = os.statvfs(directory)
    except FileNotFoundError:
        return disk_fault(errno.ENOENT)
    except OSError as exc:
        return disk_fault(exc.errno)
    if not still_there():
        return disk_fault(errno.ENOENT)
    if not os.access(directory, os.W_OK):  # also false for root on a read-only mount
        return disk_fault(errno.EROFS if stats.f_flag & os.ST_RDONLY else errno.EACCES)
    if stats.f_flag & os.ST_RDONLY:
        return disk_fault(errno.EROFS)
    if stats.f_bavail * stats.f_frsize < FULL_BELOW_BYTES:
        return disk_fault(errno.ENOSPC)
    return None


def check_durable(*, closed: bool, problem: str | None) -> None:
    """Raise ``StoreUnavailableError`` when a closed store or ``problem`` stops durable writes."""
    if closed:
        raise StoreUnavailableError(Backend.FILE.value, detail="The store is closed.")
    if problem is not None:
        raise StoreUnavailableError(
            Backend.FILE.value, detail=f"Writes cannot be made durable: {problem}."
        )


class DirectoryWatch:
    """Keeps ``problem`` current: why writes to ``directory`` would not be durable now
    (``directory_problem``), checked every ``DIRECTORY_CHECK_SECONDS`` in a worker thread so a
    ping answers at once. Changes are logged; ``run`` never dies of a failed check."""

    def __init__(self, directory: Path, still_there: Callable[[], bool]) -> None:
        self.directory = directory
        self.problem: str | None = None
        self._still_there = still_there

    async def run(self) -> None:
        while True:
            try:
                problem = await asyncio.to_thread(
                    directory_problem, self.directory, self._still_there
                )
            except Exception:  # the check must not die: the state would freeze with it
                logger.exception("checking the data directory failed")
                problem = None
            if problem != self.problem:
                log = logger.warning if problem is not None else logger.info
                log("data directory %s: %s", self.directory, problem or "writable again")
            self.problem = problem
            await asyncio.sleep(DIRECTORY_CHECK_SECONDS)
