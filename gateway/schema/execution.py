"""``LeanExecution``: graphql-core's executor with a short path for plain leaf fields.

graphql-core executes every field the same way: a ``Path``, a resolve info, the middleware
chain (the extensions' ``resolve`` hooks), the resolver, then ``complete_value``. For the fields
of a node that are plain attributes (``id``, ``label``, ``excerpt`` …) that is ~20 calls to read
one attribute and serialise it, and a 500-node ``subgraph`` has ~3,600 such fields: they were
most of its time. Here a field that

* is not a root field, has no arguments and no resolver of its own (strawberry's "basic"
  field: the attribute of the same name), and returns a scalar or an enum,

is read and serialised in place; an object whose selected fields are all such fields is
completed in one pass (a list item too), an interface's runtime type is found once per Python
class, and a ``Paced`` list is completed in steps of ``PACE`` items without an async iterator;
there, what completes an item (runtime type, selection, plans) is found once per class of its
items, where graphql-core resolves the type and collects the selection again for each object.
That is what the long path does, provided no extension acts on nested fields: every extension
with a ``resolve`` hook must say so with ``RESOLVES_ROOT_FIELDS_ONLY = True`` (the observer passes
nested fields straight through), else the short path is off for the whole request. Anything
unusual — ``None`` for a non-null field, a value the type cannot serialise, ``@defer`` or
``@stream``, a ``strawberry.cast`` object — takes the long path, which raises what it always
did (but answers a non-finite number, which JSON lacks, as ``null``: ``complete_leaf_value``).
``tests/graphql/test_execution.py`` compares the answers with the stock executor's.
Its root fields are a ``BudgetedExecution``'s: each within the query's time budget
(``gateway.schema.budget``).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from graphql import (
    GraphQLEnumType,
    GraphQLError,
    GraphQLID,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLString,
    Undefined,
    get_nullable_type,
    is_leaf_type,
)
from graphql.error import located_error
from graphql.pyutils import gather_with_cancel
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.base import has_object_definition
from strawberry.types.cast import TYPE_CAST_ATTRIBUTE

from gateway.schema import pacing
from gateway.schema.budget import BudgetedExecution
from gateway.schema.identity import IdentityCache

if TYPE_CHECKING:
    from collections.abc import Callable

    from graphql import GraphQLLeafType, GraphQLResolveInfo
    from graphql.pyutils import Path

# A plain leaf field, prepared once per (type, field): (attribute, coercion, non-null, whether
# the coercion returns a ``str`` as it is: ``String`` and ``ID``); ``__typename`` is
# (None, the type's name, True, False).
_Plan = tuple[str | None, Any, bool, bool]
# The selected leaves of an object: each plan with its response name first.
_Plans = tuple[tuple[str, str | None, Any, bool, bool], ...]
# What completes every item of one Python class in a list: its runtime type, its plans,
# whether ``is_type_of`` must still be asked of each item (see ``_class_decides``) and whether
# the class's objects are shared (``SHARED``: their completed leaves are kept).
_Shape = tuple[GraphQLObjectType, _Plans, bool, bool]
_LONG: Final = object()
_TYPENAME = "__typename"
_BACKREF = GraphQLCoreConverter.DEFINITION_BACKREF


@dataclass(slots=True)
class _SchemaCache:
    """What every request on one schema shares: it depends only on the schema's types."""

    plans: dict[tuple[str, str], _Plan | None] = field(default_factory=dict)
    runtime_types: dict[tuple[str, type], GraphQLObjectType] = field(default_factory=dict)
    # Each selection's plans once (requests that select alike get the very same tuple), and
    # the completed leaves of shared objects by object and plans.
    selections: dict[_Plans, _Plans] = field(default_factory=dict)
    completed: IdentityCache[dict[str, Any]] = field(
        default_factory=lambda: IdentityCache(COMPLETED_CAPACITY)
    )


