"""``GatewaySchema``: strawberry's federation schema, hardened at two points.

* ``_entities`` (the federation entry point a router calls with ``{__typename, id}``
  representations) answers a malformed representation with ``InvalidInput`` at that position,
  instead of letting strawberry fail on it (an unknown type name, a missing or extra key, an
  id no store can hold), the others resolved as ever.
* Errors are logged by message only, secrets masked (``gateway.observability.redaction``), never
  with the line of the document they point at; unexpected ones are logged with their traceback by
  ``MaskUnexpectedErrors``, so the client's own mistakes are logged only at DEBUG.
* ``execute`` never runs a subscription: those stream over a WebSocket (``subscribe``) or a
  multipart response (``stream``); a subscription POSTed for one JSON answer is refused as
  a request error (HTTP 400) instead of failing inside the field.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import strawberry

# Evaluated at runtime: strawberry reads the resolver's annotations to type ``_entities``.
from strawberry.federation.schema import FederationAny  # noqa: TC002
from strawberry.schema.schema import DEFAULT_ALLOWED_OPERATION_TYPES
from strawberry.types import ExecutionResult, Info  # noqa: TC002
from strawberry.types.graphql import OperationType

from gateway.observability.redaction import redact, request_secrets
from gateway.schema.arguments import MAX_LOOKUP_ID
from resolvers.errors import InvalidInputError
from resolvers.validate import check_unicode

if TYPE_CHECKING:
    from collections.abc import Iterable

    from graphql import GraphQLError
    from strawberry.types import ExecutionContext

logger = logging.getLogger(__name__)

ENTITY_UNION = "_Entity"


class GatewaySchema(strawberry.federation.Schema):
    async def execute(
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        allowed = set(allowed_operation_types or DEFAULT_ALLOWED_OPERATION_TYPES)
        allowed.discard(OperationType.SUBSCRIPTION)
        return await super().execute(
            query,
            variable_values,
            context_value,
            root_value,
            operation_name,
            allowed,
            operation_extensions,
        )

    def entities_resolver(
        self, info: Info, representations: list[FederationAny]
    ) -> list[FederationAny]:
        entities = {member.name for member in self._schema.type_map[ENTITY_UNION].types}  # type: ignore[attr-defined]
        problems = {
            index: problem
            for index, representation in enumerate(representations)
            if (problem := _reference_problem(representation, index, entities)) is not None
        }
        valid = [r for index, r in enumerate(representations) if index not in problems]
        resolved = iter(super().entities_resolver(info, valid))
        return [
            problems[index] if index in problems else next(resolved)
            for index in range(len(representations))
        ]

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        secrets = request_secrets(execution_context)
        for error in errors:
            logger.debug(
                "graphql error at %s: %s",
                error.path or error.locations,
                redact(error.message, secrets),
            )


def _reference_problem(representation: Any, index: int, entities: set[str]) -> Any:
    """``InvalidInputError`` for a representation other than ``{__typename: <entity>, id}``."""
    field = f"representations[{index}]"
    if not isinstance(representation, dict) or representation.get("__typename") not in entities:
        return InvalidInputError(f"{field}.__typename", f"must be one of {sorted(entities)}")
    if set(representation) != {"__typename", "id"} or not isinstance(
        representation["id"], str | int
    ):
        return InvalidInputError(f"{field}.id", "give exactly the key field `id` (a node id)")
    node_id = representation["id"]
    if isinstance(node_id, str):
        # What ``CheckedArguments`` refuses in any other field's id (a lone surrogate, which no
        # store can encode, and a length no stored id has), at this position only.
        try:
            check_unicode(node_id, f"{field}.id")
        except InvalidInputError as exc:
            return exc
        if len(node_id) > MAX_LOOKUP_ID:
            return InvalidInputError(f"{field}.id", f"at most {MAX_LOOKUP_ID} characters")
    return None
