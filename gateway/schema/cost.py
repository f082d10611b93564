"""The cost limit and the reader pool (SPEC §8, isolation), both decided before execution.

**Cost** is the worst case of how many field values the operation completes: every selected
field counts once per item it is completed for, and a list field multiplies what is below it by
its size — its ``first``/``limit``/``limitPerType`` argument (literal, variable or the
schema's default), else the size of the field whose result holds it (a ``Subgraph``'s ``nodes``
and ``edges`` are as many as its ``first``; lists inside their items are not), else a default
of ours for that argument (``DEFAULT_SIZES``), else ``SESSION_LONG_LISTS`` for lists as long
as a task chain, else ``UNSIZED``; a list as long as an enum (``GROUPED_LISTS``) passes the
size on to its items' lists; a size over any field's maximum counts as that maximum (the field
refuses it itself); a field that scans more than it answers adds ``SCAN_COSTS``.
Aliases count separately, fragments where they are spread. So 30 aliases of
``subgraph(first: 5000) { nodes { id } }`` cost about 300,000 and are refused, while a
playground's view of one session costs a few thousand to some 30,000. The read token has its
own, lower, limit.

**The reader pool**: ``heavy_readers`` slots for queries costing more than ``heavy_cost``. Of
such a query, the cheapest root fields, together costing at most ``heavy_cost``, run at once;
the others wait for one slot (the query's, shared by them and held until it ends), within the
time budget: a root field that waited it out answers ``QueryLimitExceeded``
(``gateway.schema.budget``) while the others keep their answers. Mutations and light queries
never wait for a slot, so a burst of heavy readers can neither queue a writer behind it nor
fill the event loop's ready queue with more than a few readers' steps at a time.
"""

from __future__ import annotations

import asyncio
import weakref
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLObjectType,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    StringValueNode,
    VariableNode,
    get_named_type,
    get_nullable_type,
)
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from resolvers import search, subgraph
from resolvers.memory.records import MemoryRecordType

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from graphql import (
        DocumentNode,
        GraphQLNamedType,
        GraphQLSchema,
        SelectionSetNode,
    )

LIMIT_CODE = "QUERY_LIMIT_EXCEEDED"
SIZE_ARGUMENTS = ("first", "limit", "limitPerType")
DEFAULT_SIZES = {"subgraph": subgraph.SUBGRAPH_DEFAULT_FIRST}
DEFAULT_SIZE = search.DEFAULT_FIRST
UNSIZED = 50
# Lists with no size argument whose length grows with the session: a trace's witness ``path``
# and its exploration (``chain``) follow a task chain step by step, however long it is.
SESSION_LONG_LISTS = {"path": 1000, "chain": 1000}
# Lists as long as an enum, whose items hold the lists the enclosing size bounds: ``recall``'s
# ``groups`` (one per record type) hold ``limitPerType`` records each.
GROUPED_LISTS = {"groups": len(MemoryRecordType)}
# Fields whose work grows with what they read, not with the page they answer: a search over
# every session ranks every match of a common term in all of them, a listing of edges over
# every session counts every edge of its types, an export renders a whole session. Counted as
# this much on top, which makes each one a heavy query (``heavy_cost``), run through the
# reader pool.
SCAN_COSTS = {"searchNodes": 1000, "edgesByType": 1000, "exportSession": 1000}
# Of those, the ones that read one session's index only when given a ``sessionId``: then
# they cost what their page costs, like any list.
SESSION_NARROWED = frozenset({"searchNodes", "edgesByType"})
# The largest page any field allows: a bigger size is refused by the field itself, as
# ``InvalidInput`` naming the argument, so it costs no more than that.
MAX_SIZE = subgraph.SUBGRAPH_MAX_FIRST


WAITED_FOR_A_SLOT = (
    "Too many large queries are running; this field waited its whole time budget for its turn. "
    "Try again, or ask for less."
)


