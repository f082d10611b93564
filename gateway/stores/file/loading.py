"""Start-up of the file store: the newest snapshot plus the log after it, into a ``MemoryGraph``.

A record whose checksum is valid but whose payload cannot be applied (not JSON, a field missing
or of the wrong type, an unknown label) stops the start with a ``CorruptLogError`` naming the
file, the byte offset, what is wrong and what to do — never a bare ``KeyError`` from deep inside.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

from gateway.stores.file.codec import apply_op, decode
from gateway.stores.file.framing import CorruptLogError
from gateway.stores.file.graph import MemoryGraph
from gateway.stores.file.log import RecordLog
from gateway.stores.file.snapshot import read_latest_snapshot_located

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Loaded", "load"]

# What a damaged payload raises while it is decoded and applied (a JSON error is a ValueError).
_BAD_PAYLOAD = (KeyError, ValueError, TypeError, AttributeError, IndexError)


class Loaded:
    """What ``load`` returns: the open log, the graph, and the ops replayed from the log after
    the snapshot (they count towards the next snapshot, as if the store had not restarted)."""

    __slots__ = ("graph", "log", "log_ops")

    def __init__(self, log: RecordLog, graph: MemoryGraph, log_ops: int) -> None:
        self.log, self.graph, self.log_ops = log, graph, log_ops


def load(directory: Path, fsync: bool) -> Loaded:
    """Open the log and rebuild the graph (blocking); the log is closed again on an error."""
    log = RecordLog.open(directory, fsync=fsync)
    try:
        graph, log_ops = replay(directory, log)
    except BaseException:
        log.close_now()
        raise
    return Loaded(log, graph, log_ops)


def replay(directory: Path, log: RecordLog) -> tuple[MemoryGraph, int]:
    """The graph of the newest snapshot and every log record after it; the log's op count."""
    graph = MemoryGraph()
    strings: dict[str, str] = {}
    after, log_ops = -1, 0
    snapshot = read_latest_snapshot_located(directory)
    # The graph holds no reference cycles (reference counting frees it), so the cyclic
    # collector only rescans the growing heap while loading; pause it, then move what was
    # loaded out of its generations so serving never walks the whole graph either.
    gc.disable()
    try:
        with graph.deferred_terms():
            if snapshot is not None:
                after, path, records = snapshot
                for offset, payload in records:
                    try:
                        apply_op(graph, decode(payload), strings)
                    except _BAD_PAYLOAD as exc:
                        raise _bad_snapshot_line(path, offset, exc) from None
            for path, offset, payload in log.replay_located(after_generation=after):
                try:
                    ops = decode(payload)["ops"]
                    for op in ops:
                        apply_op(graph, op, strings)
                except _BAD_PAYLOAD as exc:
                    raise _bad_log_record(path, offset, exc) from None
                log_ops += len(ops)
    finally:
        gc.enable()
    gc.freeze()
    return graph, log_ops


def _problem(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"the field {exc} is missing"
    return f"{type(exc).__name__}: {exc}"


def _bad_log_record(path: Path, offset: int, exc: BaseException) -> CorruptLogError:
    return CorruptLogError(
        f"the record in {path} at byte offset {offset} has a valid checksum but cannot be "
        f"applied ({_problem(exc)}); refusing to start without it: restore the file from a "
        f"backup, or, to start without this record and every later one, cut the file there "
        f"(`truncate -s {offset} {path}`) and move newer log generations aside"
    )


def _bad_snapshot_line(path: Path, offset: int, exc: BaseException) -> CorruptLogError:
    return CorruptLogError(
        f"the snapshot {path} holds a record at byte offset {offset} that has a valid checksum "
        f"but cannot be applied ({_problem(exc)}); refusing to start from it: restore it from "
        "a backup (moving it aside loses the records of the log generations it covers, which "
        "were deleted when it was written)"
    )
