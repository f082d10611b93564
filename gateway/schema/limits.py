"""Request limits checked before a document runs (SPEC §8): depth, aliases, tokens, introspection,
fragment nesting and expansion, operation selection and cost.

Strawberry's limiters do the counting; the errors they report are marked with
``extensions.code = "QUERY_LIMIT_EXCEEDED"`` so a client can tell a refused document from a
mistyped one. Strawberry's depth and alias limiters follow fragment spreads by recursion, and
graphql-core's own rules (overlapping fields above all) grow with the fragments' expansion, so
a chain of spreads deeper than ``MAX_FRAGMENT_NESTING`` or fragments that expand to more than
``MAX_EXPANDED_SELECTIONS`` selections (each level spreading the next twice) are refused right
after parsing, before any validation rule runs; the check is one pass over the spreads. A cycle
is left to validation (which reports it), and the limiters skip it. So is a selection set that
selects one response name more than ``MAX_REPEATED_FIELD`` times once its fragments are merged
in (``{ health { status } health { status } … }``): validation compares every pair of fields
sharing a name, so a 4,000-token document of one field repeated held the event loop for
seconds. An integer literal of more digits than Python converts (``MAX_INT_LITERAL_DIGITS``)
is refused there too: graphql-core would fail converting it. A document of several operations
needs ``operationName`` (GraphQL over HTTP). The cost limit and the reader pool are
``gateway.schema.cost``; the time budget is enforced while a query runs, root field by root
field (``gateway.schema.budget``, ``gateway.schema.pacing``), and the body size before anything
is read (``gateway.http.app.BodySizeLimit``).
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from graphql import (
    ASTValidationRule,
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSyntaxError,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    Visitor,
    parse,
    visit,
)
from strawberry.extensions import (
    AddValidationRules,
    DisableIntrospection,
    MaxAliasesLimiter,
    QueryDepthLimiter,
    SchemaExtension,
    ValidationCache,
)

from gateway.schema.errors import PARSE_FAILED, VALIDATION_FAILED, coded

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator

    from graphql import Node, ValidationContext

LIMIT_CODE = "QUERY_LIMIT_EXCEEDED"
PARSER_CACHE_SIZE = 256
# Longer documents are neither kept by the parser and validation caches (256 documents of
# megabytes would be gigabytes) nor parsed on the event loop.
CACHED_DOCUMENT_CHARS = 16 * 1024
MAX_FRAGMENT_NESTING = 32
MAX_EXPANDED_SELECTIONS = 10_000  # selections once every fragment is expanded where spread
MAX_REPEATED_FIELD = 50  # one response name in one selection set, its fragments merged in


class ShortDocumentsValidationCache(ValidationCache):
    """strawberry's validation cache (shared by every request), for documents of at most
    ``CACHED_DOCUMENT_CHARS``: a longer one is validated afresh each time (by strawberry)."""

    def on_validate(self) -> Iterator[None]:
        if len(self.execution_context.query or "") > CACHED_DOCUMENT_CHARS:
            yield
            return
        yield from super().on_validate()


@dataclass(frozen=True, slots=True)
class Limits:
    """Request limits; the defaults suit the playground and typed clients."""

    max_depth: int = 12
    max_aliases: int = 30
    max_tokens: int = 4000
    # A document's length: a longer value belongs in the variables (parsing text is Python's
    # work, ~0.1 s a megabyte, and a syntax error's position costs a scan of it all).
    max_document_chars: int = 1 << 20
    query_timeout_seconds: float | None = 10.0
    introspection: bool = True
    max_cost: int = 200_000
    max_cost_read: int = 100_000
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


def _coded(rule: type[ASTValidationRule], *, reports_shape: bool) -> type[ASTValidationRule]:
    """``rule`` with every error it reports marked by ``limit_error``.

    Strawberry's depth and alias validators do all their work in ``__init__``, so the context's
    error callback is wrapped for exactly that call. Both recurse through fragment spreads:
    neither runs on a document whose fragments nest or expand too far (``fragment_shape``),
    which the one that ``reports_shape`` refuses.
    """

    class CodedLimit(rule):  # type: ignore[valid-type, misc]
        def __init__(self, context: ValidationContext) -> None:
            shape = fragment_shape(context.document)
            problem = _fragment_problem(shape)
            if shape is None or problem is not None:
                ASTValidationRule.__init__(self, context)
                # A cycle or an unknown fragment is reported by its own rule; the rest by one
                # rule only.
                if problem is not None and reports_shape:
                    context.report_error(limit_error(GraphQLError(problem)))
                return
            report = context.on_error
            context.on_error = lambda error: report(limit_error(error))  # type: ignore[method-assign]
            try:
                super().__init__(context)
            finally:
                context.on_error = report  # type: ignore[method-assign]

    return CodedLimit


def _fragment_problem(shape: tuple[int, int] | None) -> str | None:
    if shape is None:
        return None
    nesting, expanded = shape
    if nesting > MAX_FRAGMENT_NESTING:
        return f"Fragment spreads nest {nesting} deep; the limit is {MAX_FRAGMENT_NESTING}."
    if expanded > MAX_EXPANDED_SELECTIONS:
        limit = MAX_EXPANDED_SELECTIONS
        return f"Fragments expand to {expanded} selections; the limit is {limit}."
    return None


def fragment_shape(document: DocumentNode) -> tuple[int, int] | None:
    """``(nesting, expanded)``: how deep fragment spreads nest (0: none) and how many
    selections (fields, inline fragments, spreads) the operations hold once every fragment is
    expanded where it is spread, which bounds the work of the limiters that follow spreads;
    ``None`` when the spreads form a cycle or name a fragment not defined (validation refuses
    both; the limiters would fail on them).

    Iterative and memoised, so that the answer itself needs neither deep recursion nor time
    exponential in the nesting (``F0 { ...F1 ...F1 }``, ``F1 { ...F2 ...F2 }``, …)."""
    spreads: dict[str | None, list[str]] = {}
    size: dict[str | None, int] = {}
    for definition in document.definitions:
        name = definition.name.value if isinstance(definition, FragmentDefinitionNode) else None
        if hasattr(definition, "selection_set"):
            found, selections = _spreads_in(definition)
            spreads.setdefault(name, []).extend(found)
            size[name] = size.get(name, 0) + selections
    if any(child not in size for found in spreads.values() for child in found):
        return None  # a fragment spread and never defined: validation refuses it
    shape: dict[str, tuple[int, int]] = {}
    on_path: set[str] = set()
    for start in [*spreads.get(None, []), *(name for name in spreads if name)]:
        stack: list[tuple[str, bool]] = [(start, False)]
        while stack:
            name, done = stack.pop()
            if done:
                on_path.discard(name)
                below = [shape[child] for child in spreads.get(name, ()) if child in shape]
                shape[name] = (
                    1 + max((depth for depth, _ in below), default=0),
                    size[name] + sum(expanded for _, expanded in below),
                )
                continue
            if name in shape:
                continue
            if name in on_path:
                return None
            on_path.add(name)
            stack.append((name, True))
            stack.extend((child, False) for child in spreads.get(name, ()) if child not in shape)
    top = [shape[name] for name in spreads.get(None, []) if name in shape]
    nesting = max((depth for depth, _ in top), default=0)
    return nesting, size.get(None, 0) + sum(expanded for _, expanded in top)


def repeated_field_problem(document: DocumentNode) -> str | None:
    """Why ``document`` is refused for a response name selected too often in one selection set
    (fields of its inline fragments and spread fragments merged in, each fragment once, as
    validation merges them), or None. Call it only on spreads that nest and expand within
    the limits: it recurses once per nesting level of spreads."""
    fragments = {
        d.name.value: d.selection_set
        for d in document.definitions
        if isinstance(d, FragmentDefinitionNode)
    }
    merged: dict[str, Counter[str]] = {}

    def keys_of(selection_set: SelectionSetNode) -> Counter[str]:
        counts: Counter[str] = Counter()
        spread: set[str] = set()  # validation merges a fragment once per selection set
        pending = list(selection_set.selections)
        while pending:
            selection = pending.pop()
            if isinstance(selection, FieldNode):
                counts[(selection.alias or selection.name).value] += 1
            elif isinstance(selection, InlineFragmentNode):
                pending.extend(selection.selection_set.selections)
            elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in spread:
                name = selection.name.value
                spread.add(name)
                if name in fragments and name not in merged:
                    merged[name] = keys_of(fragments[name])
                counts.update(merged.get(name, {}))
        return counts

    for selection_set in _selection_sets(document):
        counts = keys_of(selection_set)
        if counts:
            name, count = counts.most_common(1)[0]
            if count > MAX_REPEATED_FIELD:
                return (
                    f"{name!r} is selected {count} times in one selection set; "
                    f"the limit is {MAX_REPEATED_FIELD}."
                )
    return None


def _selection_sets(document: DocumentNode) -> Iterator[SelectionSetNode]:
    """Every selection set validation merges on its own: those of operations, fragments and
    fields (an inline fragment's belongs to the set around it)."""
    pending: list[Node] = list(document.definitions)
    while pending:
        node = pending.pop()
        selection_set = getattr(node, "selection_set", None)
        if selection_set is None:
            continue
        if not isinstance(node, InlineFragmentNode):
            yield selection_set
        pending.extend(selection_set.selections)


def _spreads_in(node: Node) -> tuple[list[str], int]:
    """The fragments ``node`` spreads (once per spread) and how many selections it holds."""
    found: list[str] = []
    selections = 0
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, FragmentSpreadNode):
            found.append(current.name.value)
        selection_set = getattr(current, "selection_set", None)
        if selection_set is not None:
            selections += len(selection_set.selections)
            pending.extend(selection_set.selections)
    return found, selections


