"""Write helpers shared by the use cases: merging nodes, connecting edges, chain upkeep.

``Writer`` wraps one transaction and counts what actually changed, so a mutation answers the
truth (``written`` is 0 for a re-sent event) and knows every node it touched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from resolvers.errors import KeyOwnedByOtherSessionError
from resolvers.records import (
    Direction,
    EdgeRecord,
    EdgeType,
    Label,
    NodeRecord,
    clean_props,
    node_id,
)

if TYPE_CHECKING:
    from resolvers.store import ChainPosition, GraphTransaction

Update = Mapping[str, Any] | Callable[[NodeRecord], Mapping[str, Any]]

CHAIN_START: ChainPosition = ("", 0)
"""A position before every step (``chain_neighbours`` at it returns the head as ``after``)."""


def iso(value: datetime) -> str:
    """Fixed-width UTC text, so text order is time order (naive datetimes are taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Writer:
    """Merges nodes and edges inside one transaction and records what changed."""

    def __init__(self, tx: GraphTransaction, now: datetime) -> None:
        self.tx = tx
        self.now = now
        self.written = 0
        self.touched: dict[str, None] = {}

    async def merge_node(
        self,
        label: Label,
        key: str,
        session_id: str,
        *,
        create: Mapping[str, Any],
        update: Update | None = None,
        step: bool = False,
        erase: bool = False,
    ) -> tuple[NodeRecord, bool]:
        """Create the node with ``create`` (plus ``update``) props, or apply ``update`` to the
        stored one; ``None`` values never erase. A ``step`` gets a ``seq`` on creation.
        Returns the node and whether it was created. With ``erase``, ``None`` values of an
        update erase the stored ones: the update replaces a whole observation.

        Ownership (SPEC §3.8): a node belongs to the session that created it. Merging a key
        whose node another session created raises ``KeyOwnedByOtherSessionError``, even when
        nothing would change: the event names the key as its own, and answering with the other
        session's node would silently mix two sessions (its products, its chain). The store's
        ``put_node`` enforces the same rule atomically, against concurrent creators."""
        identity = node_id(label, key, session_id)
        (existing,) = await self.tx.get_nodes([identity])
        if existing is not None and existing.session_id != session_id:
            raise KeyOwnedByOtherSessionError(identity, key, existing.session_id, session_id)
        if existing is None:
            parked = await self.tx.take_parked(identity)
            await self._refuse_claimed(identity, key, session_id, parked)
            props = clean_props({**create, **_resolve(update, None)})
            seq = await self.tx.next_seq(session_id) if step else 0
            node = NodeRecord(identity, label, key, session_id, self.now, props, seq)
            await self._save(node)
            await self._release_parked(node, parked)
            return node, True
        changes = _resolve(update, existing)
        if not erase:
            changes = clean_props(changes)
        node = existing.with_props(**changes) if changes else existing
        if node != existing:
            await self._save(node)
        self.touched[identity] = None
        return node, False

    async def replace_node(self, node: NodeRecord) -> None:
        await self._save(node)

    async def _save(self, node: NodeRecord) -> None:
        await self.tx.put_node(node)
        self.written += 1
        self.touched[node.id] = None

    async def connect(
        self,
        edge_type: EdgeType,
        source: str,
        target: str,
        props: Mapping[str, Any] | None = None,
    ) -> None:
        """Create the edge now, or park it until its missing endpoint arrives."""
        edge = EdgeRecord(edge_type, source, target, dict(props or {}))
        missing = [
            node_id
            for node_id, node in zip(
                (source, target), await self.tx.get_nodes([source, target]), strict=True
            )
            if node is None
        ]
        if missing:
            await self.tx.park_edge(edge, missing[0])
        elif await self.tx.put_edge(edge):
            self.written += 1

    async def disconnect(self, edge_type: EdgeType, source: str, target: str) -> None:
        if await self.tx.delete_edge(edge_type, source, target):
            self.written += 1

    async def claim_scope(self, scope: str, step: str) -> None:
        """Note that ``step`` names the subagent scope ``scope``, not stored yet, as its own
        session's: a ``contains`` edge parked for the scope that is never made (the scope
        contains its chain's head when it arrives, ``resolvers.steps.attach_scope_head``)."""
        await self.tx.park_edge(EdgeRecord(EdgeType.CONTAINS, scope, step), scope)

    async def scope_claimant(self, scope: str) -> str | None:
        """The session whose steps named the subagent scope ``scope`` (not stored) first, if
        any step still does (``claim_scope``)."""
        parked = await self.tx.take_parked(scope)
        for edge in parked:  # only read: they stay parked
            await self.tx.park_edge(edge, scope)
        return await self._claimant(scope, parked)

    async def _claimant(self, scope: str, parked: Sequence[EdgeRecord]) -> str | None:
        claims = [edge.target for edge in parked if edge.type is EdgeType.CONTAINS]
        for step in await self.tx.get_nodes(claims) if claims else ():
            named = step.get("parent_subtask_id") if step is not None else None
            if step is not None and named and node_id(Label.TASK, named) == scope:
                return step.session_id  # one session's: another's step is refused
        return None

    async def _refuse_claimed(
        self, identity: str, key: str, session_id: str, parked: Sequence[EdgeRecord]
    ) -> None:
        """A scope that another session's steps named first is that session's (SPEC §3.8: the
        first write that names a key owns it), as a step naming a stored scope is refused."""
        owner = await self._claimant(identity, parked)
        if owner is not None and owner != session_id:
            raise KeyOwnedByOtherSessionError(identity, key, owner, session_id)

    async def _release_parked(self, created: NodeRecord, parked: Sequence[EdgeRecord]) -> None:
        """Make the edges parked for ``created``, but a scope's claims (``claim_scope``). One
        that another session parked to join it to its own node is dropped (SPEC §3.8: it would
        change ``created``'s session's graph, as it is refused when ``created`` came first), but
        an ``input`` edge, which a later session may draw to another's node."""
        for edge in parked:
            if edge.type is EdgeType.CONTAINS:
                continue
            far = edge.target if edge.source == created.id else edge.source
            if edge.type is not EdgeType.INPUT:
                (other,) = await self.tx.get_nodes([far])
                if other is not None and other.session_id != created.session_id:
                    continue
            await self.connect(edge.type, edge.source, edge.target, edge.props)

    async def neighbours(self, node: str, edge_type: EdgeType, direction: Direction) -> list[str]:
        edges = await self.tx.expand([node], edge_type, direction)
        return [edge.source if direction is Direction.IN else edge.target for edge in edges]


def _resolve(update: Update | None, existing: NodeRecord | None) -> Mapping[str, Any]:
    if update is None:
        return {}
    if callable(update):
        return update(existing) if existing is not None else {}
    return update