# A largest subgraph's nodes and edges, twice.
COMPLETED_CAPACITY = 24_000
# The selections kept per schema (clients choose them): emptied when it holds this many.
_MAX_SELECTIONS = 1024
_CACHES: weakref.WeakKeyDictionary[GraphQLSchema, _SchemaCache] = weakref.WeakKeyDictionary()


def resolves_root_fields_only(middleware: object) -> bool:
    """Whether an extension's ``resolve`` hook passes every nested field through untouched."""
    return getattr(middleware, "RESOLVES_ROOT_FIELDS_ONLY", False) is True


class LeanExecution(BudgetedExecution):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cache = _CACHES.get(self.schema)
        if cache is None:
            cache = _CACHES[self.schema] = _SchemaCache()
        self._plans = cache.plans
        self._runtime_types = cache.runtime_types
        self._selections = cache.selections
        self._completed = cache.completed
        manager = self.middleware_manager
        self._lean = manager is None or all(
            resolves_root_fields_only(middleware) for middleware in manager.middlewares
        )
        self._objects: dict[int, _Plans | None] = {}

    @staticmethod
    def complete_leaf_value(return_type: GraphQLLeafType, result: Any) -> Any:
        """A leaf as graphql-core completes it, except a non-finite number (an older data
        directory, another tool's write into Neo4j) in a typed field, which JSON cannot hold:
        it answers ``null``, as inside a ``JSON`` value, instead of an error for the field.
        Checked only when serialising fails, so the usual leaf costs nothing more."""
        try:
            return BudgetedExecution.complete_leaf_value(return_type, result)
        except GraphQLError:
            if isinstance(result, float) and not math.isfinite(result):
                return None
            raise

    def complete_abstract_value(
        self,
        return_type: Any,
        field_details_list: Any,
        info: GraphQLResolveInfo[Any],
        path: Path,
        result: Any,
        position_context: Any,
    ) -> Any:
        """An interface's runtime type, found once per Python class of the objects returned:
        strawberry's resolution depends only on the class for a plain (not cast, not generic)
        object of a type that implements the interface."""
        runtime_type = self._runtime_type(return_type, field_details_list, info, result)
        if runtime_type is None:
            return super().complete_abstract_value(
                return_type, field_details_list, info, path, result, position_context
            )
        return self.complete_object_value(
            runtime_type, field_details_list, info, path, result, position_context
        )

    def _runtime_type(
        self, return_type: Any, field_details_list: Any, info: GraphQLResolveInfo[Any], result: Any
    ) -> GraphQLObjectType | None:
        if (
            not self._lean
            or not isinstance(return_type, GraphQLInterfaceType)
            or getattr(result, TYPE_CAST_ATTRIBUTE, None) is not None
        ):
            return None
        key = (return_type.name, type(result))
        known = self._runtime_types.get(key)
        if known is not None or not _resolved_by_class(return_type, result):
            return known
        name = (return_type.resolve_type or self.type_resolver)(result, info, return_type)
        if not isinstance(name, str):
            return None
        runtime_type = self.ensure_valid_runtime_type(
            name, return_type, field_details_list, info, result
        )
        self._runtime_types[key] = runtime_type
        return runtime_type

    def complete_list_value(
        self,
        return_type: GraphQLList[Any],
        field_details_list: Any,
        info: GraphQLResolveInfo[Any],
        path: Path,
        result: Any,
        position_context: Any,
    ) -> Any:
        """A paced list completed in steps of ``PACE`` items, like its ``__aiter__`` would,
        without an async iterator step per item."""
        if (
            self._lean
            and self.is_async_iterable(result)  # not in a synchronous execution
            and isinstance(result, pacing.Paced)
            and not self.get_stream_usage(field_details_list, path)
        ):
            return self._complete_paced(
                return_type.of_type, field_details_list, info, path, result, position_context
            )
        return super().complete_list_value(
            return_type, field_details_list, info, path, result, position_context
        )

    async def _complete_paced(
        self,
        item_type: Any,
        field_details_list: Any,
        info: GraphQLResolveInfo[Any],
        path: Path,
        items: list[Any],
        position_context: Any,
    ) -> list[Any]:
        completed: list[Any] = []
        pending: list[int] = []
        # The items of a list are mostly of a few classes, and what completes one (its
        # runtime type, its selection, its plans) depends only on its class: found once.
        shapes: dict[type, Any] = {}
        try:
            for index, item in enumerate(items):
                if index and index % pacing.PACE == 0:
                    await _breathe(field_details_list, path)
                value = _LONG
                if getattr(item, TYPE_CAST_ATTRIBUTE, None) is None:  # else the long path
                    shape = shapes.get(type(item), _LONG)
                    if shape is _LONG:
                        shape = shapes[type(item)] = self._item_shape(
                            item_type, field_details_list, info, item
                        )
                    if shape is not None:
                        value = self._shaped(shape, item, info)
                if value is not _LONG:
                    completed.append(value)
                    continue
                item_path = path.add_key(index, None)
                if self.is_awaitable(item):
                    completed.append(
                        self.complete_awaitable_list_item_value(
                            item, item_type, field_details_list, info, item_path, position_context
                        )
                    )
                    pending.append(index)
                elif self.complete_list_item_value(
                    item,
                    completed,
                    item_type,
                    field_details_list,
                    info,
                    item_path,
                    position_context,
                ):
                    pending.append(index)
        except Exception:
            if pending:
                self.settle_in_background([completed[index] for index in pending])
            raise
        if pending:
            values = await gather_with_cancel(*(completed[index] for index in pending))
            for index, value in zip(pending, values, strict=True):
                completed[index] = value
        return completed

    def complete_object_value(
        self,
        return_type: GraphQLObjectType,
        field_details_list: Any,
        info: GraphQLResolveInfo[Any],
        path: Path,
        result: Any,
        position_context: Any,
    ) -> Any:
        value = self._plain_object(return_type, field_details_list, info, result)
        if value is not _LONG:
            return value
        return super().complete_object_value(
            return_type, field_details_list, info, path, result, position_context
        )

    def _item_shape(
        self, item_type: Any, field_details_list: Any, info: GraphQLResolveInfo[Any], item: Any
    ) -> _Shape | None:
        """How the items of ``item``'s class (``item`` is not cast) are completed in one pass,
        or ``None``: anything unusual (an error included) is left to the long path, which
        handles it where graphql-core does."""
        if item is None or isinstance(item, Exception) or not self._lean:
            return None
        named = item_type.of_type if isinstance(item_type, GraphQLNonNull) else item_type
        try:
            if isinstance(named, GraphQLInterfaceType):
                runtime_type = self._runtime_type(named, field_details_list, info, item)
            else:
                runtime_type = named if isinstance(named, GraphQLObjectType) else None
            if runtime_type is None:
                return None
            grouped_field_set, new_defer_usages, _ = self.collect_subfields(
                runtime_type, field_details_list
            )
            plans = None if new_defer_usages else self._object_plan(runtime_type, grouped_field_set)
        except Exception:
            return None
        if plans is None:
            return None
        shared = getattr(type(item), "SHARED", False) is True
        if not _class_decides(runtime_type):
            return runtime_type, plans, True, shared
        if not _is_own_type(runtime_type, item, info):
            return None
        return runtime_type, plans, False, shared

    def _shaped(self, shape: _Shape, item: Any, info: GraphQLResolveInfo[Any]) -> Any:
        """An item (not cast) completed by its class's shape, or ``_LONG``: what depends on
        the object itself (``is_type_of`` unless the class decides it, each value) is asked
        of every item; a shared object's leaves are read once per selection."""
        runtime_type, plans, ask_type, shared = shape
        try:
            if ask_type and not _is_own_type(runtime_type, item, info):
                return _LONG
            values = self._completed.get(item, plans) if shared else None
            if values is None:
                values = _leaves(plans, item)
                if values is None:
                    return _LONG
                if shared:
                    self._completed.put(item, plans, values)
        except Exception:
            return _LONG
        return values

    def _plain_object(
        self,
        return_type: GraphQLObjectType,
        field_details_list: Any,
        info: GraphQLResolveInfo[Any],
        result: Any,
    ) -> Any:
        """An object whose selected fields are all plain leaves, completed in one pass, or
        ``_LONG``."""
        if not self._lean or not _is_own_type(return_type, result, info):
            return _LONG
        grouped_field_set, new_defer_usages, _ = self.collect_subfields(
            return_type, field_details_list
        )
        if new_defer_usages:
            return _LONG
        plans = self._object_plan(return_type, grouped_field_set)
        values = None if plans is None else _leaves(plans, result)
        return _LONG if values is None else values

    def _object_plan(self, parent_type: GraphQLObjectType, grouped_field_set: Any) -> _Plans | None:
        """The plans of a selection whose fields are all plain leaves, else ``None``; kept
        for the request (graphql-core keeps the selection alive as long)."""
        key = id(grouped_field_set)
        if key in self._objects:
            return self._objects[key]
        plans = []
        for response_name, field_details_list in grouped_field_set.items():
            plan = self._leaf_plan(parent_type, field_details_list)
            if plan is None:
                self._objects[key] = None
                return None
            plans.append((response_name, *plan))
        selections = self._selections
        if len(selections) >= _MAX_SELECTIONS:
            selections.clear()
        found = self._objects[key] = selections.setdefault(tuple(plans), tuple(plans))
        return found

    def execute_fields(
        self,
        parent_type: GraphQLObjectType,
        source_value: Any,
        path: Path | None,
        grouped_field_set: Any,
        position_context: Any,
    ) -> Any:
        """The plain leaves of an object that also has other fields, read in place."""
        if path is None or not self._lean:
            return super().execute_fields(
                parent_type, source_value, path, grouped_field_set, position_context
            )
        short: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        for response_name, field_details_list in grouped_field_set.items():
            value = self._plain_leaf(parent_type, source_value, field_details_list)
            if value is _LONG:
                rest[response_name] = field_details_list
            else:
                short[response_name] = value
        if not rest:
            return short
        return _merged(
            grouped_field_set,
            short,
            super().execute_fields(parent_type, source_value, path, rest, position_context),
            self.is_awaitable,
        )

    def _plain_leaf(
        self, parent_type: GraphQLObjectType, source: Any, field_details_list: Any
    ) -> Any:
        plan = self._leaf_plan(parent_type, field_details_list)
        return _LONG if plan is None else _read(plan, source)

    def _leaf_plan(self, parent_type: GraphQLObjectType, field_details_list: Any) -> _Plan | None:
        node = field_details_list[0].node
        if node.arguments:
            return None
        key = (parent_type.name, node.name.value)
        try:
            return self._plans[key]
        except KeyError:
            plan = self._plans[key] = _plan(parent_type, node.name.value)
            return plan