def root_costs(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: Mapping[str, Any] | None,
) -> dict[str, int]:
    """The cost of each root field of the operation, by response name."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    operation = next(
        (
            o
            for o in operations
            if operation_name is None or (o.name and o.name.value == operation_name)
        ),
        None,
    )
    if operation is None:
        return {}
    root = {
        "query": schema.query_type,
        "mutation": schema.mutation_type,
        "subscription": schema.subscription_type,
    }[operation.operation.value]
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    walk = _CostWalk(schema, fragments, variables or {})
    return walk.roots(operation.selection_set, root, {}) if root is not None else {}


def heavy_fields(costs: Mapping[str, int], heavy_cost: int) -> frozenset[str]:
    """The root fields that wait for a slot of the reader pool: all but the cheapest ones,
    which together cost at most ``heavy_cost`` (none when the whole operation does)."""
    light = 0
    heavy = set()
    for name, cost in sorted(costs.items(), key=lambda item: item[1]):
        if light + cost <= heavy_cost:
            light += cost
        else:
            heavy.add(name)
    return frozenset(heavy)


class _CostWalk:
    """Unit costs (per item of the enclosing list), memoised per fragment: cost is linear in
    the multiplier, so a fragment spread many times is walked once."""

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
    ) -> None:
        self._schema = schema
        self._fragments = fragments
        self._variables = variables
        self._memo: dict[tuple[str, int | None], int] = {}
        self._open: set[str] = set()

    def roots(
        self, selections: SelectionSetNode, parent: GraphQLNamedType, costs: dict[str, int]
    ) -> dict[str, int]:
        """``costs`` with those of the root fields in ``selections`` (fragments on the root
        type expanded) added by response name."""
        for selection in selections.selections:
            if isinstance(selection, FieldNode):
                name = (selection.alias or selection.name).value
                costs[name] = costs.get(name, 0) + self._field(selection, parent, None)
            elif isinstance(selection, InlineFragmentNode):
                self.roots(selection.selection_set, parent, costs)
            elif isinstance(selection, FragmentSpreadNode):
                fragment = self._fragments.get(selection.name.value)
                if fragment is not None and fragment.name.value not in self._open:
                    self._open.add(fragment.name.value)
                    self.roots(fragment.selection_set, parent, costs)
                    self._open.discard(fragment.name.value)
        return costs

    def cost(
        self, selections: SelectionSetNode, parent: GraphQLNamedType, bound: int | None
    ) -> int:
        total = 0
        for selection in selections.selections:
            if isinstance(selection, FieldNode):
                total += self._field(selection, parent, bound)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                inner = self._schema.get_type(condition.name.value) if condition else parent
                total += self.cost(selection.selection_set, inner or parent, bound)
            elif isinstance(selection, FragmentSpreadNode):
                total += self._spread(selection.name.value, bound)
        return total

    def _spread(self, name: str, bound: int | None) -> int:
        fragment = self._fragments.get(name)
        if fragment is None or name in self._open:  # unknown or cyclic: validation refuses it
            return 0
        key = (name, bound)
        if key not in self._memo:
            self._open.add(name)
            parent = self._schema.get_type(fragment.type_condition.name.value)
            self._memo[key] = self.cost(fragment.selection_set, parent, bound) if parent else 0
            self._open.discard(name)
        return self._memo[key]

    def _field(self, node: FieldNode, parent: GraphQLNamedType, bound: int | None) -> int:
        if not isinstance(parent, GraphQLObjectType | GraphQLInterfaceType):
            return 1  # __typename on a union
        definition = parent.fields.get(node.name.value)
        if definition is None:
            return 1
        size = self._size(node, definition.args)
        inner_bound = size if size is not None else bound
        is_list = isinstance(get_nullable_type(definition.type), GraphQLList)
        unsized = SESSION_LONG_LISTS.get(node.name.value, UNSIZED)
        items = (inner_bound if inner_bound is not None else unsized) if is_list else 1
        # A size bounds the lists of the field's own result, not lists nested in their items.
        below_bound = None if is_list else inner_bound
        groups = GROUPED_LISTS.get(node.name.value)
        if is_list and groups is not None:
            items, below_bound = groups, bound
        below = (
            self.cost(node.selection_set, get_named_type(definition.type), below_bound)
            if node.selection_set
            else 0
        )
        return items * (1 + below) + self._scan(node)

    def _scan(self, node: FieldNode) -> int:
        name = node.name.value
        if name in SESSION_NARROWED and self._in_one_session(node):
            return 0
        return SCAN_COSTS.get(name, 0)

    def _in_one_session(self, node: FieldNode) -> bool:
        for argument in node.arguments or ():
            if argument.name.value == "sessionId":
                value = argument.value
                if isinstance(value, VariableNode):
                    return isinstance(self._variables.get(value.name.value), str)
                return isinstance(value, StringValueNode)
        return False

    def _size(self, node: FieldNode, accepted: Mapping[str, Any]) -> int | None:
        names = [name for name in SIZE_ARGUMENTS if name in accepted]
        if not names:
            return None
        for argument in node.arguments or ():
            if argument.name.value not in names:
                continue
            value = argument.value
            if isinstance(value, VariableNode):
                given = self._variables.get(value.name.value)
                if isinstance(given, int) and not isinstance(given, bool):
                    return min(max(given, 0), MAX_SIZE)
            elif isinstance(value, IntValueNode) and len(value.value) < 12:
                return min(max(int(value.value), 0), MAX_SIZE)
        for name in names:
            declared = accepted[name].default_value  # the schema's default, when it has one
            if isinstance(declared, int) and not isinstance(declared, bool):
                return min(max(declared, 0), MAX_SIZE)
        return DEFAULT_SIZES.get(node.name.value, DEFAULT_SIZE)


class CostLimit(SchemaExtension):
    """Refuses an operation whose cost is over the caller's limit; for a heavy query, names
    the root fields that wait for a slot of the reader pool (module docstring)."""

    def __init__(self, *, max_cost: int, max_cost_read: int, pool: ReaderPool) -> None:
        super().__init__()
        self._max_cost = max_cost
        self._max_cost_read = max_cost_read
        self._pool = pool

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        if context.result is not None:  # already refused (read-only guard)
            yield
            return
        costs = root_costs(
            context.schema._schema,  # the GraphQLSchema strawberry built
            context.graphql_document,  # type: ignore[arg-type]
            context.operation_name,
            context.variables,
        )
        cost = sum(costs.values())
        can_write = getattr(context.context, "can_write", True)
        limit = self._max_cost if can_write else self._max_cost_read
        if cost > limit:
            context.result = ExecutionResult(
                data=None,
                errors=[
                    GraphQLError(
                        f"The document costs {cost} field values, over this token's limit of "
                        f"{limit}; ask for less (a smaller `first`, fewer aliases or fields).",
                        extensions={"code": LIMIT_CODE},
                    )
                ],
            )
            yield
            return
        is_query = context.operation_type is OperationType.QUERY
        heavy = heavy_fields(costs, self._pool.heavy_cost) if is_query else frozenset()
        if not heavy:
            yield
            return
        admission = Admission(self._pool.slots(), heavy)
        token = ADMISSION.set(admission)
        try:
            yield
        finally:
            ADMISSION.reset(token)
            admission.release()


class ReaderPool:
    """``heavy_readers`` slots for queries costing more than ``heavy_cost``, one set per event
    loop (asyncio primitives belong to the loop they are first used on)."""

    def __init__(self, heavy_readers: int, heavy_cost: int) -> None:
        self.heavy_readers = heavy_readers
        self.heavy_cost = heavy_cost
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def slots(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = asyncio.Semaphore(self.heavy_readers)
        return slots


class Admission:
    """A query's claim on one slot of the reader pool for its root fields in ``heavy``: asked
    for when the first of them starts, held until the query ends (``release``)."""

    def __init__(self, slots: asyncio.Semaphore, heavy: frozenset[str]) -> None:
        self.heavy = heavy
        self._slots = slots
        self._claim: asyncio.Task[bool] | None = None

    async def admitted(self) -> None:
        """Return once the query holds its slot. A root field that stops waiting (its
        budget ran out) leaves the claim to the others."""
        if self._claim is None:
            self._claim = asyncio.create_task(self._slots.acquire())
        await asyncio.shield(self._claim)

    def release(self) -> None:
        """Give the slot back, or stop asking for it."""
        claim = self._claim
        if claim is None:
            return
        if claim.done() and not claim.cancelled():
            self._slots.release()
        else:
            claim.cancel()


# The admission of the query being executed, for the root fields to wait on.
ADMISSION: ContextVar[Admission | None] = ContextVar("heavy_admission", default=None)
