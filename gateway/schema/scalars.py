"""The ``JSON`` scalar: strawberry's, with the one rule JSON itself sets for numbers.

JSON has no ``NaN`` or infinity (``resolvers.values``). A ``JSON`` value (node and edge
``properties``) that holds one — an older data directory, a Neo4j database written by another
tool — is answered with ``null`` in its place, as ``JSON.stringify`` does, so every answer parses
with a strict JSON parser; a ``JSON`` argument holding one is refused.
"""

from __future__ import annotations

from typing import Any

from strawberry.scalars import JSON
from strawberry.types.scalar import scalar

from resolvers.values import NOT_FINITE, finite_json, non_finite_at

ECMA_404 = (
    "https://ecma-international.org/wp-content/uploads/ECMA-404_2nd_edition_december_2017.pdf"
)


def _parse(value: Any) -> Any:
    found = non_finite_at(value)
    if found is not None:
        raise ValueError(f"{found or 'the value'} {NOT_FINITE}")
    return value


JSON_SCALAR = scalar(
    name="JSON",
    description=(
        f"A JSON value ([ECMA-404]({ECMA_404})). Numbers are always finite: a stored NaN or "
        "infinity (older data, another tool's writes) is answered as `null`, as "
        "`JSON.stringify` writes it."
    ),
    specified_by_url=ECMA_404,
    serialize=finite_json,
    parse_value=_parse,
)
SCALAR_OVERRIDES: dict[object, Any] = {JSON: JSON_SCALAR}
