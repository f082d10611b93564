"""The time budget of a query (SPEC §8): its root fields share ``seconds`` from the start of
execution, and each root field answers for everything it selects.

``TimeBudget`` (a schema extension) sets the deadline (``pacing.DEADLINE``) for queries only:
a mutation is never cut short, a write is not abandoned halfway. ``BudgetedExecution`` (the
execution context) runs each root field of a query — its wait for a slot of the reader pool
(``cost.ADMISSION``), its resolver, and the completion of every field below it — within that
deadline. When the deadline passes, or a field anywhere below raises
``QueryLimitExceededError`` (a paced list's step, a store's statement timeout), the root field
answers its ``QueryLimitExceeded`` member and the other root fields keep their answers.

A field below a root field has no member to answer with: a node's relationship list is
non-null, and a relationship left ``null`` would read as "none". So the enclosing root field
answers ``QueryLimitExceeded`` as a whole, never a partial answer that looks complete. A root
field whose type has no such member (``health``) answers a top-level error coded
``QUERY_LIMIT_EXCEEDED``, as graphql-core answers any error of a non-null field.

Strawberry's hooks do not reach far enough for this: a field extension, an exception handler
or a schema extension's ``resolve`` wraps a resolver only, and the fields below a root field
are completed after its resolver has returned. The cut is therefore made around graphql-core's
``execute_field`` of each root field; the member it answers is the one the exception handler
makes of the same error in a resolver (``errors.member_in_place``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from graphql import GraphQLError, GraphQLUnionType, OperationType, get_named_type
from graphql.error import located_error
from strawberry.extensions import SchemaExtension
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types import Info
from strawberry.types.base import get_object_definition
from strawberry.types.graphql import OperationType as StrawberryOperationType

from gateway.schema.cost import ADMISSION, WAITED_FOR_A_SLOT
from gateway.schema.errors import QueryLimitExceeded, member_in_place
from gateway.schema.pacing import DEADLINE, OVER_BUDGET
from resolvers.errors import QueryLimitExceededError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from graphql import GraphQLField, GraphQLObjectType, GraphQLOutputType
    from graphql.pyutils import Path

    from gateway.schema.cost import Admission

LIMIT_MEMBER = get_object_definition(QueryLimitExceeded, strict=True).name


class TimeBudget(SchemaExtension):
    """Sets the deadline of a query, ``seconds`` from the start of its execution."""

    def __init__(self, *, seconds: float | None = None) -> None:
        super().__init__()
        self._seconds = seconds

    def on_execute(self) -> Iterator[None]:
        is_query = self.execution_context.operation_type is StrawberryOperationType.QUERY
        if self._seconds is None or not is_query:
            yield
            return
        token = DEADLINE.set(asyncio.get_running_loop().time() + self._seconds)
        try:
            yield
        finally:
            DEADLINE.reset(token)


class BudgetedExecution(StrawberryGraphQLCoreExecutionContext):
    """Each root field of a query within the query's deadline (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._budgeted = self.operation.operation is OperationType.QUERY
        # Root fields (response names) whose type has a ``QueryLimitExceeded`` member.
        self._answering: set[str] = set()

    def execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: Any,
        path: Path,
        position_context: Any,
    ) -> Any:
        name = field_details_list[0].node.name.value
        field_def = (
            self.schema.get_field(parent_type, name)
            if path.prev is None and self._budgeted and not name.startswith("__")
            else None
        )
        if field_def is None:  # not a root field of a query that does work (``__typename``)
            return super().execute_field(
                parent_type, source, field_details_list, path, position_context
            )
        if _answers_limit(field_def.type):
            self._answering.add(str(path.key))
        admission = ADMISSION.get()
        waits = admission is not None and path.key in admission.heavy
        if DEADLINE.get() is None and not waits and path.key not in self._answering:
            return super().execute_field(
                parent_type, source, field_details_list, path, position_context
            )
        return self._within_budget(
            field_def,
            parent_type,
            source,
            field_details_list,
            path,
            position_context,
            admission if waits else None,
        )

    async def _within_budget(
        self,
        field_def: GraphQLField,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: Any,
        path: Path,
        position_context: Any,
        admission: Admission | None,
    ) -> Any:
        budget = asyncio.timeout_at(DEADLINE.get())
        waiting = admission is not None
        try:
            async with budget:
                if admission is not None:
                    await admission.admitted()
                waiting = False
                value = super().execute_field(
                    parent_type, source, field_details_list, path, position_context
                )
                return await value if self.is_awaitable(value) else value
        except TimeoutError:
            if not budget.expired():
                raise
            exceeded = QueryLimitExceededError(WAITED_FOR_A_SLOT if waiting else OVER_BUDGET)
        except GraphQLError as error:
            if not isinstance(error.original_error, QueryLimitExceededError):
                raise
            exceeded = error.original_error
        if path.key not in self._answering:
            self.handle_field_error(exceeded, field_def.type, field_details_list, path)
            return None
        info = self.build_resolve_info(
            field_def, [details.node for details in field_details_list], parent_type, path
        )
        field = field_def.extensions[GraphQLCoreConverter.DEFINITION_BACKREF]
        member = member_in_place(exceeded, field=field, info=Info(_raw_info=info, _field=field))
        self._tell_observers(member)
        value = self.complete_value(
            field_def.type, field_details_list, info, path, member, position_context
        )
        return await value if self.is_awaitable(value) else value

    def _tell_observers(self, member: Any) -> None:
        """The extensions that note what root fields answered (``answered``) see the member
        too: their ``resolve`` hook saw only the resolver's value, if it ran at all."""
        manager = self.middleware_manager
        for middleware in manager.middlewares if manager is not None else ():
            answered = getattr(middleware, "answered", None)
            if callable(answered):
                answered(member)

    def handle_field_error(
        self,
        raw_error: Exception,
        return_type: GraphQLOutputType,
        field_details_list: Any,
        path: Path,
    ) -> None:
        """A field below a root field that answers ``QueryLimitExceeded`` passes an exceeded
        limit up to it, even where it could be ``null``."""
        if path.prev is not None and _over_limit(raw_error) and _root(path) in self._answering:
            nodes = [details.node for details in field_details_list]
            raise located_error(raw_error, nodes, path.as_list())
        super().handle_field_error(raw_error, return_type, field_details_list, path)


def _answers_limit(return_type: GraphQLOutputType) -> bool:
    named = get_named_type(return_type)
    return isinstance(named, GraphQLUnionType) and any(
        member.name == LIMIT_MEMBER for member in named.types
    )


def _over_limit(error: Exception) -> bool:
    original = error.original_error if isinstance(error, GraphQLError) else error
    return isinstance(original, QueryLimitExceededError)


def _root(path: Path) -> str:
    while path.prev is not None:
        path = path.prev
    return str(path.key)
