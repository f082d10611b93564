"""The one place where failures become GraphQL.

* Expected failures (``resolvers.errors.DomainError``) become a member of the raising field's
  ``…Result`` union through strawberry's own mechanism: one ``strawberry.ExceptionHandler`` per
  domain exception (``EXCEPTION_HANDLERS``, given to the schema). Strawberry applies a handler
  only to fields whose union has its member; elsewhere the error stays a top-level error.
* ``MaskUnexpectedErrors`` (strawberry's ``MaskErrors``) rewrites the top-level errors: an
  unexpected one is logged with a request id and answered as "Unexpected error." carrying only
  that id; an expected one with no union member to become keeps its message and gains its
  ``code``. Every message is redacted (request secrets, server paths).
* A root field whose query ran out of its time budget below its resolver answers the same
  member (``member_in_place``, used by ``gateway.schema.budget``).
"""

from __future__ import annotations

import ast
import json
import logging
import math
import uuid
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import strawberry
from graphql import GraphQLError
from strawberry.extensions import MaskErrors
from strawberry.schema.exception_handlers import get_exception_types

from gateway.observability.redaction import redact, redact_error, request_secrets, server_paths
from resolvers.errors import (
    DeclareRejectedError,
    DomainError,
    InvalidInputError,
    KeyOwnedByOtherSessionError,
    MemoryGraphDisabledError,
    NodeNotFoundError,
    QueryLimitExceededError,
    StoreUnavailableError,
    StoreWriteError,
)
from resolvers.records import Backend as DomainBackend

if TYPE_CHECKING:
    from collections.abc import Iterator

    from strawberry.types import Info
    from strawberry.types.field import StrawberryField

logger = logging.getLogger(__name__)


@strawberry.enum
class ErrorCode(Enum):
    MEMORY_GRAPH_DISABLED = "MEMORY_GRAPH_DISABLED"
    MEMORY_GRAPH_UNREACHABLE = "MEMORY_GRAPH_UNREACHABLE"
    NODE_NOT_FOUND = "NODE_NOT_FOUND"
    INVALID_INPUT = "INVALID_INPUT"
    NO_SOURCE = "NO_SOURCE"
    AMBIGUOUS_SOURCE = "AMBIGUOUS_SOURCE"
    SOURCE_PAPER_NOT_FOUND = "SOURCE_PAPER_NOT_FOUND"
    SOURCE_FILE_NOT_FOUND = "SOURCE_FILE_NOT_FOUND"
    SOURCE_FILE_NOT_PDF = "SOURCE_FILE_NOT_PDF"
    SOURCE_FILE_IS_PDF = "SOURCE_FILE_IS_PDF"
    NO_CITES_TARGET = "NO_CITES_TARGET"
    EVIDENCE_NOT_FOUND = "EVIDENCE_NOT_FOUND"
    ARTIFACT_VERSION_NOT_FOUND = "ARTIFACT_VERSION_NOT_FOUND"
    ARTIFACT_NOT_FOUND = "ARTIFACT_NOT_FOUND"
    CLAIM_NOT_FOUND = "CLAIM_NOT_FOUND"
    QUERY_LIMIT_EXCEEDED = "QUERY_LIMIT_EXCEEDED"
    KEY_OWNED_BY_OTHER_SESSION = "KEY_OWNED_BY_OTHER_SESSION"


@strawberry.enum(name="Backend")
class GraphBackend(Enum):
    FILE = "file"
    NEO4J = "neo4j"

    @classmethod
    def from_domain(cls, backend: DomainBackend | str) -> GraphBackend:
        return cls(str(backend))

    def to_domain(self) -> DomainBackend:
        return DomainBackend(self.value)


@strawberry.interface(description="An expected failure, returned as data.")
class Error:
    code: ErrorCode
    message: str


@strawberry.type(description="ScienceMemory is switched off; nothing is recorded or returned.")
class MemoryGraphDisabled(Error):
    pass


@strawberry.type(
    description="The selected backend cannot be reached. `queued` says whether the write was "
    "journalled and will be replayed when it returns."
)
class MemoryGraphUnreachable(Error):
    backend: GraphBackend
    queued: bool


@strawberry.type(description="No live node answers to the given id or key.")
class NodeNotFound(Error):
    node_id: str


@strawberry.type(description="An argument failed validation; `field` names it.")
class InvalidInput(Error):
    field: str | None


@strawberry.type(description="A declare broke a rule; `instruction` says what to do instead.")
class DeclareRejected(Error):
    instruction: str | None
    alias: str | None


@strawberry.type(
    description="A configured limit or the time budget was exceeded. A root field answers it "
    "when its query's time budget ran out anywhere in what it selects (a relationship of a "
    "node included): never a partial answer. Other root fields of the query keep theirs."
)
class QueryLimitExceeded(Error):
    pass