class CachedParse(SchemaExtension):
    """The parser cache (a shared LRU of documents), with the parser stopping after ``max_tokens``.

    Replaces strawberry's ``ParserCache`` + ``MaxTokensLimiter`` so that the limit's error can
    be coded: graphql-core reports each of its parse limits as a syntax error ending in
    "Parsing aborted.", which only the text tells apart from a typo.
    """

    def __init__(self, max_tokens: int, max_chars: int) -> None:
        super().__init__()
        self._max_tokens = max_tokens
        self._max_chars = max_chars

    async def on_parse(self) -> AsyncIterator[None]:
        context = self.execution_context
        query = context.query or ""
        if len(query) > self._max_chars:
            raise limit_error(
                GraphQLError(
                    f"The document is longer than {self._max_chars} characters: send long "
                    "values as variables."
                )
            )
        try:
            if len(query) <= CACHED_DOCUMENT_CHARS:
                document, problem = _cached_parse(query, self._max_tokens)
            else:
                loop = asyncio.get_running_loop()
                document, problem = await loop.run_in_executor(
                    _LONG_PARSES, _parse, query, self._max_tokens
                )
        except GraphQLSyntaxError as error:
            if error.message.endswith("Parsing aborted."):
                raise limit_error(error) from error
            raise coded(error, PARSE_FAILED) from None
        if problem is not None:
            raise limit_error(GraphQLError(problem))
        operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
        if context.operation_name is None and len(operations) > 1:
            # graphql-core would say so too, but strawberry picks the first operation first.
            raise GraphQLError(
                "Must provide operation name if query contains multiple operations.",
                extensions={"code": VALIDATION_FAILED},
            )
        context.graphql_document = document
        yield


