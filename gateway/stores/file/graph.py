"""The in-memory graph of the file store: records plus every index the port promises.

All methods are synchronous and O(result) (or O(log n) for chain positions); the store wraps
them in transactions and makes changes durable. Indexes:

* ``nodes`` by global id, ``_by_key`` by domain key, ``_versions`` by artifact id;
* live listing order (creation order) per label and per session, and per (session, label);
* adjacency per edge type, direction and node; edges per type and per (session, type);
* chains: a sorted list of ``(chain_at, seq, id)`` per ``(session, parent scope)`` and label
  (so the nearest member of one label is as cheap as the nearest member);
* search: token -> session -> id -> best rank of a field holding the token
  (``gateway.stores.file.terms``); a graph being loaded may leave it to be built afterwards
  (``deferred_terms``, then ``index_deferred_terms`` in steps): nothing else waits for it;
* parked edges by the id they wait for; the per-session ``seq`` counters.
"""

from __future__ import annotations

import heapq
import itertools
from operator import attrgetter
from typing import TYPE_CHECKING

from sortedcontainers import SortedList

from gateway.stores.file.groups import Groups, discard
from gateway.stores.file.terms import TermIndex
from resolvers.records import Direction, EdgeRecord, EdgeType, Label, NodeRecord, Page

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from contextlib import AbstractContextManager

    from resolvers.store import ChainPosition

_Ids = dict[str, None]  # an insertion-ordered set of ids
ChainId = tuple[str, str | None]
EdgeKey = tuple[EdgeType, str, str]
_source_of: Callable[[EdgeRecord], str] = attrgetter("source")
_target_of: Callable[[EdgeRecord], str] = attrgetter("target")


