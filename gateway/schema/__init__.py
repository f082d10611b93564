"""The GraphQL schema: root types merged from the graph and memory modules, plus extensions."""

from __future__ import annotations

from dataclasses import dataclass

import strawberry
from graphql import GraphQLError
from strawberry.extensions import (
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
    ValidationCache,
)
from strawberry.tools import merge_types
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from gateway.schema.errors import DomainErrorsExtension, MaskUnexpectedErrors
from gateway.schema.memory import MEMORY_TYPES, MemoryMutation, MemoryQuery
from gateway.schema.mutations import GraphMutation
from gateway.schema.nodes import NODE_TYPES
from gateway.schema.queries import GraphQuery
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

Query = merge_types("Query", (GraphQuery, MemoryQuery))
Mutation = merge_types("Mutation", (GraphMutation, MemoryMutation))


@dataclass(frozen=True, slots=True)
class Limits:
    """Request limits (SPEC §8); the defaults suit the playground and typed clients."""

    max_depth: int = 12
    max_aliases: int = 30
    max_tokens: int = 4000


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


def build_schema(limits: Limits | None = None) -> strawberry.Schema:
    limits = limits or Limits()
    return strawberry.federation.Schema(
        query=Query,
        mutation=Mutation,
        types=[*NODE_TYPES.values(), *MEMORY_TYPES],
        extensions=[
            # Factories: a fresh extension per request; the parse and validation caches
            # behind ParserCache/ValidationCache are shared per size.
            lambda: ParserCache(maxsize=256),
            lambda: ValidationCache(maxsize=256),
            lambda: QueryDepthLimiter(max_depth=limits.max_depth),
            lambda: MaxAliasesLimiter(max_alias_count=limits.max_aliases),
            lambda: MaxTokensLimiter(max_token_count=limits.max_tokens),
            ReadOnlyGuard,
            DomainErrorsExtension,
            MaskUnexpectedErrors,
        ],
    )


def schema_sdl(schema: strawberry.Schema | None = None) -> str:
    """The schema as SDL, as written to ``schema.graphql``."""
    return (schema or build_schema()).as_str() + "\n"
