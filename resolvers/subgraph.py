"""Session views: the folded session subgraph, scope and group expansions (reference §5.4-5.6).

Folding (query time only, never stored): a subagent scope's products are what its children
made — ``child -produces-> Paper`` and ``child -produces-> Code -produces-> Artifact`` — where
the children are the members of the scope's chain (the chain index, not a walk over ``next``
edges, so both backends agree: reference §8.3 item 22). Per scope and product kind, one product
becomes a surrogate ``produces`` edge from the scope; several become a ``ProductGroup`` that the
client can open with ``group_expansion``.

Decisions: ``truncated`` is true only when more nodes exist than were returned; ``total`` counts
the session's live nodes, not groups; expansions are capped like every other list and always
include the scope node itself, so their edges never point outside the returned nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING

from resolvers.errors import InvalidInputError, NodeNotFoundError
from resolvers.records import (
    SUBAGENT_TASK_TYPE,
    Direction,
    EdgeRecord,
    EdgeType,
    GraphSlice,
    Label,
    NodeRecord,
    split_node_id,
)
from resolvers.resolve import in_scope
from resolvers.store import ChainsReader, SessionPageReader, one_state
from resolvers.validate import check_unicode

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from resolvers.store import GraphReader

SUBGRAPH_DEFAULT_FIRST = 500
SUBGRAPH_MAX_FIRST = 5000
EXPANSION_CAP = 500
PRODUCT_DEPTH = 3
GROUP_PREFIX = "_group:"
PRODUCT_KINDS = (Label.ARTIFACT, Label.PAPER)
ALL_EDGE_TYPES = tuple(EdgeType)


@dataclass(frozen=True, slots=True)
class ProductGroup:
    """Several products of one kind made inside one scope, shown as one aggregate."""

    id: str
    scope_id: str
    kind: Label
    members: list[str]
    via_child: str


@dataclass(frozen=True, slots=True)
class SessionGraph:
    nodes: list[NodeRecord]
    edges: list[EdgeRecord]
    groups: list[ProductGroup]
    total: int
    truncated: bool


@dataclass(frozen=True, slots=True)
class _Product:
    scope: NodeRecord
    node: NodeRecord
    via_child: str


def group_id(scope: NodeRecord, kind: Label) -> str:
    return f"{GROUP_PREFIX}{scope.key}:{kind.value}"


def _check_id(field: str, value: str) -> str:
    value = value.strip()
    if not value:
        raise InvalidInputError(field, "must not be empty")
    check_unicode(value, field)
    return value


async def session_subgraph(
    store: GraphReader,
    session_id: str,
    *,
    first: int | None = None,
    fold: bool = True,
) -> SessionGraph:
    """The session's live nodes (newest first, at most ``first``, ``SUBGRAPH_DEFAULT_FIRST``
    when not given) and every edge among them."""
    first = SUBGRAPH_DEFAULT_FIRST if first is None else first
    session_id = _check_id("sessionId", session_id)
    if not 1 <= first <= SUBGRAPH_MAX_FIRST:
        raise InvalidInputError("first", f"must be between 1 and {SUBGRAPH_MAX_FIRST}")
    async with one_state(store, session_id) as view:  # the nodes and their edges from one moment
        if isinstance(view, SessionPageReader):
            page, among = await view.session_page(session_id, limit=first)
        else:
            page = await view.list_nodes(session_id=session_id, limit=first)
            among = await view.edges_among([node.id for node in page.items], ALL_EDGE_TYPES)
        nodes = list(page.items)
        ids = [node.id for node in nodes]
        edges = sorted(among, key=_edge_order)
        groups: list[ProductGroup] = []
        if fold:
            scopes = [node for node in nodes if _is_scope(node)]
            # The page's nodes are live and in the session: products among them are not read again.
            known = {node.id: node for node in nodes}
            products = await _scope_products(view, scopes, session_id, known)
            produced = {(e.source, e.target) for e in edges if e.type is EdgeType.PRODUCES}
            surrogates, groups = _fold(products, set(ids), produced)
            edges = [*edges, *surrogates]
    return SessionGraph(nodes, edges, groups, page.total, page.truncated)


# By type, source, target. The type itself, not its ``.value``: a StrEnum member orders as
# its value, and ``attrgetter`` reads all three in C (a Python key function per edge showed).
_edge_order = attrgetter("type", "source", "target")


def _is_scope(node: NodeRecord) -> bool:
    return node.label is Label.TASK and node.get("task_type") == SUBAGENT_TASK_TYPE


def _fold(
    products: Sequence[_Product], returned: set[str], produced: set[tuple[str, str]]
) -> tuple[list[EdgeRecord], list[ProductGroup]]:
    """One surrogate edge per (scope, kind) with one product (unless a real ``produces`` edge,
    one of ``produced``, already joins them); a group when there are more."""
    by_scope_kind: dict[tuple[str, Label], list[_Product]] = {}
    for product in products:
        if product.node.id in returned:
            key = (product.scope.id, product.node.label)
            by_scope_kind.setdefault(key, []).append(product)
    edges: list[EdgeRecord] = []
    groups: list[ProductGroup] = []
    for (scope_id, kind), members in by_scope_kind.items():
        child = members[0].via_child
        if len(members) == 1:
            if (scope_id, members[0].node.id) not in produced:
                edges.append(_surrogate(scope_id, members[0].node.id, child))
            continue
        group = ProductGroup(
            group_id(members[0].scope, kind),
            scope_id,
            kind,
            [member.node.id for member in members],
            child,
        )
        groups.append(group)
        props = {"surrogate": True, "aggregated": True, "viaChild": child}
        edges.append(EdgeRecord(EdgeType.PRODUCES, scope_id, group.id, props))
    return edges, groups


def _surrogate(scope_id: str, product_id: str, via_child: str) -> EdgeRecord:
    props = {"surrogate": True, "viaChild": via_child}
    return EdgeRecord(EdgeType.PRODUCES, scope_id, product_id, props)


async def _children(store: GraphReader, scope: NodeRecord, session_id: str) -> list[NodeRecord]:
    (children,) = await _children_of(store, [scope], session_id)
    return children


async def _children_of(
    store: GraphReader, scopes: Sequence[NodeRecord], session_id: str
) -> list[list[NodeRecord]]:
    """The live members of each scope's chain, in one request where the store can
    (``ChainsReader``)."""
    keys = [scope.key for scope in scopes]
    if isinstance(store, ChainsReader):
        chains = await store.chains_members(session_id, keys)
    else:
        chains = [await store.chain_members(session_id, key) for key in keys]
    return [[node for node in members if in_scope(node, session_id)] for members in chains]


async def _scope_products(
    store: GraphReader,
    scopes: Sequence[NodeRecord],
    session_id: str,
    known: Mapping[str, NodeRecord] | None = None,
) -> list[_Product]:
    """Every (scope, product, child) row, in scope order, then chain order; one row per product
    and scope (the first child that made it). ``known``: live nodes of the session already
    read, by id (only the others are read)."""
    scope_of: dict[str, NodeRecord] = {}
    for scope, children in zip(scopes, await _children_of(store, scopes, session_id), strict=True):
        for child in children:
            scope_of.setdefault(child.id, scope)
    if not scope_of:
        return []
    made = await _products_of(store, list(scope_of), session_id, known or {})
    rows: dict[tuple[str, str], _Product] = {}
    for child_id, product in made:
        scope = scope_of[child_id]
        rows.setdefault((scope.id, product.id), _Product(scope, product, child_id))
    order = {scope.id: index for index, scope in enumerate(scopes)}
    return sorted(rows.values(), key=lambda row: order[row.scope.id])


async def _products_of(
    store: GraphReader,
    children: Sequence[str],
    session_id: str,
    known: Mapping[str, NodeRecord],
) -> list[tuple[str, NodeRecord]]:
    """``(child id, product)``: Papers a child produced, Artifacts its Code produced."""
    first = await _produced(store, children, session_id, known)
    codes = {node.id: child for child, node in first if node.label is Label.CODE}
    second = await _produced(store, list(codes), session_id, known)
    papers = [(child, node) for child, node in first if node.label is Label.PAPER]
    artifacts = [(codes[code], node) for code, node in second if node.label is Label.ARTIFACT]
    order = {child: index for index, child in enumerate(children)}
    return sorted([*papers, *artifacts], key=lambda row: order[row[0]])


async def _produced(
    store: GraphReader,
    ids: Sequence[str],
    session_id: str,
    known: Mapping[str, NodeRecord] | None = None,
) -> list[tuple[str, NodeRecord]]:
    """``(producer id, live product in the session)`` for every ``produces`` edge out of ids
    (``known``: live nodes of the session already read, by id)."""
    if not ids:
        return []
    edges = await store.expand(ids, EdgeType.PRODUCES, Direction.OUT)
    targets = dict.fromkeys(edge.target for edge in edges)
    live = {} if known is None else {i: known[i] for i in targets if i in known}
    missing = [i for i in targets if i not in live]
    if missing:
        fetched = await store.get_nodes(missing)
        live.update((node.id, node) for node in fetched if in_scope(node, session_id))
    return [(edge.source, live[edge.target]) for edge in edges if edge.target in live]


# --- expansions ---------------------------------------------------------------------------


async def _scope(store: GraphReader, scope_ref: str, session_id: str) -> NodeRecord | None:
    """The live subagent scope named by a task_id or a global id, in the session."""
    parsed = split_node_id(scope_ref)
    key = parsed[1] if parsed is not None and parsed[0] is Label.TASK else scope_ref
    found = await store.nodes_by_key(key, labels=[Label.TASK], session_id=session_id)
    live = [node for node in found if in_scope(node, session_id) and _is_scope(node)]
    return live[-1] if live else None


async def scope_expansion(store: GraphReader, scope_task_id: str, session_id: str) -> GraphSlice:
    """A scope, its children in chain order and what they produced (up to 3 produces hops)."""
    scope_ref = _check_id("scopeTaskId", scope_task_id)
    session_id = _check_id("sessionId", session_id)
    scope = await _scope(store, scope_ref, session_id)
    if scope is None:
        raise NodeNotFoundError(scope_task_id, "scope")
    children = await _children(store, scope, session_id)
    nodes: dict[str, NodeRecord] = {scope.id: scope}
    nodes.update((child.id, child) for child in children)
    level = [child.id for child in children]
    for _ in range(PRODUCT_DEPTH):
        made = [node for _, node in await _produced(store, level, session_id)]
        level = [node.id for node in made if node.id not in nodes]
        nodes.update((node.id, node) for node in made)
        if not level:
            break
    kept = list(nodes.values())[:EXPANSION_CAP]
    types = [EdgeType.PRODUCES, EdgeType.CONTAINS, EdgeType.NEXT]
    edges = sorted(await store.edges_among([node.id for node in kept], types), key=_edge_order)
    return GraphSlice(kept, edges, len(nodes), len(nodes) > EXPANSION_CAP)


async def group_expansion(store: GraphReader, group_id: str, session_id: str) -> GraphSlice:
    """The members of a product group, with one surrogate edge from the scope to each."""
    group_id = _check_id("groupId", group_id)
    session_id = _check_id("sessionId", session_id)
    scope_ref, _, kind_name = group_id.removeprefix(GROUP_PREFIX).rpartition(":")
    kind = next((kind for kind in PRODUCT_KINDS if kind.value == kind_name), None)
    scope = None
    if group_id.startswith(GROUP_PREFIX) and scope_ref and kind is not None:
        scope = await _scope(store, scope_ref, session_id)
    if scope is None:
        raise NodeNotFoundError(group_id, "group")
    members = [
        row for row in await _scope_products(store, [scope], session_id) if row.node.label is kind
    ]
    kept = members[: EXPANSION_CAP - 1]
    nodes = [scope, *(row.node for row in kept)]
    edges = [_surrogate(scope.id, row.node.id, row.via_child) for row in kept]
    return GraphSlice(nodes, edges, len(members) + 1, len(members) > len(kept))
