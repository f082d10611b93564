"""Disk faults of the file store, in words a client and ``/health`` may show.

Nothing here names a path: these texts leave the server (the ``/health`` endpoint needs no
token); the logs keep the full ``LogWriteError`` with its file.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from gateway.stores.file.log import RecordLog

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


def directory_problem(directory: Path, log: RecordLog) -> str | None:
    """Why writes to ``directory`` would not be durable now, or None (blocking: a few stats)."""
    try:
        stats = os.statvfs(directory)
    except FileNotFoundError:
        return disk_fault(errno.ENOENT)
    except OSError as exc:
        return disk_fault(exc.errno)
    if not log.still_linked():
        return disk_fault(errno.ENOENT)
    if not os.access(directory, os.W_OK):  # also false for root on a read-only mount
        return disk_fault(errno.EROFS if stats.f_flag & os.ST_RDONLY else errno.EACCES)
    if stats.f_flag & os.ST_RDONLY:
        return disk_fault(errno.EROFS)
    if stats.f_bavail * stats.f_frsize < FULL_BELOW_BYTES:
        return disk_fault(errno.ENOSPC)
    return None
