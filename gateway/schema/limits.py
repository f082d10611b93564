"""Request limits checked before a document runs (SPEC §8): depth, aliases, tokens, introspection,
fragment nesting, operation selection and cost.

Strawberry's limiters do the counting; the errors they report are marked with
``extensions.code = "QUERY_LIMIT_EXCEEDED"`` so a client can tell a refused document from a
mistyped one. Strawberry's depth limiter follows fragment spreads by recursion, so a chain of
spreads deeper than ``MAX_FRAGMENT_NESTING`` (or a cycle, which validation reports) is refused
before it runs. A document of several operations needs ``operationName`` (GraphQL over HTTP).
The cost limit and the reader pool are ``gateway.schema.cost``; the time budget is enforced
while a query runs (``DomainErrorsExtension``, ``gateway.schema.pacing``) and the body size
before anything is read (``gateway.app.BodySizeLimit``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from graphql import (
    ASTValidationRule,
    DocumentNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSyntaxError,
    OperationDefinitionNode,
    parse,
)
from strawberry.extensions import (
    AddValidationRules,
    DisableIntrospection,
    MaxAliasesLimiter,
    QueryDepthLimiter,
    SchemaExtension,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from graphql import Node, ValidationContext

LIMIT_CODE = "QUERY_LIMIT_EXCEEDED"
PARSER_CACHE_SIZE = 256
MAX_FRAGMENT_NESTING = 32


@dataclass(frozen=True, slots=True)
class Limits:
    """Request limits; the defaults suit the playground and typed clients."""

    max_depth: int = 12
    max_aliases: int = 30
    max_tokens: int = 4000
    query_timeout_seconds: float | None = 10.0
    introspection: bool = True
    max_cost: int = 100_000
    max_cost_read: int = 50_000
    heavy_cost: int = 1_000
    heavy_readers: int = 4


def limit_error(error: GraphQLError) -> GraphQLError:
    """``error`` marked as a refused limit."""
    return GraphQLError(
        error.message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        extensions={**(error.extensions or {}), "code": LIMIT_CODE},
    )


def _coded(rule: type[ASTValidationRule], *, guarded: bool = False) -> type[ASTValidationRule]:
    """``rule`` with every error it reports marked by ``limit_error``.

    Strawberry's depth and alias validators do all their work in ``__init__``, so the context's
    error callback is wrapped for exactly that call. A ``guarded`` rule (the depth limiter,
    which recurses through spreads) first checks the fragment nesting and does not run over it.
    """

    class CodedLimit(rule):  # type: ignore[valid-type, misc]
        def __init__(self, context: ValidationContext) -> None:
            nesting = fragment_nesting(context.document) if guarded else 0
            if nesting is None or nesting > MAX_FRAGMENT_NESTING:
                ASTValidationRule.__init__(self, context)
                if nesting is not None:  # a cycle is reported by NoFragmentCyclesRule
                    context.report_error(
                        limit_error(
                            GraphQLError(
                                f"Fragment spreads nest {nesting} deep; the limit is "
                                f"{MAX_FRAGMENT_NESTING}."
                            )
                        )
                    )
                return
            report = context.on_error
            context.on_error = lambda error: report(limit_error(error))  # type: ignore[method-assign]
            try:
                super().__init__(context)
            finally:
                context.on_error = report  # type: ignore[method-assign]

    return CodedLimit


def fragment_nesting(document: DocumentNode) -> int | None:
    """How deep fragment spreads nest (0: none); ``None`` when they form a cycle.

    Iterative, so that the answer itself needs no recursion however deep the chain."""
    spreads: dict[str | None, set[str]] = {}
    for definition in document.definitions:
        name = definition.name.value if isinstance(definition, FragmentDefinitionNode) else None
        if hasattr(definition, "selection_set"):
            spreads.setdefault(name, set()).update(_spreads_in(definition))
    depth: dict[str, int] = {}
    on_path: set[str] = set()
    for start in spreads.get(None, set()) | set(name for name in spreads if name):
        stack: list[tuple[str, bool]] = [(start, False)]
        while stack:
            name, done = stack.pop()
            if done:
                on_path.discard(name)
                depth[name] = 1 + max((depth[child] for child in spreads.get(name, ())), default=0)
                continue
            if name in depth:
                continue
            if name in on_path:
                return None
            on_path.add(name)
            stack.append((name, True))
            stack.extend((child, False) for child in spreads.get(name, ()) if child not in depth)
    return max((depth.get(name, 0) for name in spreads.get(None, set())), default=0)


def _spreads_in(node: Node) -> set[str]:
    found: set[str] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, FragmentSpreadNode):
            found.add(current.name.value)
        selection_set = getattr(current, "selection_set", None)
        if selection_set is not None:
            pending.extend(selection_set.selections)
    return found


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
            document = _parse(context.query or "", self._max_tokens)
        except GraphQLSyntaxError as error:
            if error.message.endswith("Parsing aborted."):
                raise limit_error(error) from error
            raise
        operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
        if context.operation_name is None and len(operations) > 1:
            # graphql-core would say so too, but strawberry picks the first operation first.
            raise GraphQLError("Must provide operation name if query contains multiple operations.")
        context.graphql_document = document
        yield


@lru_cache(maxsize=PARSER_CACHE_SIZE)
def _parse(query: str, max_tokens: int) -> DocumentNode:
    return parse(query, max_tokens=max_tokens)


def limit_extensions(limits: Limits) -> list[Callable[[], Any]]:
    """Extension factories enforcing ``limits``, ``CachedParse`` (the parser cache) included.

    The validation rules are built once: ``ValidationCache`` keys on the rule classes, and
    strawberry's limiters make a new class per instance, which would defeat the cache.
    """
    rules = [
        *(_coded(r, guarded=True) for r in QueryDepthLimiter(limits.max_depth).validation_rules),
        *(_coded(r) for r in MaxAliasesLimiter(limits.max_aliases).validation_rules),
    ]
    if not limits.introspection:
        rules.extend(DisableIntrospection().validation_rules)
    return [lambda: CachedParse(limits.max_tokens), lambda: AddValidationRules(rules)]
