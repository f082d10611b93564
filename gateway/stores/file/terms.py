"""``TermIndex``: the file store's search index, token -> session -> id -> best field rank.

A term matches the tokens it is a prefix of (``resolvers.text``); a sorted token list finds
them. The index may be built after its graph is loaded: ``deferred`` leaves the nodes put
meanwhile out of it, and ``index_deferred`` adds them in steps while the graph is in use. A
change to a node still waiting is left to that build, which indexes whatever record is current
when it gets there: no record is indexed twice, none is left stale.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sortedcontainers import SortedList

from gateway.stores.file.groups import discard
from resolvers.text import token_ranks

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from resolvers.records import NodeRecord


class TermIndex:
    """The terms of every live node of a graph, or of all but the deferred ones while built."""

    def __init__(self) -> None:
        self._terms: dict[str, dict[str, dict[str, int]]] = {}
        self._tokens: SortedList = SortedList()
        # Ids whose current record's terms are missing, while the index is built after a
        # load; None once it is complete.
        self._unindexed: set[str] | None = None
        self._deferring = False
        self._queue: Iterator[str] = iter(())  # the deferred ids, in load order

    @contextmanager
    def deferred(self, nodes: Mapping[str, NodeRecord]) -> Iterator[None]:
        """Leave out the terms of the nodes put meanwhile into ``nodes`` (the graph's table)."""
        self._unindexed = set() if self._unindexed is None else self._unindexed
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
            if self._unindexed:
                # In load order, not the set's: a session's nodes were loaded together, so
                # the index entries of its terms are still in the cache for the next node.
                unindexed = self._unindexed
                self._queue = iter([i for i in nodes if i in unindexed])
            else:
                self._unindexed = None

    @property
    def complete(self) -> bool:
        """Whether every live node's terms are in the index (``search`` needs it)."""
        return self._unindexed is None

    def index_deferred(self, nodes: Mapping[str, NodeRecord], limit: int) -> bool:
        """Index the terms of up to ``limit`` deferred nodes; True once none is left."""
        unindexed = self._unindexed
        if unindexed is None:
            return True
        for node_id in itertools.islice(self._queue, limit):
            if node_id in unindexed:  # else deleted meanwhile
                unindexed.remove(node_id)
                node = nodes[node_id]
                if not node.deleted:
                    self._add(node, token_ranks(node.props).items())
        if unindexed:
            return False
        self._unindexed, self._queue = None, iter(())
        return True

    def update(self, old: NodeRecord | None, new: NodeRecord | None) -> None:
        """Follow a node from ``old`` to ``new`` (``None``: absent); only changed terms move."""
        if self._deferred(old, new):
            return
        old_terms = token_ranks(old.props) if old is not None and not old.deleted else {}
        new_terms = token_ranks(new.props) if new is not None and not new.deleted else {}
        if old is not None:
            self._remove(old, old_terms.keys() - new_terms.keys())
        if new is not None:
            changed = new_terms.items() - old_terms.items()
            self._add(new, changed if old_terms else new_terms.items())

    def search(self, term: str, session_id: str | None) -> dict[str, int]:
        """Live nodes with a token starting with ``term``: id -> best rank of such a token."""
        if self._unindexed is not None:
            raise RuntimeError("the search index is still being built")
        found: dict[str, int] = {}
        for token in self._tokens.irange(minimum=term):
            if not token.startswith(term):
                break
            sessions = self._terms[token]
            if session_id is not None:
                sessions = {session_id: sessions[session_id]} if session_id in sessions else {}
            for ranks in sessions.values():
                for node_id, rank in ranks.items():
                    if rank < found.get(node_id, rank + 1):
                        found[node_id] = rank
        return found

    def _deferred(self, old: NodeRecord | None, new: NodeRecord | None) -> bool:
        """Whether this change is left to the build (its node's terms are deferred)."""
        unindexed = self._unindexed
        if unindexed is None:
            return False
        node = new if new is not None else old
        assert node is not None
        if node.id in unindexed:
            if new is None:
                unindexed.discard(node.id)
            return True
        if old is None and self._deferring:
            unindexed.add(node.id)
            return True
        return False

    def _add(self, node: NodeRecord, terms: Iterable[tuple[str, int]]) -> None:
        by_token, session_id, node_id = self._terms, node.session_id, node.id
        for token, rank in terms:
            sessions = by_token.get(token)
            if sessions is None:
                sessions = by_token[token] = {}
                self._tokens.add(token)
            ids = sessions.get(session_id)
            if ids is None:
                ids = sessions[session_id] = {}
            ids[node_id] = rank

    def _remove(self, node: NodeRecord, terms: Iterable[str]) -> None:
        for token in terms:
            sessions = self._terms.get(token, {})
            discard(sessions, node.session_id, node.id)
            if not sessions and token in self._terms:
                del self._terms[token]
                self._tokens.discard(token)
