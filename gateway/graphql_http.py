"""GraphQL over HTTP (the GraphQL Foundation's spec): which media type answers, and its status.

A client that accepts ``application/graphql-response+json`` gets it, with the status telling a
refused request from an executed one: a *request error* (the document does not parse or
validate, a variable does not coerce, a limit refuses it) answers 400 without a ``data`` entry;
anything that executed answers 200, field errors included. A client that asks only for
``application/json`` (or sends no ``Accept``, or ``*/*``) gets the legacy answer: 200 with
``data: null`` for a request error, as before. A mutation sent with GET answers 405 with
``Allow: POST``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from strawberry.types.execution import PreExecutionError

if TYPE_CHECKING:
    from strawberry.types import ExecutionResult

GRAPHQL_RESPONSE_JSON = "application/graphql-response+json"
JSON = "application/json"
# Specificity of a media range: an exact type, ``application/*``, ``*/*``.
_EXACT, _TYPE, _ANY = 2, 1, 0


def response_media_type(accept: str | None) -> str:
    """The media type to answer with for an ``Accept`` header.

    The highest quality wins, then the more specific range; asked for both by name at the same
    quality, the newer type wins; matched only by a wildcard (browsers, curl), ``application/json``.
    Nothing acceptable (or no header) falls back to ``application/json``, which the spec requires
    every server to speak.
    """
    best: tuple[float, int, int] = (0.0, -1, 0)
    choice = JSON
    for candidate, preference in ((GRAPHQL_RESPONSE_JSON, 1), (JSON, 0)):
        quality, specificity = _match(accept or "", candidate)
        tie_break = preference if specificity == _EXACT else 1 - preference
        rank = (quality, specificity, tie_break)
        if quality > 0 and rank > best:
            best, choice = rank, candidate
    return choice


def is_request_error(result: ExecutionResult) -> bool:
    """True when the document never executed: parse, validation or variable coercion errors.

    Strawberry marks parse and validation failures as ``PreExecutionError``; graphql-core reports
    a variable that does not coerce as an execution result without data whose errors have no
    ``path`` (a field error always has one).
    """
    if isinstance(result, PreExecutionError):
        return True
    errors = result.errors or []
    return result.data is None and bool(errors) and all(error.path is None for error in errors)


def _match(accept: str, candidate: str) -> tuple[float, int]:
    """Quality and specificity of the most specific range of ``accept`` matching ``candidate``."""
    kind = candidate.split("/", 1)[0]
    found: tuple[int, float] = (-1, 0.0)
    for entry in accept.split(","):
        media, *parameters = (part.strip() for part in entry.split(";"))
        media = media.lower()
        specificity = {candidate: _EXACT, f"{kind}/*": _TYPE, "*/*": _ANY}.get(media)
        if specificity is not None and specificity > found[0]:
            found = (specificity, _quality(parameters))
    return found[1], found[0]


def _quality(parameters: list[str]) -> float:
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "q":
            try:
                return min(max(float(value), 0.0), 1.0)
            except ValueError:
                return 0.0
    return 1.0
