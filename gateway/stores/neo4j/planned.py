"""A write transaction of two statements: the plan's snapshot, then the rules' changes.

``PlannedTransaction`` is the ``GraphTransaction`` an event's rules run on (``Neo4jStore.write``).
``prefetch(plan)`` loads what the plan names in one statement (``plans.PREFETCH``); the rules'
reads are then answered from that snapshot and the transaction's own changes, and their changes
are buffered and applied in one statement (``plans.APPLY``) when the work ends, or when
``append_feed`` adds the change feed entries (which go in the same statement).

Every answer is exactly the one the primitive statement would give in the same transaction.
What the snapshot knows:

* a node named or reached by the plan: its record, or that it does not exist;
* the edges among all those nodes (so whether an edge between two of them exists), and every
  edge of the adjacency the plan named, and of a node that did not exist;
* the chain neighbours of each probed position, the event's own steps excluded (they may
  move in this transaction: the overlay places them from their current records);
* all versions of the named artifacts, the named keys, the session's goals and uploads, the
  edges parked for each named node and the ``seq`` values allocated for the new steps.

Anything else (a read the plan did not name, a node write whose stored record is unknown, a
node deletion) first applies the buffered changes
and then runs the primitive statement (``_Neo4jTransaction``): still correct, one statement more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway.stores.neo4j import plans
from gateway.stores.neo4j.reads import label_of
from gateway.stores.neo4j.records import (
    chain_pos,
    chain_scope,
    edge_properties,
    node_properties,
    parked_props,
    same_search_text,
    take_created_at,
    to_edge,
    to_node,
    to_parked,
)
from resolvers.errors import KeyOwnedByOtherSessionError
from resolvers.records import Direction, EdgeRecord, EdgeType, Label, NodeRecord, Page

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from gateway.stores.neo4j.store import _Neo4jTransaction
    from resolvers.plan import ReadPlan
    from resolvers.records import SearchHit
    from resolvers.store import ChainPosition, SessionCleanups

Identity = tuple[EdgeType, str, str]
NEW = 1  # the first element of a new node's listing order: after every stored one


@dataclass(slots=True)
class _EdgeChange:
    initial: EdgeRecord | None  # as stored before the buffered changes
    deleted: bool = False  # deleted while stored (a later re-creation is a new edge)


class PlannedTransaction:
    """Reads from the plan's snapshot, buffers the changes (module docstring)."""

    def __init__(self, live: _Neo4jTransaction, session_id: str) -> None:
        self._live = live
        self._session = session_id
        self._forget()
        self._pending_nodes: dict[str, NodeRecord | None] = {}  # id -> stored record before
        self._pending_edges: dict[Identity, _EdgeChange] = {}
        self._parks: dict[tuple[str, Identity], EdgeRecord] = {}
        self._unparks: dict[tuple[str, Identity], EdgeRecord] = {}

    def _forget(self) -> None:
        self._plan_session: str | None = None
        self._nodes: dict[str, NodeRecord | None] = {}
        self._order: dict[str, tuple[int, int]] = {}
        self._edge_known: set[str] = set()  # ids whose edges to each other are all in _edges
        self._complete: set[str] = set()  # ids whose every edge is in _edges
        self._adjacent: set[tuple[str, EdgeType, Direction]] = set()
        self._edges: dict[Identity, EdgeRecord] = {}
        self._artifacts: set[str] = set()
        self._keys: set[tuple[str, Label]] = set()
        self._listings: set[Label] = set()
        self._chains: dict[tuple[str, ChainPosition], tuple[str, ...]] = {}
        self._own: tuple[str, ...] = ()
        self._parked: dict[str, list[EdgeRecord]] = {}
        self._seqs: list[int] = []
        self._created = 0

    # --- loading ---------------------------------------------------------------------------

    async def prefetch(self, plan: ReadPlan) -> None:
        await self.flush()
        self._forget()
        rows = _plan_rows(plan)
        (record,) = await self._live._fetch(
            plans.PREFETCH, rows=plans.padded(rows), args=plans.arguments(plan.session_id)
        )
        self._plan_session = plan.session_id
        for value, order in record["nodes"]:
            node = to_node(value)
            self._nodes[node.id] = node
            self._order[node.id] = (0, int(order or 0))
            self._edge_known.add(node.id)
        for node_id in (*plan.nodes, *plan.steps):
            if node_id not in self._nodes and label_of(node_id) is not None:
                self._nodes[node_id] = None  # absent: no edges either
                self._edge_known.add(node_id)
                self._complete.add(node_id)
        for edge_type, source, target, props in record["edges"]:
            edge = to_edge(edge_type, source, target, props)
            self._edges[edge.identity] = edge
        self._adjacent = set(plan.adjacent)
        self._artifacts = set(plan.artifacts)
        self._keys = set(plan.keys)
        self._listings = {label for label in plan.listings if label.value in plans.LISTED}
        for index, seq, near in record["chains"]:
            probe = plan.chains[index]
            self._chains[(chain_scope(probe.scope), (probe.chain_at, int(seq)))] = tuple(near)
        self._own = plan.steps
        self._parked = {node_id: [] for node_id in (*plan.nodes, *plan.steps)}
        for parked in record["parked"]:
            edge = to_parked(parked["type"], parked["source"], parked["target"], parked["props"])
            self._parked.setdefault(parked["waiting_for"], []).append(edge)
        self._seqs = [int(seq) for _, seq in record["allocated"]]

    # --- reads -----------------------------------------------------------------------------

    async def _miss(self) -> _Neo4jTransaction:
        """The primitive statements, once the buffered changes are applied."""
        await self.flush()
        return self._live

    def _current(self) -> list[NodeRecord]:
        return [node for node in self._nodes.values() if node is not None]

    def _ordered(self, nodes: list[NodeRecord]) -> list[NodeRecord]:
        return sorted(nodes, key=lambda node: self._order.get(node.id, (NEW, 0)))

    async def get_nodes(self, ids: Sequence[str]) -> list[NodeRecord | None]:
        if all(node_id in self._nodes for node_id in ids):
            return [self._nodes[node_id] for node_id in ids]
        return await (await self._miss()).get_nodes(ids)

    async def nodes_by_key(
        self,
        key: str,
        *,
        labels: Sequence[Label] | None = None,
        session_id: str | None = None,
    ) -> list[NodeRecord]:
        if labels is not None and len(labels) == 1 and session_id == self._plan_session:
            (label,) = labels
            if (key, label) in self._keys:
                return self._ordered(
                    [
                        node
                        for node in self._current()
                        if node.key == key and node.label is label and node.session_id == session_id
                    ]
                )
        return await (await self._miss()).nodes_by_key(key, labels=labels, session_id=session_id)

    async def artifact_versions(
        self, artifact_id: str, *, session_id: str | None = None
    ) -> list[NodeRecord]:
        if artifact_id in self._artifacts:  # every session's versions were loaded
            versions = [
                node
                for node in self._current()
                if node.label is Label.ARTIFACT
                and node.get("artifact_id") == artifact_id
                and (session_id is None or node.session_id == session_id)
            ]
            return sorted(self._ordered(versions), key=lambda node: _version(node.get("version")))
        return await (await self._miss()).artifact_versions(artifact_id, session_id=session_id)

    async def expand(
        self, ids: Sequence[str], edge_type: EdgeType, direction: Direction
    ) -> list[EdgeRecord]:
        if not all(self._knows_adjacency(node_id, edge_type, direction) for node_id in ids):
            return await (await self._miss()).expand(ids, edge_type, direction)
        found: list[EdgeRecord] = []
        for node_id in ids:
            for edge in self._edges.values():
                end = edge.source if direction is Direction.OUT else edge.target
                if edge.type is edge_type and end == node_id:
                    found.append(edge)
        return found

    def _knows_adjacency(self, node_id: str, edge_type: EdgeType, direction: Direction) -> bool:
        return node_id in self._complete or (node_id, edge_type, direction) in self._adjacent

    async def edges_among(
        self, ids: Sequence[str], types: Sequence[EdgeType] | None = None
    ) -> list[EdgeRecord]:
        return await (await self._miss()).edges_among(ids, types)

    async def list_nodes(
        self,
        *,
        labels: Sequence[Label] | None = None,
        session_id: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> Page[NodeRecord]:
        if (
            labels is not None
            and len(labels) == 1
            and labels[0] in self._listings
            and session_id == self._plan_session
        ):
            live = [
                node
                for node in self._current()
                if node.label is labels[0] and node.session_id == session_id and not node.deleted
            ]
            newest = list(reversed(self._ordered(live)))
            items = newest[offset : offset + limit]
            return Page(items, len(newest), offset + len(items) < len(newest))
        return await (await self._miss()).list_nodes(
            labels=labels, session_id=session_id, limit=limit, offset=offset
        )

    async def list_edges(
        self,
        types: Sequence[EdgeType],
        *,
        session_id: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> Page[EdgeRecord]:
        live = await self._miss()
        return await live.list_edges(types, session_id=session_id, limit=limit, offset=offset)

    async def session_node_ids(self, session_id: str) -> list[str]:
        return await (await self._miss()).session_node_ids(session_id)

    async def project_artifacts(self, project_id: str) -> list[NodeRecord]:
        return await (await self._miss()).project_artifacts(project_id)

    async def chain_members(self, session_id: str, scope_key: str | None) -> list[NodeRecord]:
        return await (await self._miss()).chain_members(session_id, scope_key)

    async def chain_neighbours(
        self, session_id: str, scope_key: str | None, position: ChainPosition
    ) -> tuple[NodeRecord | None, NodeRecord | None]:
        scope = chain_scope(scope_key)
        probed = self._chains.get((scope, position)) if session_id == self._plan_session else None
        if probed is None:
            return await (await self._miss()).chain_neighbours(session_id, scope_key, position)
        here = chain_pos(position)
        candidates: dict[str, str] = {}
        for node_id in (*probed, *self._own):
            node = self._nodes.get(node_id)
            if node is None or node.seq <= 0 or node.session_id != session_id:
                continue
            if chain_scope(node.get("parent_subtask_id")) == scope:
                candidates[node_id] = chain_pos((str(node.get("chain_at", "")), node.seq))
        lower = [(p, i) for i, p in candidates.items() if p < here]
        upper = [(p, i) for i, p in candidates.items() if p > here]
        before = max(lower) if lower else None
        after = min(upper) if upper else None
        return (
            self._nodes[before[1]] if before else None,
            self._nodes[after[1]] if after else None,
        )

    async def chain_before(
        self,
        session_id: str,
        scope_key: str | None,
        position: ChainPosition,
        *,
        after: ChainPosition | None = None,
        label: Label | None = None,
        limit: int | None = None,
    ) -> list[NodeRecord]:
        live = await self._miss()
        return await live.chain_before(
            session_id, scope_key, position, after=after, label=label, limit=limit
        )

    async def search(
        self,
        terms: Sequence[str],
        *,
        session_id: str | None = None,
        labels: Sequence[Label] | None = None,
        require_all: bool = False,
    ) -> list[SearchHit]:
        live = await self._miss()
        return await live.search(
            terms, session_id=session_id, labels=labels, require_all=require_all
        )

    # --- writes ----------------------------------------------------------------------------

    async def put_node(self, node: NodeRecord) -> None:
        if label_of(node.id) is not node.label:
            raise ValueError(f"a node id must be <Label>:<key> of its label: {node.id!r}")
        if node.id not in self._nodes:
            await (await self._miss()).put_node(node)  # its stored record is unknown here
            return
        stored = self._nodes[node.id]
        if stored is not None and stored.session_id != node.session_id:
            raise KeyOwnedByOtherSessionError(node.id, node.key, stored.session_id, node.session_id)
        self._pending_nodes.setdefault(node.id, stored)
        self._nodes[node.id] = node
        if node.id not in self._order:
            self._created += 1
            self._order[node.id] = (NEW, self._created)

    async def delete_node(self, node_id: str) -> bool:
        deleted = await (await self._miss()).delete_node(node_id)
        self._forget()  # what the snapshot knew about its edges no longer holds
        return deleted

    def _buffered(self, edge_type: EdgeType, source: str, target: str) -> bool:
        return source in self._edge_known and target in self._edge_known

    def _touched_live(self, source: str, target: str) -> None:
        """An edge of ``source``/``target`` was written by a primitive statement."""
        for node_id in (source, target):
            if node_id not in self._edge_known:
                continue
            self._complete.discard(node_id)
            self._adjacent = {entry for entry in self._adjacent if entry[0] != node_id}

    async def put_edge(self, edge: EdgeRecord) -> bool:
        if not self._buffered(edge.type, edge.source, edge.target):
            created = await (await self._miss()).put_edge(edge)
            self._after_live(edge.identity, edge)
            return created
        if self._nodes.get(edge.source) is None or self._nodes.get(edge.target) is None:
            raise ValueError(f"edge endpoint missing: {edge.identity}")
        stored = self._edges.get(edge.identity)
        self._pending_edges.setdefault(edge.identity, _EdgeChange(stored))
        self._edges[edge.identity] = edge
        return stored is None

    async def delete_edge(self, edge_type: EdgeType, source: str, target: str) -> bool:
        identity = (edge_type, source, target)
        if not self._buffered(edge_type, source, target):
            deleted = await (await self._miss()).delete_edge(edge_type, source, target)
            self._after_live(identity, None)
            return deleted
        stored = self._edges.pop(identity, None)
        if stored is None:
            return False
        change = self._pending_edges.setdefault(identity, _EdgeChange(stored))
        if change.initial is not None:
            change.deleted = True
        return True

    def _after_live(self, identity: Identity, edge: EdgeRecord | None) -> None:
        _, source, target = identity
        if source in self._edge_known and target in self._edge_known:
            self._edges.pop(identity, None)
            if edge is not None:
                self._edges[identity] = edge
        else:
            self._touched_live(source, target)

    async def next_seq(self, session_id: str) -> int:
        if session_id == self._plan_session and self._seqs:
            return self._seqs.pop(0)
        return await (await self._miss()).next_seq(session_id)

    async def park_edge(self, edge: EdgeRecord, waiting_for: str) -> None:
        parked = self._parked.get(waiting_for)
        if parked is None:
            await (await self._miss()).park_edge(edge, waiting_for)
            return
        if any(kept.identity == edge.identity for kept in parked):
            return
        parked.append(edge)
        if self._unparks.pop((waiting_for, edge.identity), None) is None:
            self._parks[(waiting_for, edge.identity)] = edge

    async def take_parked(self, node_id: str) -> list[EdgeRecord]:
        parked = self._parked.get(node_id)
        if parked is None:
            return await (await self._miss()).take_parked(node_id)
        self._parked[node_id] = []
        for edge in parked:
            if self._parks.pop((node_id, edge.identity), None) is None:
                self._unparks[(node_id, edge.identity)] = edge
        return parked

    async def note_cleanup(self, session_id: str, at: datetime, *, emptied: bool) -> None:
        await (await self._miss()).note_cleanup(session_id, at, emptied=emptied)

    async def cleaned_at(self, session_id: str) -> SessionCleanups:
        return await (await self._miss()).cleaned_at(session_id)

    async def note_project_cleanup(self, project_id: str, at: datetime) -> None:
        await (await self._miss()).note_project_cleanup(project_id, at)

    async def projects_cleaned_at(self, project_ids: Sequence[str]) -> dict[str, datetime]:
        return await (await self._miss()).projects_cleaned_at(project_ids)

    async def note_artifacts_cleaned(self, artifact_ids: Sequence[str], at: datetime) -> None:
        await (await self._miss()).note_artifacts_cleaned(artifact_ids, at)

    async def artifacts_cleaned_at(self, artifact_ids: Sequence[str]) -> dict[str, datetime]:
        return await (await self._miss()).artifacts_cleaned_at(artifact_ids)

    async def append_feed(self, entries: Mapping[str, str]) -> dict[str, int]:
        """Buffered with the changes: the one write statement appends them."""
        return await self.flush(entries)

    # --- applying --------------------------------------------------------------------------

    async def flush(self, feed: Mapping[str, str] | None = None) -> dict[str, int]:
        """Apply the buffered changes (and ``feed`` entries) in one statement."""
        rows = self._change_rows()
        rows += [{"k": "feed", "session": s, "changes": c} for s, c in (feed or {}).items()]
        if not rows:
            # Nothing changed, but what was touched is settled: the next prefetch forgets the
            # snapshot these entries are read against.
            self._settle()
            return {}
        span = sum(1 for row in rows if "o" in row)
        (record,) = await self._live._fetch(
            plans.APPLY,
            rows=plans.padded(rows),
            args=plans.arguments(self._session),
            spread=plans.spread(self._session),
            span=span,
        )
        if record["refused"] is not None:
            node_id, key, owner = record["refused"]
            raise KeyOwnedByOtherSessionError(node_id, key, owner, self._session)
        self._settle()
        sessions = list((feed or {}).keys())
        return {session: int(n) for session, n in zip(sessions, record["feed"], strict=True)}

    def _settle(self) -> None:
        """The buffered changes are stored (or were no change at all)."""
        self._pending_nodes.clear()
        self._pending_edges.clear()
        self._parks.clear()
        self._unparks.clear()

    def _change_rows(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        order = iter(range(1 << 62))
        for node_id, stored in self._pending_nodes.items():
            node = self._nodes[node_id]
            assert node is not None
            row = {"k": "node", "label": node.label.value, "id": node.id, "sess": node.session_id}
            if stored is None:
                props = node_properties(node)
                at = take_created_at(props)
                rows.append({**row, "props": props, "at": at, "o": next(order)})
                continue
            search = not same_search_text(stored, node)
            changed = _changes(
                node_properties(stored, search=search), node_properties(node, search=search)
            )
            if changed:
                at = take_created_at(changed)
                rows.append({**row, "props": changed, "at": at})
        creates: list[dict[str, Any]] = []
        for identity, change in self._pending_edges.items():
            final = self._edges.get(identity)
            edge_type, source, target = identity
            ends = {"type": edge_type.value, "s": source, "t": target}
            if change.initial is not None and (final is None or change.deleted):
                rows.append({"k": "del", **ends})
            if final is None:
                continue
            props = edge_properties(final)
            if change.initial is None or change.deleted:
                creates.append({"k": "edge", **ends, "props": props})
            elif changed := _changes(edge_properties(change.initial), props):
                creates.append({"k": "edge", **ends, "props": changed})
        for row in creates:
            rows.append({**row, "o": next(order)})
        for (waiting_for, _), edge in self._parks.items():
            rows.append(
                {"k": "park", **_parked_row(waiting_for, edge), "props": parked_props(edge)}
                | {"o": next(order)}
            )
        for (waiting_for, _), edge in self._unparks.items():
            rows.append({"k": "unpark", **_parked_row(waiting_for, edge)})
        return rows


def _changes(stored: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The properties to set on a stored entity (``None`` removes one)."""
    changed = {name: value for name, value in new.items() if stored.get(name) != value}
    return changed | {name: None for name in stored if name not in new}


def _parked_row(waiting_for: str, edge: EdgeRecord) -> dict[str, Any]:
    return {"w": waiting_for, "type": edge.type.value, "s": edge.source, "t": edge.target}


def _version(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _plan_rows(plan: ReadPlan) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [{"k": "step", "id": step} for step in plan.steps]
    rows += [{"k": "node", "id": node_id} for node_id in dict.fromkeys((*plan.nodes, *plan.steps))]
    rows += [
        {
            "k": "chain",
            "i": index,
            "scope": chain_scope(probe.scope),
            "at": probe.chain_at,
            "step": probe.step,
        }
        for index, probe in enumerate(plan.chains)
    ]
    rows += [
        {"k": "adj", "id": node_id, "type": edge_type.value, "dir": direction.value}
        for node_id, edge_type, direction in plan.adjacent
    ]
    rows += [{"k": "art", "id": artifact_id} for artifact_id in plan.artifacts]
    rows += [{"k": "key", "key": key, "label": label.value} for key, label in plan.keys]
    rows += [{"k": "list", "label": label.value} for label in plan.listings]
    return rows
