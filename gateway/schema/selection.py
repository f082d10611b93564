"""Which attributes a request reads of the items of a list field: convert only those.

A ``Subgraph`` answers up to 5,000 nodes, and converting every record into its GraphQL type —
each typed property, its times parsed, a copy of ``properties``, the excerpt — cost more than
completing the three fields a caller usually asks for (``id label excerpt``). ``read_fields``
reads the request's selection with strawberry's ``info.selected_fields`` (fragments and
spreads resolved, aliases and directives ignored, so it may name more than is read, never
less) and gives the Python attributes of the named types that selection can read; the
``from_record`` of nodes and edges then fills only those (``None``: fill all).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from strawberry.types.nodes import SelectedField

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    import strawberry
    from strawberry.types import Info
    from strawberry.types.nodes import Selection

Fields = frozenset[str] | None


def read_fields(info: Info, list_field: str, type_names: Iterable[str]) -> Fields:
    """The attributes of the ``type_names`` objects that the selection of ``list_field`` (a
    field of this field's result, e.g. a subgraph's ``nodes``) can read."""
    names = frozenset(
        item.name
        for field in _fields(info.selected_fields)
        for listed in _fields(field.selections)
        if listed.name == list_field
        for item in _fields(listed.selections)
    )
    return _python_names(info.schema, tuple(type_names), names)


def _fields(selections: Iterable[Selection]) -> Iterator[SelectedField]:
    for selection in selections:
        if isinstance(selection, SelectedField):
            yield selection
        else:  # an inline fragment or a fragment spread: its fields are the object's
            yield from _fields(selection.selections)


@functools.lru_cache(maxsize=256)
def _python_names(
    schema: strawberry.Schema, type_names: tuple[str, ...], names: frozenset[str]
) -> frozenset[str]:
    return frozenset(
        found.python_name
        for type_name in type_names
        for name in names
        if (found := schema.get_field_for_type(name, type_name)) is not None
    )
