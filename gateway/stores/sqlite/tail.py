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
    """A node's search rows in the tail (its tokens and their ranks), and the versions they
    are seen between: one object a node, not one a row (a row costs a list slot)."""

    __slots__ = ("added", "label", "newer", "nid", "node_id", "ranks", "removed", "session")

    def __init__(self, nid: int, node: NodeRecord, rows: list[tuple[Any, ...]], added: int) -> None:
        self.nid = nid
        self.node_id = node.id
        self.session = node.session_id
        self.label = node.label.value
        self.newer = rows[0][2] if rows else 0
        self.ranks: dict[str, int] = {row[0]: row[1] for row in rows}
        self.added = added
        self.removed = FOREVER

    def rows(self) -> list[tuple[Any, ...]]:
        """Its ``terms`` rows."""
        return [
            (token, rank, self.newer, self.nid, self.label) for token, rank in self.ranks.items()
        ]


# A node's match in the tail: (terms matched, best rank, newer, node id).
TailHit = tuple[int, int, int, str]


class Change:
    """What one staged change did, to undo it: the node's entry before (``None``: it was not
    pending) and after (``None``: it is not pending any more)."""

    __slots__ = ("after", "before", "nid")

    def __init__(self, nid: int, before: Entry | None, after: Entry | None) -> None:
        self.nid = nid
        self.before = before
        self.after = after


class Tail:
    """The pending nodes' search rows, versioned (see the module)."""

    def __init__(self, version: int) -> None:
        self._lock = threading.Lock()
        self.committed = version  # the number the last commit stored
        self._by_token: dict[str, list[Entry]] = {}  # the entries holding each token
        self._tokens: SortedList = SortedList()  # the keys of ``_by_token``
        # The pending nodes and their entries in the writer's state (staged changes included).
        self._pending: dict[int, Entry] = {}
        self._removed: list[Entry] = []  # removed entries a read may see, in removal order
        self._holds: dict[int, int] = {}  # floor version -> reads running from it
        self.rows = 0  # search rows in the writer's state: what a merge would move
        self._listed = 0  # slots in the lists of ``_by_token``
        self._unseen = 0  # of those, slots of entries no read can see any more

    # The writer's side (the event loop, under the store's write lock).

    def load(self, nodes: Iterable[tuple[int, NodeRecord, list[tuple[Any, ...]]]]) -> None:
        """The pending nodes of the database as opened (``rid``, node, its search rows)."""
        with self._lock:
            for rid, node, rows in nodes:
                self._pending[rid] = self._add(rid, node, rows, self.committed)

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
                entry = self._pending[rid]
                if rids and len(moved) + len(entry.ranks) > rows:
                    break
                rids.append(rid)
                moved.extend(entry.rows())
            return rids, moved

    def stage_put(
        self, rid: int, node: NodeRecord, rows: list[tuple[Any, ...]], version: int
    ) -> Change:
        """The node ``rid`` is pending with these rows from ``version`` on."""
        with self._lock:
            before = self._pending.get(rid)
            if before is not None:
                self._remove(before, version)
            after = self._pending[rid] = self._add(rid, node, rows, version)
            return Change(rid, before, after)

    def stage_drop(self, rid: int, version: int) -> Change | None:
        """The node ``rid`` is no longer pending from ``version`` on (deleted, or its rows
        merged into ``terms``); ``None`` when it was not pending."""
        with self._lock:
            before = self._pending.pop(rid, None)
            if before is None:
                return None
            self._remove(before, version)
            return Change(rid, before, None)

    def undo(self, changes: Sequence[Change]) -> None:
        """Undo staged changes (a rolled-back transaction's), newest first."""
        if not changes:
            return
        with self._lock:
            restored: set[int] = set()
            for change in reversed(changes):
                if change.after is not None:
                    self._discard(change.after)
                if change.before is None:
                    self._pending.pop(change.nid, None)
                else:
                    change.before.removed = FOREVER
                    self.rows += len(change.before.ranks)
                    restored.add(id(change.before))
                    self._pending[change.nid] = change.before
            if restored:
                self._removed = [entry for entry in self._removed if id(entry) not in restored]

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
                best: dict[int, tuple[int, Entry]] = {}
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
                        rank = entry.ranks[token]
                        kept = best.get(entry.nid)
                        if kept is None or rank < kept[0]:
                            best[entry.nid] = (rank, entry)
                for nid, (rank, entry) in best.items():
                    hit = found.get(nid)
                    if hit is None:
                        found[nid] = (1, rank, entry.newer, entry.node_id)
                    else:
                        found[nid] = (hit[0] + 1, min(hit[1], rank), hit[2], hit[3])
        return found

    # Inside the lock.

    def _add(self, rid: int, node: NodeRecord, rows: list[tuple[Any, ...]], version: int) -> Entry:
        entry = Entry(rid, node, rows, version)
        by_token = self._by_token
        for token in entry.ranks:
            listed = by_token.get(token)
            if listed is None:
                by_token[token] = [entry]
                self._tokens.add(token)
            else:
                listed.append(entry)
        self.rows += len(entry.ranks)
        self._listed += len(entry.ranks)
        return entry

    def _remove(self, entry: Entry, version: int) -> None:
        entry.removed = version
        self._removed.append(entry)
        self.rows -= len(entry.ranks)

    def _discard(self, entry: Entry) -> None:
        """Forget ``entry`` now (added by a change that is undone: no read saw it)."""
        self.rows -= len(entry.ranks) if entry.removed == FOREVER else 0
        self._listed -= len(entry.ranks)
        for token in entry.ranks:
            kept = [other for other in self._by_token[token] if other is not entry]
            if kept:
                self._by_token[token] = kept
            else:
                del self._by_token[token]
                self._tokens.remove(token)

    def _drop_unseen(self) -> None:
        """Forget removed entries that neither a running read nor a later one can see: at
        once they only stop being counted; the lists they are in are swept when such entries
        fill half of them (each sweep costs the tail's size: amortised O(1) per entry)."""
        floor = min(self._holds, default=self.committed)
        floor = min(floor, self.committed)
        count = 0
        for entry in self._removed:
            if entry.removed > floor:
                break
            self._unseen += len(entry.ranks)
            count += 1
        if not count:
            return
        del self._removed[:count]
        if self._unseen * 2 < self._listed:
            return
        for token in list(self._by_token):
            kept = [entry for entry in self._by_token[token] if entry.removed > floor]
            if kept:
                self._by_token[token] = kept
            else:
                del self._by_token[token]
                self._tokens.remove(token)
        self._listed = sum(map(len, self._by_token.values()))
        self._unseen = 0
