"""Request limits checked before a document runs (SPEC §8): depth, aliases, tokens, introspection.

Strawberry's limiters do the counting; the errors they report are marked with
``extensions.code = "QUERY_LIMIT_EXCEEDED"`` so a client can tell a refused document from a
mistyped one. The time budget is enforced while a query runs (``DomainErrorsExtension``) and the
body size before anything is read (``gateway.app.BodySizeLimit``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from graphql import DocumentNode, GraphQLError, GraphQLSyntaxError, parse
from strawberry.extensions import (
    AddValidationRules,
    DisableIntrospection,
    MaxAliasesLimiter,
    QueryDepthLimiter,
    SchemaExtension,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from graphql import ASTValidationRule, ValidationContext

LIMIT_CODE = "QUERY_LIMIT_EXCEEDED"
PARSER_CACHE_SIZE = 256


@dataclass(frozen=True, slots=True)
class Limits:
    """Request limits; the defaults suit the playground and typed clients."""

    max_depth: int = 12
    max_aliases: int = 30
    max_tokens: int = 4000
    query_timeout_seconds: float | None = 10.0
    introspection: bool = True


def limit_error(error: GraphQLError) -> GraphQLError:
    """``error`` marked as a refused limit."""
    return GraphQLError(
        error.message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        extensions={**(error.extensions or {}), "code": LIMIT_CODE},
    )


def _coded(rule: type[ASTValidationRule]) -> type[ASTValidationRule]:
    """``rule`` with every error it reports marked by ``limit_error``.

    Strawberry's depth and alias validators do all their work in ``__init__``, so the context's
    error callback is wrapped for exactly that call.
    """

    class CodedLimit(rule):  # type: ignore[valid-type, misc]
        def __init__(self, context: ValidationContext) -> None:
            report = context.on_error
            context.on_error = lambda error: report(limit_error(error))  # type: ignore[method-assign]
            try:
                super().__init__(context)
            finally:
                context.on_error = report  # type: ignore[method-assign]

    return CodedLimit


class CachedParse(SchemaExtension):
    """The parser cache (a shared LRU of documents), with the parser stopping after ``max_tokens``.

    Replaces strawberry's ``ParserCache`` + ``MaxTokensLimiter`` so that the limit's error can
    be coded: graphql-core reports each of its parse limits as a syntax error ending in
    "Parsing aborted.", which only the text tells apart from a typo.
    """

    def __init__(self, max_tokens: int) -> None:
        super().__init__()
        self._max_tokens = max_tokens

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        try:
            context.graphql_document = _parse(context.query or "", self._max_tokens)
        except GraphQLSyntaxError as error:
            if error.message.endswith("Parsing aborted."):
                raise limit_error(error) from error
            raise
        yield


@lru_cache(maxsize=PARSER_CACHE_SIZE)
def _parse(query: str, max_tokens: int) -> DocumentNode:
    return parse(query, max_tokens=max_tokens)


def limit_extensions(limits: Limits) -> list[Callable[[], Any]]:
    """Extension factories enforcing ``limits``, ``CachedParse`` (the parser cache) included.

    The validation rules are built once: ``ValidationCache`` keys on the rule classes, and
    strawberry's limiters make a new class per instance, which would defeat the cache.
    """
    limiters = [
        QueryDepthLimiter(max_depth=limits.max_depth),
        MaxAliasesLimiter(max_alias_count=limits.max_aliases),
    ]
    rules = [_coded(rule) for limiter in limiters for rule in limiter.validation_rules]
    if not limits.introspection:
        rules.extend(DisableIntrospection().validation_rules)
    return [lambda: CachedParse(limits.max_tokens), lambda: AddValidationRules(rules)]
