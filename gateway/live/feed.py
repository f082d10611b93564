"""The change feed: live updates shared by every replica of a store that keeps one (Neo4j).

Each committed write transaction also appends, in the same transaction, one feed entry per
session it changed: the session's next feed number and its changes as JSON (``encode_changes``).
So the feed commits or rolls back with the data, and a session's numbers follow its commit order
whichever replica wrote (``docs/live-updates.md``).

``FeedTailer`` brings the entries of every replica to this process's ``EventBus``: while anyone
here subscribes, it polls the entries after each watched session's cursor (one statement for all
watched sessions) every ``POLL_SECONDS``, or at once when an own commit waits for an earlier
entry of another replica. It also trims entries older than ``RETENTION_SECONDS`` (at most one
trim per ``TRIM_SECONDS``, from the poll and after commits), so the feed stays bounded whether
or not anyone subscribes. A watched session whose next entry was trimmed before it was read
(a replica stalled longer than the retention) loses its subscribers as lagging.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from gateway.live.bus import GraphChange
from resolvers.errors import StoreUnavailableError
from resolvers.records import EdgeRecord, EdgeType, Label, NodeRecord

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from gateway.live.bus import EventBus

logger = logging.getLogger(__name__)

POLL_SECONDS: Final = 0.1
RETENTION_SECONDS: Final = 600
TRIM_SECONDS: Final = 60.0
BATCH: Final = 256
"""Entries read per session and poll."""

FeedEntry = tuple[str, int, str]
"""``(session_id, number, changes as JSON)``."""


@runtime_checkable
class FeedTransaction(Protocol):
    """A transaction that appends its changes to the store's feed before it commits."""

    async def append_feed(self, entries: Mapping[str, str]) -> dict[str, int]:
        """Append one entry per session (``session_id -> changes as JSON``); returns the
        number each entry got. Numbers of a session follow its commit order."""
        ...


@runtime_checkable
class FeedSource(Protocol):
    """A store whose feed can be read and trimmed."""

    async def feed_heads(self, session_ids: Sequence[str]) -> dict[str, int]:
        """The last number of each session's feed (0 when it has none)."""
        ...

    async def feed_after(self, cursors: Mapping[str, int], limit: int) -> list[FeedEntry]:
        """Up to ``limit`` entries per session after its cursor, per session in order."""
        ...

    async def trim_feed(self, older_than_seconds: float) -> int:
        """Delete entries older than that (a bounded batch); returns how many."""
        ...


def encode_changes(changes: Iterable[GraphChange]) -> dict[str, str]:
    """The feed entries of one commit: its changes grouped by session, as JSON."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for change in changes:
        row: dict[str, Any] = {"removed": change.removed}
        if change.node is not None:
            row["node"] = _node(change.node)
        if change.edge is not None:
            edge = change.edge
            row["edge"] = [edge.type.value, edge.source, edge.target, dict(edge.props)]
        grouped.setdefault(change.session_id, []).append(row)
    return {
        session_id: json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
        for session_id, rows in sorted(grouped.items())
    }


def decode_changes(session_id: str, payload: str) -> list[GraphChange]:
    changes: list[GraphChange] = []
    for row in json.loads(payload):
        node = row.get("node")
        edge = row.get("edge")
        changes.append(
            GraphChange(
                session_id,
                node=_record(node) if node is not None else None,
                edge=EdgeRecord(EdgeType(edge[0]), edge[1], edge[2], edge[3]) if edge else None,
                removed=bool(row["removed"]),
            )
        )
    return changes


def _node(node: NodeRecord) -> dict[str, Any]:
    return {
        "id": node.id,
        "label": node.label.value,
        "key": node.key,
        "session": node.session_id,
        "created": node.created_at.isoformat(),
        "props": dict(node.props),
        "seq": node.seq,
    }


def _record(value: Mapping[str, Any]) -> NodeRecord:
    return NodeRecord(
        value["id"],
        Label(value["label"]),
        value["key"],
        value["session"],
        datetime.fromisoformat(value["created"]),
        value["props"],
        int(value["seq"]),
    )


class FeedTailer:
    """Polls ``source``'s feed for the sessions subscribed to on ``bus``."""

    def __init__(self, source: FeedSource, bus: EventBus) -> None:
        self._source = source
        self._bus = bus
        self._poller: asyncio.Task[None] | None = None
        self._trimmer: asyncio.Task[None] | None = None
        self._trimmed_at = time.monotonic()
        bus.add_watcher(self.watch)

    def watch(self) -> None:
        """Someone subscribed: poll until nobody is left."""
        if self._poller is None:
            self._poller = asyncio.get_running_loop().create_task(self._poll_while_watched())

    def committed(self) -> None:
        """A write committed: trim the feed when the last trim is ``TRIM_SECONDS`` old."""
        if self._trimmer is None and time.monotonic() - self._trimmed_at >= TRIM_SECONDS:
            self._trimmed_at = time.monotonic()
            self._trimmer = asyncio.get_running_loop().create_task(self._trim())

    async def _poll_while_watched(self) -> None:
        while True:
            if not self._bus.feed_cursors():
                self._poller = None  # no await since the check: a new watch() starts anew
                return
            try:
                await self.poll()
            except StoreUnavailableError as exc:
                logger.debug("change feed not readable now: %s", exc.message)
            self.committed()
            self._bus.behind.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_SECONDS):
                    await self._bus.behind.wait()

    async def poll(self) -> None:
        """Start the cursors not known yet at their heads, then deliver what follows them."""
        unknown = [session for session, at in self._bus.feed_cursors().items() if at is None]
        if unknown:
            for session_id, head in (await self._source.feed_heads(unknown)).items():
                self._bus.start_feed(session_id, head)
        cursors = {s: at for s, at in self._bus.feed_cursors().items() if at is not None}
        if not cursors:
            return
        expected = {session_id: at + 1 for session_id, at in cursors.items()}
        for session_id, number, payload in await self._source.feed_after(cursors, BATCH):
            if number > expected.pop(session_id, number):
                self._bus.lose(session_id)  # the entries before it were trimmed unread
                continue
            self._bus.deliver(session_id, number, decode_changes(session_id, payload))

    async def _trim(self) -> None:
        try:
            trimmed = await self._source.trim_feed(RETENTION_SECONDS)
            if trimmed:
                logger.debug("trimmed %d change feed entries", trimmed)
        except StoreUnavailableError as exc:
            logger.debug("change feed not trimmed now: %s", exc.message)
        finally:
            self._trimmer = None

    async def aclose(self) -> None:
        self._bus.remove_watcher(self.watch)
        for task in (self._poller, self._trimmer):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._poller = self._trimmer = None
