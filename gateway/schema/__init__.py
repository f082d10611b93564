"""The GraphQL schema: root types merged from the graph and memory modules, plus extensions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.tools import merge_types
from strawberry.types import ExecutionResult
from strawberry.types.base import get_object_definition
from strawberry.types.graphql import OperationType

from gateway.schema import enum_docs as enum_docs  # describes the enums' values on import
from gateway.schema.arguments import check_every_argument
from gateway.schema.budget import TimeBudget
from gateway.schema.context import GraphContext
from gateway.schema.cost import CostLimit, ReaderPool
from gateway.schema.errors import EXCEPTION_HANDLERS, MaskUnexpectedErrors
from gateway.schema.execution import LeanExecution
from gateway.schema.exports import ExportQuery
from gateway.schema.federation import GatewaySchema
from gateway.schema.limits import Limits as Limits  # re-exported for create_app
from gateway.schema.limits import ShortDocumentsValidationCache, limit_extensions
from gateway.schema.memory import MEMORY_TYPES, MemoryMutation, MemoryQuery
from gateway.schema.mutations import GraphMutation
from gateway.schema.nodes import NODE_TYPES
from gateway.schema.queries import GraphQuery
from gateway.schema.scalars import SCALAR_OVERRIDES
from gateway.schema.subscriptions import GraphSubscription

if TYPE_CHECKING:
    from collections.abc import Iterator

    import strawberry

    from gateway.schema.observability import Observer

Query = merge_types("Query", (GraphQuery, MemoryQuery, ExportQuery))
check_every_argument(get_object_definition(Query, strict=True).fields)
Mutation = merge_types("Mutation", (GraphMutation, MemoryMutation))


class ReadOnlyGuard(SchemaExtension):
    """A request authenticated with the read token may query but not mutate."""

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context.context
        if self.execution_context.operation_type is OperationType.MUTATION and not getattr(
            context, "can_write", True
        ):
            self.execution_context.result = ExecutionResult(
                data=None,
                errors=[
                    GraphQLError(
                        "This token may only query; mutations need the internal token.",
                        extensions={"code": "FORBIDDEN"},
                    )
                ],
            )
        yield


class MarkWrites(SchemaExtension):
    """Marks the context of a mutation about to execute (``GraphContext.writing``)."""

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context.context
        if self.execution_context.operation_type is OperationType.MUTATION and isinstance(
            context, GraphContext
        ):
            context.writing = True
        yield


def build_schema(
    limits: Limits | None = None, observer: Observer | None = None
) -> strawberry.Schema:
    limits = limits or Limits()
    observed = [observer.extension] if observer is not None else []
    pool = ReaderPool(limits.heavy_readers, limits.heavy_cost)
    schema = GatewaySchema(
        query=Query,
        mutation=Mutation,
        subscription=GraphSubscription,
        types=[*NODE_TYPES.values(), *MEMORY_TYPES],
        exception_handlers=EXCEPTION_HANDLERS,
        execution_context_class=LeanExecution,
        scalar_overrides=SCALAR_OVERRIDES,
        extensions=[
            # Factories: a fresh extension per request; the parse and validation caches
            # behind CachedParse/ValidationCache are shared.
            *limit_extensions(limits),
            lambda: ShortDocumentsValidationCache(maxsize=256),
            ReadOnlyGuard,
            lambda: TimeBudget(seconds=limits.query_timeout_seconds),
            # Both set what each root field of a query runs within (gateway.schema.budget).
            lambda: CostLimit(
                max_cost=limits.max_cost, max_cost_read=limits.max_cost_read, pool=pool
            ),
            MarkWrites,
            MaskUnexpectedErrors,
            # Last: its resolve hook wraps the others' (see observability.py).
            *observed,
        ],
    )
    enum_docs.describe_arguments(schema._schema)
    return schema


def schema_sdl(schema: strawberry.Schema | None = None) -> str:
    """The schema as SDL, as written to ``schema.graphql``."""
    return (schema or build_schema()).as_str() + "\n"
