"""What ``import-graph`` accepts of a line: nothing a later read would fail on (a time without
an offset, an integer outside GraphQL's ``Int``, text that is not Unicode, a value nested too
deep, an id that is not its label's and key's), and a node the graph model accepts
(``resolvers.integrity``). A line that does not pass is refused, naming what is wrong.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from resolvers.errors import InvalidInputError
from resolvers.integrity import check_key_forms, check_node
from resolvers.records import Label, node_id
from resolvers.validate import check_unicode
from resolvers.values import GRAPHQL_INT

# Deeper than any property the API writes (its lists hold texts): beyond, a value is refused.
_MAX_NESTING: Final = 32


class RecordRefusedError(ValueError):
    """A well-formed record that the checks refuse, saying why."""


def check_record(op: dict[str, Any], *, old_key_forms: bool = False) -> None:
    """Refuse (``RecordRefusedError``, or ``InvalidInputError`` naming the field) a record a
    read would fail on, or a node whose properties say something else than its key; a record
    that is not one (a field missing, of another type) raises what reading it raised.
    ``old_key_forms``: a key of a form the API refuses in new ids is accepted (an older
    version wrote it: a graph opened from its data directory still holds it)."""
    for name, value in op.items():
        _check_value(name, value, 1)
    kind = op.get("op")
    if kind == "n":
        label = Label(op["label"])
        if op["id"] != node_id(label, op["key"], op["session"]):
            expected = node_id(label, op["key"], op["session"])
            raise RecordRefusedError(
                f"'id' {op['id']!r} is not {expected!r}, its label's and key's"
            )
        created = datetime.fromisoformat(op["created"])
        if created.utcoffset() is None:
            raise RecordRefusedError(f"'created' {op['created']!r} has no UTC offset")
        _check_int("seq", op["seq"], lowest=0)
        try:
            check_node(label, op["key"], op["session"], op["props"], op["seq"])
        except ValueError as exc:
            raise RecordRefusedError(f"a {label} {op['key']!r}: {exc}") from exc
        if not old_key_forms:
            try:
                check_key_forms(label, op["key"], op["props"])
            except InvalidInputError as exc:
                raise RecordRefusedError(
                    f"{exc.message} (a graph an older version wrote may hold such keys: "
                    "import it with --old-key-forms to keep them as they are)"
                ) from exc
    elif kind == "q":
        _check_int("value", op["value"], lowest=0)


def _check_int(name: str, value: Any, *, lowest: int = GRAPHQL_INT.start) -> None:
    """What the API writes and reads back as a GraphQL ``Int``: every integer of a record stays
    within it, so a value no mutation could have written cannot fail a later read."""
    if type(value) is not int:
        raise RecordRefusedError(f"{name!r} must be an integer, not {type(value).__name__}")
    if not lowest <= value < GRAPHQL_INT.stop:
        raise RecordRefusedError(f"{name!r} is {value}, outside {lowest}..{GRAPHQL_INT.stop - 1}")


def _check_value(name: str, value: Any, depth: int) -> None:
    if depth > _MAX_NESTING:
        raise RecordRefusedError(f"{name!r} is nested more than {_MAX_NESTING} levels deep")
    if type(value) is int:
        _check_int(name, value)
    elif isinstance(value, str):
        check_unicode(value, name)
    elif isinstance(value, list):
        for item in value:
            _check_value(name, item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_value(f"{name}.{key}", item, depth + 1)
