"""Secrets sent as GraphQL input never reach an error message or a log line (SPEC §8).

A Neo4j password arrives as ``neo4jPassword`` (a variable or a literal in the document). Error
messages may quote input values (graphql-core prints the offending input object), and strawberry
logs every error with the line of the document it points at, so:

* ``GatewaySchema.process_errors`` (``federation.py``) logs each error's redacted message,
  without the source line;
* ``redact`` replaces every secret value in an error's message by ``***`` before it is answered
  (``MaskUnexpectedErrors``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from graphql import GraphQLError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from strawberry.types import ExecutionContext

SECRET_FIELDS = frozenset({"neo4jPassword"})
MASK = "***"
# A secret field's string literal in a document, parsed or not (escapes kept as written).
_LITERAL = re.compile(r"\b(?:" + "|".join(SECRET_FIELDS) + r')\s*:\s*"((?:[^"\\\n]|\\.)*)"')


def secret_values(context: ExecutionContext | None) -> set[str]:
    """Every secret the request carries, in its document or its variables."""
    if context is None:
        return set()
    found = {match.group(1) for match in _LITERAL.finditer(context.query or "")}
    found.update(_in_variables(context.variables))
    return {secret for secret in found if secret}


def _in_variables(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in SECRET_FIELDS and isinstance(item, str):
                yield item
            else:
                yield from _in_variables(item)
    elif isinstance(value, list):
        for item in value:
            yield from _in_variables(item)


def redacted(text: str, secrets: set[str]) -> str:
    # Longest first, so that a secret containing another is masked whole.
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def redact(error: GraphQLError, secrets: set[str]) -> GraphQLError:
    """``error`` with every secret in its message masked (the same error when there is none)."""
    message = redacted(error.message, secrets)
    if message == error.message:
        return error
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=error.original_error,
        extensions=error.extensions,
    )
