"""On-disk framing shared by the record log (``log.py``) and its snapshots (``snapshot.py``).

On disk, in the data directory::

    LOCK                        single-writer lock, holds the owner's pid (``lock.py``)
    log.00000000.jsonl          log generations, oldest first; only the newest is appended to
    log.00000001.jsonl
    snapshot.00000000.jsonl     a full state covering every record of generations <= 0

Every line of every file is ``<crc32 of payload, 8 lowercase hex> <payload>\\n``. A payload is an
opaque UTF-8 document without newlines (the graph layer writes one JSON document per record), so
the files stay greppable text.
"""

from __future__ import annotations

import os
import re
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = [
    "LOG_NAME",
    "SNAPSHOT_FILE",
    "SNAPSHOT_NAME",
    "CorruptLogError",
    "corrupt_error",
    "decode_line",
    "encode_line",
    "fsync_directory",
    "list_generations",
    "log_path",
    "read_records",
    "snapshot_path",
]

LOG_NAME = re.compile(r"log\.(\d{8})\.jsonl")
SNAPSHOT_NAME = re.compile(r"snapshot\.(\d{8})\.jsonl")
SNAPSHOT_FILE = re.compile(r"snapshot\.(\d{8})\.jsonl(?:\.tmp)?")


class CorruptLogError(Exception):
    """A file of the store is damaged where skipping it would drop committed records; the
    message names the file, the byte offset and what to do."""


def encode_line(payload: bytes) -> bytes:
    """The checksummed line for ``payload``; ``ValueError`` for a newline or invalid UTF-8."""
    if b"\n" in payload:
        raise ValueError("a record payload must not contain a newline")
    payload.decode("utf-8")  # UnicodeDecodeError is a ValueError
    return b"%08x %s\n" % (zlib.crc32(payload), payload)


def decode_line(line: bytes) -> bytes | None:
    """The payload of a line read with its newline; None if the line is torn or corrupt."""
    payload = line[9:-1]
    # Comparing with the checksum as written checks its form too: 8 lowercase hex digits.
    if line[8:9] != b" " or line[-1:] != b"\n" or line[:8] != b"%08x" % zlib.crc32(payload):
        return None
    if not payload.isascii():  # ASCII is UTF-8; only other text needs the full check
        try:
            payload.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return payload


def read_records(path: Path, limit: int | None) -> Iterator[tuple[int, bytes]]:
    """(byte offset, payload) of each record of ``path`` up to byte ``limit``; every one must
    validate."""
    offset = 0
    with path.open("rb") as file:
        for line in file:
            if limit is not None and offset >= limit:
                return
            payload = decode_line(line)
            if payload is None:
                raise corrupt_error(path, offset, "it no longer validates")
            yield offset, payload
            offset += len(line)


def corrupt_error(path: Path, offset: int, reason: str) -> CorruptLogError:
    """The ``CorruptLogError`` for a bad record of ``path`` at byte ``offset``."""
    return CorruptLogError(
        f"corrupt record in {path} at byte offset {offset} ({reason}); refusing to skip it: "
        "restore the file from a backup or move it aside"
    )


def list_generations(directory: Path, pattern: re.Pattern[str]) -> list[int]:
    """The generations of the files in ``directory`` whose name matches ``pattern``, sorted."""
    return sorted(int(m[1]) for path in directory.iterdir() if (m := pattern.fullmatch(path.name)))


def log_path(directory: Path, generation: int) -> Path:
    """The file of log generation ``generation``."""
    return directory / f"log.{generation:08d}.jsonl"


def snapshot_path(directory: Path, generation: int) -> Path:
    """The snapshot file covering generations <= ``generation``."""
    return directory / f"snapshot.{generation:08d}.jsonl"


def fsync_directory(directory: Path) -> None:
    """Make creations, renames and deletions in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
