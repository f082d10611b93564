"""The search index's tail: the search rows of recently written nodes, in memory.

A new node's search rows (~26, up to ~45 for a paper) would each land on their own page of
``terms``, a B-tree ordered by token; so they are not written there when the node is. The
node's ``rid`` goes into ``pending`` (one small row, appended), and its rows into this tail;
``SqliteStore`` moves them into ``terms`` later in large sorted batches (``merge``: one
transaction each), when the writer is idle or the tail grows past a bound. Invariant, in
every committed state: a node in ``pending`` has no rows in ``terms`` (its rows are the ones
``schema.term_rows`` derives from the stored node, held here), any other node has exactly
its rows in ``terms``. On open the tail is rebuilt from ``pending`` and the nodes.

Readers see the database through snapshots, so the tail keeps versions: every commit that
changes it stores a new number in ``meta`` (``tail``) with the change, and an entry is seen
by a read whose snapshot holds a number ``v`` when ``added <= v < removed``. A transaction's
changes are staged here under the number its commit will store (invisible to every snapshot
until that commit) and undone when it is rolled back. Entries a snapshot may still need stay
until no read that began before their removal is running (``hold``); then they are dropped.

The writer (the event loop) changes the tail and readers (their threads) search it, under one
lock held for a few microseconds per change and for the matching part of a search.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sortedcontainers import SortedList

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from resolvers.records import NodeRecord

FOREVER = sys.maxsize  # ``removed`` of an entry no commit has removed


class Entry:
    """One search row of a node in the tail, and the versions it is seen between."""

    __slots__ = ("added", "label", "newer", "nid", "node_id", "rank", "removed", "session", "token")

    def __init__(
        self, row: tuple[Any, ...], node_id: str, session: str, added: int, removed: int = FOREVER
    ) -> None:
        self.token, self.rank, self.newer, self.nid, self.label = row
        self.node_id = node_id
        self.session = session
        self.added = added
        self.removed = removed


# A node's match in the tail: (terms matched, best rank, newer, node id).
TailHit = tuple[int, int, int, str]


class Change:
    """What one staged change did, to undo it: the entries it added and those it removed, and
    what ``pending`` held for the node before (``None``: the node was not pending)."""

    __slots__ = ("added", "before", "nid", "removed")

    def __init__(
        self, nid: int, before: list[Entry] | None, added: list[Entry], removed: list[Entry]
    ) -> None:
        self.nid = nid
        self.before = before
        self.added = added
        self.removed = removed


class Tail:
    """The pending nodes' search rows, versioned (see the module)."""

    def __init__(self, version: int) -> None:
        self._lock = threading.Lock()
        self.committed = version  # the number the last commit stored
        self._by_token: dict[str, list[Entry]] = {}
        self._tokens: SortedList = SortedList()  # the keys of ``_by_token``
        # The pending nodes and their entries in the writer's state (staged changes included).
        self._pending: dict[int, list[Entry]] = {}
        self._removed: list[Entry] = []  # removed entries not dropped yet, in removal order
        self._holds: dict[int, int] = {}  # floor version -> reads running from it
        self.rows = 0  # entries in the writer's state: what a merge would move

    # The writer's side (the event loop, under the store's write lock).

    def load(self, nodes: Iterable[tuple[int, NodeRecord, list[tuple[Any, ...]]]]) -> None:
        """The pending nodes of the database as opened (``rid``, node, its search rows)."""
        with self._lock:
            for rid, node, rows in nodes:
                self._pending[rid] = self._add(rows, node, self.committed)

    def is_pending(self, rid: int) -> bool:
        return rid in self._pending

    def pending_rids(self) -> list[int]:
        return sorted(self._pending)

    def oldest(self, rows: int) -> tuple[list[int], list[tuple[Any, ...]]]:
        """The oldest pending nodes (by ``rid``) with about ``rows`` search rows in all, and
        those rows (``terms`` rows); call with no transaction open."""
        with self._lock:
            rids: list[int] = []
            moved: list[tuple[Any, ...]] = []
            for rid in sorted(self._pending):
                entries = self._pending[rid]
                if rids and len(moved) + len(entries) > rows:
                    break
                rids.append(rid)
                moved.extend(
                    (entry.token, entry.rank, entry.newer, entry.nid, entry.label)
                    for entry in entries
                )
            return rids, moved

    def stage_put(
        self, rid: int, node: NodeRecord, rows: list[tuple[Any, ...]], version: int
    ) -> Change:
        """The node ``rid`` is pending with these rows from ``version`` on."""
        with self._lock:
            before = self._pending.get(rid)
            removed = self._remove(before or (), version)
            added = self._add(rows, node, version)
            self._pending[rid] = added
            return Change(rid, before, added, removed)

    def stage_drop(self, rid: int, version: int) -> Change | None:
        """The node ``rid`` is no longer pending from ``version`` on (deleted, or its rows
        merged into ``terms``); ``None`` when it was not pending."""
        with self._lock:
            before = self._pending.pop(rid, None)
            if before is None:
                return None
            return Change(rid, before, [], self._remove(before, version))

    def undo(self, changes: Sequence[Change]) -> None:
        """Undo staged changes (a rolled-back transaction's), newest first."""
        with self._lock:
            for change in reversed(changes):
                for entry in change.removed:
                    entry.removed = FOREVER
                    self.rows += 1
                gone = set(map(id, change.removed))
                if gone:
                    self._removed = [entry for entry in self._removed if id(entry) not in gone]
                self._discard(change.added)
                self.rows -= len(change.added)
                if change.before is None:
                    self._pending.pop(change.nid, None)
                else:
                    self._pending[change.nid] = change.before

    def commit(self, version: int) -> None:
        """The commit that stored ``version`` is durable: later snapshots see it."""
        with self._lock:
            self.committed = version
            self._drop_unseen()

    # The readers' side (any thread).

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Keep what a snapshot taken inside may see (call before the snapshot is taken)."""
        with self._lock:
            floor = self.committed
            self._holds[floor] = self._holds.get(floor, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._holds[floor] - 1
                if left:
                    self._holds[floor] = left
                else:
                    del self._holds[floor]
                    self._drop_unseen()

    def hits(
        self,
        terms: Sequence[str],
        version: int,
        session_id: str | None,
        labels: Sequence[str] | None,
    ) -> dict[int, TailHit]:
        """The tail's matches seen at ``version``, by ``rid``: a term matches a token it is a
        prefix of (``resolvers.text.match_rank``)."""
        found: dict[int, TailHit] = {}
        wanted = None if labels is None else frozenset(labels)
        with self._lock:
            for term in dict.fromkeys(terms):
                best: dict[int, Entry] = {}
                for token in self._tokens.irange(minimum=term):
                    if not token.startswith(term):
                        break
                    for entry in self._by_token[token]:
                        if not entry.added <= version < entry.removed:
                            continue
                        if session_id is not None and entry.session != session_id:
                            continue
                        if wanted is not None and entry.label not in wanted:
                            continue
                        kept = best.get(entry.nid)
                        if kept is None or entry.rank < kept.rank:
                            best[entry.nid] = entry
                for nid, entry in best.items():
                    hit = found.get(nid)
                    if hit is None:
                        found[nid] = (1, entry.rank, entry.newer, entry.node_id)
                    else:
                        found[nid] = (hit[0] + 1, min(hit[1], entry.rank), hit[2], hit[3])
        return found

    # Inside the lock.

    def _add(self, rows: list[tuple[Any, ...]], node: NodeRecord, version: int) -> list[Entry]:
        entries = [Entry(row, node.id, node.session_id, version) for row in rows]
        for entry in entries:
            listed = self._by_token.get(entry.token)
            if listed is None:
                self._by_token[entry.token] = [entry]
                self._tokens.add(entry.token)
            else:
                listed.append(entry)
        self.rows += len(entries)
        return entries

    def _remove(self, entries: Iterable[Entry], version: int) -> list[Entry]:
        removed = [entry for entry in entries if entry.removed == FOREVER]
        for entry in removed:
            entry.removed = version
        self._removed.extend(removed)
        self.rows -= len(removed)
        return removed

    def _discard(self, entries: Iterable[Entry]) -> None:
        """Forget ``entries`` (no snapshot can see them)."""
        gone: dict[str, set[int]] = {}
        for entry in entries:
            gone.setdefault(entry.token, set()).add(id(entry))
        for token, ids in gone.items():
            kept = [entry for entry in self._by_token[token] if id(entry) not in ids]
            if kept:
                self._by_token[token] = kept
            else:
                del self._by_token[token]
                self._tokens.remove(token)

    def _drop_unseen(self) -> None:
        """Drop removed entries that neither a running read nor a later one can see."""
        floor = min(self._holds, default=self.committed)
        floor = min(floor, self.committed)
        count = 0
        for entry in self._removed:
            if entry.removed > floor:
                break
            count += 1
        if count:
            dropped, self._removed = self._removed[:count], self._removed[count:]
            self._discard(dropped)