@strawberry.type(
    description="The write would change a node that another session created; nothing was "
    "written. `key` is the node's domain key, `ownerSessionId` the session it belongs to."
)
class KeyOwnedByOtherSession(Error):
    key: str
    node_id: strawberry.ID
    owner_session_id: str


def member_for(exc: DomainError) -> Error:
    """The union member of a domain error, from the handler strawberry would use."""
    member: Error = _handler_for(exc).member(exc)
    return member


def member_in_place(exc: DomainError, *, field: StrawberryField, info: Info) -> Error:
    """What the exception handler of ``exc`` answers for ``field``: the member of a domain
    error raised once the field's resolver had returned (while its selection was completed)."""
    member: Error = _handler_for(exc).handle(exc, field=field, info=info)
    return member


def _handler_for(exc: DomainError) -> _DomainErrorHandler[Any]:
    for handler in EXCEPTION_HANDLERS:
        if isinstance(exc, get_exception_types(handler)):
            return handler
    raise TypeError(f"unmapped domain error {type(exc).__name__}")


M = TypeVar("M", bound="Error")


class _DomainErrorHandler(Generic[M]):
    """``handle`` answers ``member(exception)`` with its message redacted: a message may quote
    what the request sent or name a server file."""

    def member(self, exception: Any) -> M:
        raise NotImplementedError

    def handle(self, exception: Any, *, field: StrawberryField, info: Info) -> M:
        member = self.member(exception)
        member.message = redact(
            member.message, request_secrets(_RequestText.of(info)), paths=_paths_of(info.context)
        )
        return member


class MemoryGraphDisabledHandler(
    _DomainErrorHandler[MemoryGraphDisabled],
    strawberry.ExceptionHandler[MemoryGraphDisabledError, MemoryGraphDisabled],
):
    def member(self, exception: MemoryGraphDisabledError) -> MemoryGraphDisabled:
        return MemoryGraphDisabled(code=ErrorCode.MEMORY_GRAPH_DISABLED, message=exception.message)


class MemoryGraphUnreachableHandler(
    _DomainErrorHandler[MemoryGraphUnreachable],
    strawberry.ExceptionHandler[StoreUnavailableError | StoreWriteError, MemoryGraphUnreachable],
):
    def member(self, exception: StoreUnavailableError | StoreWriteError) -> MemoryGraphUnreachable:
        queued = isinstance(exception, StoreUnavailableError) and exception.queued
        return MemoryGraphUnreachable(
            code=ErrorCode.MEMORY_GRAPH_UNREACHABLE,
            message=exception.message,
            backend=GraphBackend.from_domain(exception.backend),
            queued=queued,
        )


class NodeNotFoundHandler(
    _DomainErrorHandler[NodeNotFound], strawberry.ExceptionHandler[NodeNotFoundError, NodeNotFound]
):
    def member(self, exception: NodeNotFoundError) -> NodeNotFound:
        return NodeNotFound(
            code=ErrorCode.NODE_NOT_FOUND, message=exception.message, node_id=exception.node_id
        )


class InvalidInputHandler(
    _DomainErrorHandler[InvalidInput], strawberry.ExceptionHandler[InvalidInputError, InvalidInput]
):
    def member(self, exception: InvalidInputError) -> InvalidInput:
        return InvalidInput(
            code=ErrorCode.INVALID_INPUT, message=exception.message, field=exception.field
        )


class QueryLimitExceededHandler(
    _DomainErrorHandler[QueryLimitExceeded],
    strawberry.ExceptionHandler[QueryLimitExceededError, QueryLimitExceeded],
):
    def member(self, exception: QueryLimitExceededError) -> QueryLimitExceeded:
        return QueryLimitExceeded(code=ErrorCode.QUERY_LIMIT_EXCEEDED, message=exception.message)


class KeyOwnedByOtherSessionHandler(
    _DomainErrorHandler[KeyOwnedByOtherSession],
    strawberry.ExceptionHandler[KeyOwnedByOtherSessionError, KeyOwnedByOtherSession],
):
    def member(self, exception: KeyOwnedByOtherSessionError) -> KeyOwnedByOtherSession:
        return KeyOwnedByOtherSession(
            code=ErrorCode.KEY_OWNED_BY_OTHER_SESSION,
            message=exception.message,
            key=exception.key,
            node_id=strawberry.ID(exception.node_id),
            owner_session_id=exception.owner_session_id,
        )


class DeclareRejectedHandler(
    _DomainErrorHandler[DeclareRejected],
    strawberry.ExceptionHandler[DeclareRejectedError, DeclareRejected],
):
    def member(self, exception: DeclareRejectedError) -> DeclareRejected:
        return DeclareRejected(
            code=ErrorCode[exception.code.value],
            message=exception.message,
            instruction=exception.instruction,
            alias=exception.alias,
        )


