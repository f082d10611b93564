"""JSON values: what a write accepts, and how a stored value that JSON cannot hold is answered.

JSON (RFC 8259, ECMA-404) has no ``NaN`` and no infinities, though Python's ``json`` reads and
writes them as bare tokens that strict parsers (JavaScript's ``JSON.parse``, typed clients)
refuse. So:

* on the way in, ``check_finite`` refuses a non-finite number anywhere inside a value with
  ``InvalidInputError`` naming the field down to the item (``props.range[1]``);
* on the way out, ``finite_json`` answers a non-finite number that is already stored (an older
  data directory, a Neo4j database written by another tool) as ``null``, what
  ``JSON.stringify`` writes: every answer stays valid JSON, and no stored value can make a
  later read fail.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from resolvers.errors import InvalidInputError

NOT_FINITE = "must be a finite number (JSON has no NaN or Infinity)"
# What a GraphQL ``Int`` holds (32 bits): the whole numbers a typed field answers.
GRAPHQL_INT = range(-(2**31), 2**31)


def non_finite_at(value: Any, path: str = "") -> str | None:
    """The path (below ``path``) of the first non-finite number inside ``value``, or ``None``."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, Mapping):
        for name, item in value.items():
            found = non_finite_at(item, f"{path}.{name}" if path else str(name))
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = non_finite_at(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def check_finite(value: Any, path: str) -> None:
    """Refuse ``value`` if a non-finite number is anywhere inside it; the error names where."""
    if not _finite(value):
        raise InvalidInputError(non_finite_at(value, path), NOT_FINITE)


def finite_json(value: Any) -> Any:
    """``value`` with every non-finite number inside it as ``None``; ``value`` itself (no copy)
    when it holds none, which is the common case and costs one walk."""
    return value if _finite(value) else _nulled(value)


def _finite(value: Any) -> bool:
    # Answers walk every ``properties`` value: the usual kinds are told apart first.
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Mapping):
        return all(map(_finite, value.values()))
    if isinstance(value, list | tuple):
        return all(map(_finite, value))
    return True


def _nulled(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {name: _nulled(item) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [_nulled(item) for item in value]
    return value