def _leaves(plans: _Plans, source: Any) -> dict[str, Any] | None:
    """The values of an object's plain leaves, or ``None`` if one takes the long path; a
    ``str`` of a ``String`` or an ``ID`` is taken as it is without a call (most leaves)."""
    values: dict[str, Any] = {}
    for response_name, attribute, coerce, non_null, keeps_str in plans:
        if attribute is None:  # __typename
            values[response_name] = coerce
            continue
        value = getattr(source, attribute, Undefined)
        if not keeps_str or type(value) is not str:
            value = _coerced(value, coerce, non_null)
            if value is _LONG:
                return None
        values[response_name] = value
    return values


def _read(plan: _Plan, source: Any) -> Any:
    """A plain leaf's value as the long path completes it, or ``_LONG`` to take that path."""
    attribute, coerce, non_null, keeps_str = plan
    if attribute is None:  # __typename
        return coerce
    value = getattr(source, attribute, Undefined)
    if keeps_str and type(value) is str:  # what ``String`` and ``ID`` make of a str
        return value
    return _coerced(value, coerce, non_null)


def _coerced(value: Any, coerce: Callable[[Any], Any], non_null: bool) -> Any:
    if value is None and not non_null:
        return None
    if value is None or value is Undefined or isinstance(value, Exception):
        return _LONG
    try:
        coerced = coerce(value)
    except Exception:
        return _LONG
    return _LONG if coerced is None or coerced is Undefined else coerced