EXCEPTION_HANDLERS: tuple[_DomainErrorHandler[Any], ...] = (
    MemoryGraphDisabledHandler(),
    MemoryGraphUnreachableHandler(),
    NodeNotFoundHandler(),
    InvalidInputHandler(),
    QueryLimitExceededHandler(),
    KeyOwnedByOtherSessionHandler(),
    DeclareRejectedHandler(),
)


@dataclass(frozen=True, slots=True)
class _RequestText:
    """The document and variables of the request a field runs in (what holds its secrets)."""

    query: str | None
    variables: dict[str, Any] | None

    @classmethod
    def of(cls, info: Info[Any, Any]) -> _RequestText:
        location = info.operation.loc
        return cls(location.source.body if location else None, info.variable_values)


class MaskUnexpectedErrors(MaskErrors):
    """Strawberry's ``MaskErrors`` over every top-level error: an unexpected one becomes
    "Unexpected error." plus a request id (the original is logged), an expected one keeps its
    message and gains its ``code``, and every message is redacted. A document the schema
    refuses is coded ``GRAPHQL_VALIDATION_FAILED`` (``CachedParse`` codes one that does not
    parse), and variables it cannot take ``BAD_USER_INPUT``: the codes a federation router and
    typed clients know."""

    def on_validate(self) -> Iterator[None]:
        yield
        for error in self.execution_context.pre_execution_errors or ():
            coded(error, VALIDATION_FAILED)

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        secrets = request_secrets(self.execution_context)
        paths = _paths_of(self.execution_context.context)
        return redact_error(self._mask(error), secrets, paths=paths)

    def _mask(self, error: GraphQLError) -> GraphQLError:
        if error.original_error is None or isinstance(error.original_error, GraphQLError):
            if error.path is None:
                # Not a field's, past parsing and validation: the variables' values refused.
                error.message = json_worded(error.message)
                coded(error, BAD_USER_INPUT)
            return error
        if isinstance(error.original_error, DomainError):
            return _expected(error, error.original_error)
        request_id = _request_id(self.execution_context.context)
        logger.error(
            "unexpected error (request %s) at %s",
            request_id,
            error.path,
            exc_info=error.original_error,
        )
        return GraphQLError(
            "Unexpected error.",
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions={"code": "INTERNAL", "requestId": request_id},
        )


def json_worded(message: str) -> str:
    """A refused variable's message with the value it quotes written as JSON, as the client
    sent it: graphql-core writes it as Python (``True``, ``None``, ``{'a': 1}``, ``'5'``). The
    value is the message's tail after a ``": "`` (before a final full stop), when that tail
    reads back as a Python literal of JSON's kinds; anything else is left as it is (a value
    graphql-core shortened with "...", say)."""
    message = message.replace(" to be None.", " to be null.")
    start = message.find(": ")
    while start != -1:
        tail = message[start + 2 :]
        stop = "." if tail.endswith(".") else ""
        try:
            value = ast.literal_eval(tail[: len(tail) - len(stop)])
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            start = message.find(": ", start + 2)
            continue
        if not _is_json(value):
            return message
        return f"{message[: start + 2]}{json.dumps(value, ensure_ascii=False)}{stop}"
    return message


def _is_json(value: object) -> bool:
    if value is None or isinstance(value, bool | int | str):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_json(item) for key, item in value.items())
    return False


PARSE_FAILED = "GRAPHQL_PARSE_FAILED"
VALIDATION_FAILED = "GRAPHQL_VALIDATION_FAILED"
BAD_USER_INPUT = "BAD_USER_INPUT"


def coded(error: GraphQLError, code: str) -> GraphQLError:
    """``error`` given ``code`` (in place), unless it has one."""
    if not (error.extensions or {}).get("code"):
        error.extensions = {**(error.extensions or {}), "code": code}
    return error


def _expected(error: GraphQLError, exc: DomainError) -> GraphQLError:
    """An expected failure below a root field has no union member to become (e.g. a bad
    ``first`` of ``Session.nodes``): it stays a top-level error, but says what went wrong."""
    member = member_for(exc)
    extensions: dict[str, Any] = {"code": member.code.value}
    if isinstance(member, InvalidInput):
        extensions["field"] = member.field
    return GraphQLError(
        exc.message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        extensions=extensions,
    )


def _paths_of(context: Any) -> dict[str, str]:
    """The server directories a client must not see (the data directory among them)."""
    settings = getattr(getattr(context, "runtime", None), "settings", None)
    return server_paths(getattr(settings, "data_dir", None))


def _request_id(context: Any) -> str:
    value = getattr(context, "request_id", None)
    return value if isinstance(value, str) else uuid.uuid4().hex