def _parse(query: str, max_tokens: int) -> tuple[DocumentNode, str | None]:
    """The document and, when its fragments nest or expand too far, why it is refused."""
    document = parse(query, max_tokens=max_tokens)
    if _LONG_DIGITS.search(query) and (digits := _longest_int_literal(document)):
        # graphql-core would convert it, and Python refuses: an error without a meaning.
        return document, (
            f"An integer literal of {digits} digits is more than any argument takes "
            f"(at most {MAX_INT_LITERAL_DIGITS})."
        )
    shape = fragment_shape(document)
    problem = _fragment_problem(shape)
    if problem is None and shape is not None:
        problem = repeated_field_problem(document)
    return document, problem


_cached_parse = lru_cache(maxsize=PARSER_CACHE_SIZE)(_parse)
# The one thread long documents are parsed on (uncached): the parser is Python, and a document
# of megabytes (a long string literal) takes it a second; on a thread of its own the event loop
# still gets its turns, and long documents wait for each other rather than for everyone.
_LONG_PARSES = ThreadPoolExecutor(max_workers=1, thread_name_prefix="parse")


# Python converts no longer decimal text to an int (``sys.get_int_max_str_digits``).
MAX_INT_LITERAL_DIGITS = sys.get_int_max_str_digits() or 4300
_LONG_DIGITS = re.compile(rf"\d{{{MAX_INT_LITERAL_DIGITS + 1},}}")


def _longest_int_literal(document: DocumentNode) -> int:
    """The digits of the document's longest integer literal over ``MAX_INT_LITERAL_DIGITS``
    (0: none; a long run of digits in a string is no literal)."""
    longest = 0

    class _Ints(Visitor):
        def enter_int_value(self, node: IntValueNode, *_: Any) -> None:
            nonlocal longest
            digits = len(node.value.lstrip("-"))
            if digits > MAX_INT_LITERAL_DIGITS:
                longest = max(longest, digits)

    visit(document, _Ints())
    return longest


def limit_extensions(limits: Limits) -> list[Callable[[], Any]]:
    """Extension factories enforcing ``limits``, ``CachedParse`` (the parser cache) included.

    The validation rules are built once: ``ValidationCache`` keys on the rule classes, and
    strawberry's limiters make a new class per instance, which would defeat the cache.
    """
    rules = [
        *(
            _coded(r, reports_shape=True)
            for r in QueryDepthLimiter(limits.max_depth).validation_rules
        ),
        *(
            _coded(r, reports_shape=False)
            for r in MaxAliasesLimiter(limits.max_aliases).validation_rules
        ),
    ]
    if not limits.introspection:
        rules.extend(DisableIntrospection().validation_rules)
    return [
        lambda: CachedParse(limits.max_tokens, limits.max_document_chars),
        lambda: AddValidationRules(rules),
    ]