async def _breathe(field_details_list: Any, path: Path) -> None:
    try:
        await pacing.breathe()
    except Exception as raw_error:  # located at the list, as graphql-core does for an iterator
        nodes = [details.node for details in field_details_list]
        raise located_error(raw_error, nodes, path.as_list()) from raw_error


def _plan(parent_type: GraphQLObjectType, name: str) -> _Plan | None:
    if name == _TYPENAME:
        return None, parent_type.name, True, False
    graphql_field = parent_type.fields.get(name)
    if (
        graphql_field is None
        or graphql_field.args
        or not getattr(graphql_field.resolve, "_is_default", False)
    ):
        return None
    definition = (graphql_field.extensions or {}).get(_BACKREF)
    leaf = get_nullable_type(graphql_field.type)
    if definition is None or not is_leaf_type(leaf):
        return None
    coerce = _memoised(leaf) if isinstance(leaf, GraphQLEnumType) else leaf.coerce_output_value
    keeps_str = leaf is GraphQLString or leaf is GraphQLID
    non_null = isinstance(graphql_field.type, GraphQLNonNull)
    return definition.python_name, coerce, non_null, keeps_str


def _memoised(enum: GraphQLLeafType) -> Callable[[Any], Any]:
    """An enum's coercion with its answers kept: strawberry's scans every value each time."""
    known: dict[Any, Any] = {}

    def coerce(value: Any) -> Any:
        try:
            return known[value]
        except KeyError:
            coerced = known[value] = enum.coerce_output_value(value)
            return coerced
        except TypeError:  # not hashable
            return enum.coerce_output_value(value)

    return coerce


