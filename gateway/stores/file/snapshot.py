"""Snapshots of the record log: ``snapshot.<gen:08d>.jsonl`` in the data directory.

A snapshot holds a full state covering every record of log generations <= ``gen``, one payload
per line in the framing of ``framing.py``. It ends with the trailer ``<crc> {"snapshot_end": <n>}``
where ``n`` counts the payload lines before it.

Guarantees:

* ``write_snapshot`` writes a temp file, fsyncs it, renames it into place atomically and fsyncs
  the directory, so a crash leaves either the old or the new snapshot; older snapshots are then
  deleted.
* ``read_latest_snapshot`` returns the newest complete snapshot: one without its trailer or with
  a bad record is skipped with a warning in favour of an older complete one.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from gateway.stores.file.framing import (
    SNAPSHOT_FILE,
    SNAPSHOT_NAME,
    decode_line,
    encode_line,
    fsync_directory,
    list_generations,
    snapshot_path,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path

__all__ = ["read_latest_snapshot", "read_latest_snapshot_located", "write_snapshot"]

logger = logging.getLogger(__name__)


def write_snapshot(directory: Path, generation: int, payloads: Iterable[bytes]) -> Path:
    """Atomically write ``snapshot.<generation>.jsonl`` and delete older snapshots (blocking).

    The payloads go to a ``.tmp`` file with a trailer line counting them; it is fsync'ed, renamed
    into place and the directory fsync'ed, so a crash leaves either the old or the new snapshot.
    """
    path = snapshot_path(directory, generation)
    temporary = path.with_name(f"{path.name}.tmp")
    try:
        _write_snapshot_file(temporary, payloads)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_directory(directory)
    _delete_older_snapshots(directory, generation)
    return path


def read_latest_snapshot(directory: Path) -> tuple[int, Iterator[bytes]] | None:
    """The newest complete snapshot as (generation, payloads), or None if there is none.

    A snapshot without its trailer or with a bad record is skipped with a warning in favour of
    an older complete one. The file is validated before this returns and read again lazily.
    """
    found = read_latest_snapshot_located(directory)
    if found is None:
        return None
    generation, _, records = found
    return generation, (payload for _, payload in records)


def read_latest_snapshot_located(
    directory: Path,
) -> tuple[int, Path, Iterator[tuple[int, bytes]]] | None:
    """Like ``read_latest_snapshot``, with the file and each payload's byte offset."""
    for generation in reversed(list_generations(directory, SNAPSHOT_NAME)):
        path = snapshot_path(directory, generation)
        body_length = _snapshot_body_length(path)
        if body_length is not None:
            return generation, path, _validated_payloads(path, body_length)
        logger.warning(
            "ignoring incomplete or corrupt snapshot %s: starting from an older state (the log "
            "generations it covered were deleted when it was written; restore it from a backup "
            "if the start refuses a missing generation)",
            path,
        )
    return None


def _write_snapshot_file(path: Path, payloads: Iterable[bytes]) -> None:
    count = 0
    with path.open("wb") as file:
        for payload in payloads:
            file.write(encode_line(payload))
            count += 1
        file.write(encode_line(_trailer(count)))
        file.flush()
        os.fsync(file.fileno())


def _snapshot_body_length(path: Path) -> int | None:
    """Byte offset of a valid trailer, or None if the snapshot is incomplete or corrupt."""
    offset, count, last, last_at = 0, 0, b"", 0
    with path.open("rb") as file:
        for line in file:
            payload = decode_line(line)
            if payload is None:
                return None
            last, last_at = payload, offset
            offset += len(line)
            count += 1
    return last_at if count and last == _trailer(count - 1) else None


def _validated_payloads(path: Path, limit: int) -> Iterator[tuple[int, bytes]]:
    """(offset, payload) of the lines before byte ``limit``, without checking them again: the
    file was validated just before (checksums are a fifth of the time it takes to load)."""
    offset = 0
    with path.open("rb") as file:
        for line in file:
            if offset >= limit:
                return
            yield offset, line[9:-1]
            offset += len(line)


def _delete_older_snapshots(directory: Path, generation: int) -> None:
    for path in directory.iterdir():
        match = SNAPSHOT_FILE.fullmatch(path.name)
        if match and int(match[1]) < generation:
            path.unlink(missing_ok=True)


def _trailer(count: int) -> bytes:
    return b'{"snapshot_end": %d}' % count