class MemoryGraph:
    """Nodes, edges and indexes. Not thread-safe; the event loop is its only user."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeRecord] = {}
        self.seq: dict[str, int] = {}
        self.parked: dict[str, dict[EdgeKey, EdgeRecord]] = {}
        self._order: dict[str, int] = {}
        self._counter = itertools.count(1)
        self._by_key: Groups[str] = Groups(str)  # a node id is its own key in its group
        self._versions: dict[str, dict[int, str]] = {}
        self._by_label: dict[Label, _Ids] = {}
        self._by_session: dict[str, _Ids] = {}
        self._by_session_label: dict[tuple[str, Label], _Ids] = {}
        self._all_by_session: dict[str, _Ids] = {}
        self._by_project: dict[str, _Ids] = {}
        # Per edge type, then node (not per node, then type): no dict per node and direction.
        self._out = {edge_type: Groups(_target_of) for edge_type in EdgeType}
        self._in = {edge_type: Groups(_source_of) for edge_type in EdgeType}
        self._by_type: dict[EdgeType, dict[tuple[str, str], EdgeRecord]] = {}
        self._by_session_type: dict[tuple[str, EdgeType], dict[tuple[str, str], None]] = {}
        # Creation order of the edges (kept when an edge is replaced), for lists across types.
        self._edge_order: dict[EdgeType, dict[tuple[str, str], int]] = {}
        self._edge_counter = itertools.count(1)
        self._chains: dict[ChainId, dict[Label, SortedList]] = {}
        self._terms = TermIndex()

    # --- nodes ---------------------------------------------------------------------------

    def put_node(self, node: NodeRecord) -> NodeRecord | None:
        """Insert or replace; returns the previous record. Only the indexes whose inputs
        changed are touched, so updating a node costs what the node costs."""
        old = self.nodes.get(node.id)
        if old is None:
            self._order[node.id] = next(self._counter)
        self.nodes[node.id] = node
        self._reindex(old, node)
        return old

    def delete_node(self, node_id: str) -> tuple[NodeRecord, list[EdgeRecord]] | None:
        """Remove a node and its edges; returns what was removed."""
        node = self.nodes.get(node_id)
        if node is None:
            return None
        edges = self._touching(node_id)
        for edge in edges:
            self.delete_edge(edge.type, edge.source, edge.target)
        del self.nodes[node_id]
        self._reindex(node, None)
        self._order.pop(node_id, None)
        return node, edges

    def deferred_terms(self) -> AbstractContextManager[None]:
        """Leave the search terms of the nodes put meanwhile out of the index (a load defers
        them, then ``index_deferred_terms`` adds them while the graph is already in use)."""
        return self._terms.deferred(self.nodes)

    @property
    def terms_complete(self) -> bool:
        """Whether every live node's terms are in the search index (``search`` needs it)."""
        return self._terms.complete

    def index_deferred_terms(self, limit: int) -> bool:
        """Index the terms of up to ``limit`` deferred nodes; True once none is left."""
        return self._terms.index_deferred(self.nodes, limit)

    def _reindex(self, old: NodeRecord | None, new: NodeRecord | None) -> None:
        if old is not None:
            self._by_key.remove(old.key, old.id)
            discard(self._all_by_session, old.session_id, old.id)
            if old.get("project_id") is not None:
                discard(self._by_project, str(old.get("project_id")), old.id)
        if new is not None:
            self._by_key.add(new.key, new.id)
            self._all_by_session.setdefault(new.session_id, {})[new.id] = None
            if new.label is Label.ARTIFACT and new.get("project_id") is not None:
                self._by_project.setdefault(str(new.get("project_id")), {})[new.id] = None
        self._reindex_version(old, new)
        if _position_or_none(old) != _position_or_none(new):
            if old is not None and old.seq > 0:
                self._chains[_chain_of(old)][old.label].discard(_position_of(old))
            if new is not None and new.seq > 0:
                labels = self._chains.setdefault(_chain_of(new), {})
                chain = labels.get(new.label)
                if chain is None:  # not setdefault: an unused SortedList costs microseconds
                    chain = labels[new.label] = SortedList()
                chain.add(_position_of(new))
        old_live = old is not None and not old.deleted
        new_live = new is not None and not new.deleted
        if old_live != new_live:
            node = new if new_live else old
            assert node is not None
            for index in self._listings(node):
                if not new_live:
                    index.pop(node.id, None)
                elif old is None:
                    index[node.id] = None  # a new node is the newest of all: it goes last
                else:
                    _insert_ordered(index, node.id, self._order)
        self._terms.update(old, new)

    def _reindex_version(self, old: NodeRecord | None, new: NodeRecord | None) -> None:
        if old is not None and old.label is Label.ARTIFACT:
            self._versions.get(str(old.get("artifact_id")), {}).pop(
                int(old.get("version", 0)), None
            )
        if new is not None and new.label is Label.ARTIFACT:
            self._versions.setdefault(str(new.get("artifact_id")), {})[
                int(new.get("version", 0))
            ] = new.id

    def _listings(self, node: NodeRecord) -> list[_Ids]:
        return [
            self._by_label.setdefault(node.label, {}),
            self._by_session.setdefault(node.session_id, {}),
            self._by_session_label.setdefault((node.session_id, node.label), {}),
        ]

    # --- edges ---------------------------------------------------------------------------

    def get_edge(self, edge_type: EdgeType, source: str, target: str) -> EdgeRecord | None:
        return self._out[edge_type].get(source, target)

    def put_edge(self, edge: EdgeRecord) -> EdgeRecord | None:
        """Insert or replace; returns the previous record."""
        old = self.get_edge(edge.type, edge.source, edge.target)
        self._out[edge.type].add(edge.source, edge)
        self._in[edge.type].add(edge.target, edge)
        pair = (edge.source, edge.target)  # one tuple shared by both indexes
        self._by_type.setdefault(edge.type, {})[pair] = edge
        if old is None:
            self._edge_order.setdefault(edge.type, {})[pair] = next(self._edge_counter)
        session = self._common_session(edge)
        if session is not None and old is None:
            self._by_session_type.setdefault((session, edge.type), {})[pair] = None
        return old

    def delete_edge(self, edge_type: EdgeType, source: str, target: str) -> EdgeRecord | None:
        old = self.get_edge(edge_type, source, target)
        if old is None:
            return None
        self._out[edge_type].remove(source, target)
        self._in[edge_type].remove(target, source)
        del self._by_type[edge_type][(source, target)]
        del self._edge_order[edge_type][(source, target)]
        session = self._common_session(old)
        if session is not None:
            self._by_session_type.get((session, edge_type), {}).pop((source, target), None)
        return old

    def record_count(self) -> int:
        """Nodes, edges, counters and parked edges: the records a snapshot of it holds."""
        edges = sum(len(by_pair) for by_pair in self._by_type.values())
        parked = sum(len(waiting) for waiting in self.parked.values())
        return len(self.nodes) + edges + len(self.seq) + parked

    def all_edges(self) -> Iterator[EdgeRecord]:
        for by_pair in self._by_type.values():
            yield from by_pair.values()

    def _common_session(self, edge: EdgeRecord) -> str | None:
        source, target = self.nodes.get(edge.source), self.nodes.get(edge.target)
        if source is None or target is None or source.session_id != target.session_id:
            return None
        return source.session_id

    def _touching(self, node_id: str) -> list[EdgeRecord]:
        return [
            edge
            for adjacency in (self._out, self._in)
            for by_node in adjacency.values()
            for edge in by_node.members(node_id)
        ]

    def expand(
        self, ids: Iterable[str], edge_type: EdgeType, direction: Direction
    ) -> list[EdgeRecord]:
        return (self._out if direction is Direction.OUT else self._in)[edge_type].members_of(ids)

    def edges_among(self, ids: Sequence[str], types: Sequence[EdgeType] | None) -> list[EdgeRecord]:
        wanted = set(ids)
        return [
            edge
            for edge_type in (EdgeType if types is None else dict.fromkeys(types))
            for edge in self._out[edge_type].members_in(wanted)
            if edge.target in wanted
        ]

    # --- lookups and listings ------------------------------------------------------------

    def by_key(self, key: str) -> list[NodeRecord]:
        return [self.nodes[node_id] for node_id in self._by_key.members(key)]

    def session_ids(self, session_id: str) -> list[str]:
        return list(self._all_by_session.get(session_id, {}))

    def project_artifacts(self, project_id: str) -> list[NodeRecord]:
        return [self.nodes[node_id] for node_id in self._by_project.get(project_id, {})]

    def versions(self, artifact_id: str) -> list[NodeRecord]:
        versions = self._versions.get(artifact_id, {})
        return [self.nodes[versions[number]] for number in sorted(versions)]

    def list_nodes(
        self, labels: Sequence[Label] | None, session_id: str | None, limit: int, offset: int
    ) -> Page[NodeRecord]:
        indexes = self._node_indexes(labels, session_id)
        total = sum(len(index) for index in indexes)
        newest_first = heapq.merge(
            *(reversed(index) for index in indexes), key=lambda i: -self._order[i]
        )
        ids = list(itertools.islice(newest_first, offset, offset + limit))
        return Page([self.nodes[node_id] for node_id in ids], total, offset + len(ids) < total)

    def _node_indexes(self, labels: Sequence[Label] | None, session_id: str | None) -> list[_Ids]:
        if labels is None:
            return [self._by_session.get(session_id or "", {})]
        if session_id is None:
            return [self._by_label.get(label, {}) for label in set(labels)]
        return [self._by_session_label.get((session_id, label), {}) for label in set(labels)]

    def list_edges(
        self, types: Sequence[EdgeType], session_id: str | None, limit: int, offset: int
    ) -> Page[EdgeRecord]:
        """Newest first across the types (creation order), whatever order they are given in."""
        runs: list[list[tuple[EdgeType, tuple[str, str]]]] = []
        for edge_type in dict.fromkeys(types):
            index = (
                self._by_session_type.get((session_id, edge_type), {})
                if session_id is not None
                else self._by_type.get(edge_type, {})
            )
            # An index is in creation order: a replaced edge keeps its place.
            runs.append(
                [
                    (edge_type, pair)
                    for pair in reversed(index)
                    if self._live(pair[0]) and self._live(pair[1])
                ]
            )
        total = sum(len(run) for run in runs)
        order = self._edge_order
        newest = heapq.merge(*runs, key=lambda key: -order[key[0]][key[1]])
        edges = [
            self._by_type[edge_type][pair]
            for edge_type, pair in itertools.islice(newest, offset, offset + limit)
        ]
        return Page(edges, total, offset + len(edges) < total)

    def _live(self, node_id: str) -> bool:
        node = self.nodes.get(node_id)
        return node is not None and not node.deleted

    # --- chains, search, counters --------------------------------------------------------

    def chain(self, session_id: str, scope_key: str | None) -> list[NodeRecord]:
        lists = self._chains.get((session_id, scope_key), {}).values()
        return [self.nodes[node_id] for _, _, node_id in heapq.merge(*lists)]

    def chain_neighbours(
        self, session_id: str, scope_key: str | None, position: ChainPosition
    ) -> tuple[NodeRecord | None, NodeRecord | None]:
        before: tuple[str, int, str] | None = None
        after: tuple[str, int, str] | None = None
        for members in self._chains.get((session_id, scope_key), {}).values():
            low = members.bisect_left((position[0], position[1], ""))
            high = members.bisect_right((position[0], position[1], "\U0010ffff"))
            if low > 0 and (before is None or members[low - 1] > before):
                before = members[low - 1]
            if high < len(members) and (after is None or members[high] < after):
                after = members[high]
        return (
            self.nodes[before[2]] if before is not None else None,
            self.nodes[after[2]] if after is not None else None,
        )

    def chain_before(
        self,
        session_id: str,
        scope_key: str | None,
        position: ChainPosition,
        after: ChainPosition | None,
        label: Label | None,
        limit: int | None,
    ) -> list[NodeRecord]:
        """Members strictly between ``after`` (the start) and ``position``, nearest first."""
        chains = self._chains.get((session_id, scope_key), {})
        lists = [chains[label]] if label in chains else [] if label else list(chains.values())
        found: list[tuple[str, int, str]] = []
        for members in lists:
            low = 0 if after is None else members.bisect_right((after[0], after[1], "\U0010ffff"))
            high = members.bisect_left((position[0], position[1], ""))
            if limit is not None:
                low = max(low, high - limit)
            found.extend(members.islice(low, high, reverse=True))
        found.sort(reverse=True)
        return [self.nodes[node_id] for _, _, node_id in found[:limit]]

    def search(self, term: str, session_id: str | None) -> dict[str, int]:
        """Live nodes with a token starting with ``term``: id -> best rank of such a token."""
        return self._terms.search(term, session_id)

    def next_seq(self, session_id: str) -> int:
        value = self.seq.get(session_id, 0) + 1
        self.seq[session_id] = value
        return value


def _chain_of(node: NodeRecord) -> ChainId:
    parent = node.get("parent_subtask_id")
    return node.session_id, str(parent) if parent is not None else None


def _position_or_none(node: NodeRecord | None) -> tuple[ChainId, tuple[str, int, str]] | None:
    if node is None or node.seq <= 0:
        return None
    return _chain_of(node), _position_of(node)


def _position_of(node: NodeRecord) -> tuple[str, int, str]:
    return str(node.get("chain_at", "")), node.seq, node.id


def _insert_ordered(index: _Ids, node_id: str, order: dict[str, int]) -> None:
    """Insert keeping creation order (a node that comes back to life may be older than some)."""
    if not index or order[next(reversed(index))] < order[node_id]:
        index[node_id] = None
        return
    items = list(index)
    items.append(node_id)
    items.sort(key=order.__getitem__)
    index.clear()
    index.update(dict.fromkeys(items))