def _resolved_by_class(interface: GraphQLInterfaceType, result: Any) -> bool:
    definition = (interface.extensions or {}).get(_BACKREF)
    return (
        definition is not None
        and definition.resolve_type is None
        and isinstance(result, definition.origin)
        and has_object_definition(result)
        and not result.__strawberry_definition__.is_graphql_generic
    )


def _class_decides(object_type: GraphQLObjectType) -> bool:
    """Whether ``is_type_of`` answers alike for every plain object of one class: it is
    strawberry's own (the type declares none) for a type that is not generic, and that
    one asks only ``isinstance`` of an object that is not cast (each item is checked)."""
    definition = (object_type.extensions or {}).get(_BACKREF)
    return object_type.is_type_of is None or (
        definition is not None
        and definition.is_type_of is None
        and definition.concrete_of is None
        and not definition.is_graphql_generic
    )


def _is_own_type(
    return_type: GraphQLObjectType, result: Any, info: GraphQLResolveInfo[Any]
) -> bool:
    return return_type.is_type_of is None or return_type.is_type_of(result, info) is True


def _merged(
    grouped_field_set: Any,
    short: dict[str, Any],
    long: Any,
    is_awaitable: Callable[[Any], bool],
) -> Any:
    """The values of both paths in the order of the selection."""

    def merge(resolved: dict[str, Any]) -> dict[str, Any]:
        return {
            name: short[name] if name in short else resolved[name]
            for name in grouped_field_set
            if name in short or name in resolved
        }

    if not is_awaitable(long):
        return merge(long)

    async def later() -> dict[str, Any]:
        return merge(await long)

    return later()
