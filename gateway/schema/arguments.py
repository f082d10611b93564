"""The text arguments of every query field, checked before its resolver runs (SPEC §8).

Each resolver checks what its arguments mean; what no text argument may hold is checked here
once, for every field of ``Query``, so a field added later cannot forget it: a lone surrogate
(a JSON escape such as ``"\\udc00"``), which no store can encode, and an id longer than
``MAX_LOOKUP_ID`` (no stored id is: a Paper's, the longest, is its session's and its link's),
which would only be echoed back in a "not found" of its whole length. Either is refused with
``InvalidInput`` naming the argument, through the field's own union like any other refusal
(a strawberry field extension runs inside the field's exception handling).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from strawberry.extensions import FieldExtension

from resolvers.errors import InvalidInputError
from resolvers.validate import camel, check_unicode

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from strawberry.types import Info
    from strawberry.types.field import StrawberryField

MAX_LOOKUP_ID: Final = 8192
"""The longest id a lookup argument (``nodeId``, ``sessionId``, ``artifactId``, …) takes."""


class CheckedArguments(FieldExtension):
    """Refuses a text argument that no read can answer (module docstring)."""

    def apply(self, field: StrawberryField) -> None:
        self._names = {
            argument.python_name: argument.graphql_name or camel(argument.python_name)
            for argument in field.arguments
        }

    def resolve(self, next_: Callable[..., Any], source: Any, info: Info, **kwargs: Any) -> Any:
        self._check(kwargs)
        return next_(source, info, **kwargs)

    async def resolve_async(
        self, next_: Callable[..., Awaitable[Any]], source: Any, info: Info, **kwargs: Any
    ) -> Any:
        self._check(kwargs)
        return await next_(source, info, **kwargs)

    def _check(self, kwargs: dict[str, Any]) -> None:
        for name, value in kwargs.items():
            path = self._names.get(name, name)
            for index, text in _texts(value):
                where = path if index is None else f"{path}[{index}]"
                check_unicode(text, where)
                if _is_id(path) and len(text) > MAX_LOOKUP_ID:
                    raise InvalidInputError(where, f"at most {MAX_LOOKUP_ID} characters")


def _texts(value: Any) -> list[tuple[int | None, str]]:
    if isinstance(value, str):
        return [(None, value)]
    if isinstance(value, list | tuple):
        return [(index, item) for index, item in enumerate(value) if isinstance(item, str)]
    return []


def _is_id(name: str) -> bool:
    return name == "ids" or name.endswith(("Id", "Ids"))


def check_every_argument(fields: list[StrawberryField]) -> None:
    """Give each of ``fields`` (a root type's) the ``CheckedArguments`` extension, once."""
    for field in fields:
        if not any(isinstance(extension, CheckedArguments) for extension in field.extensions):
            field.extensions.append(CheckedArguments())
