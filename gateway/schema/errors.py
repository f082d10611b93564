"""The one place where failures become GraphQL.

* Expected failures (``resolvers.errors.DomainError``) raised by a root field become a member
  of that field's ``…Result`` union (``DomainErrorsExtension``).
* Anything else is unexpected: it is logged with a request id and answered as a top-level error
  "Unexpected error." carrying only that id (``MaskUnexpectedErrors``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar

import strawberry
from graphql import (
    GraphQLError,
    GraphQLResolveInfo,
    GraphQLUnionType,
    OperationType,
    get_nullable_type,
)
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType as StrawberryOperationType

from gateway.redaction import redact, redact_error, request_secrets, server_paths
from gateway.schema.pacing import DEADLINE, OVER_BUDGET
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
    from collections.abc import Awaitable, Callable, Iterator

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


@strawberry.enum
class Backend(Enum):
    FILE = "file"
    NEO4J = "neo4j"

    @classmethod
    def from_domain(cls, backend: DomainBackend | str) -> Backend:
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
    backend: Backend
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


@strawberry.type(description="A configured limit or the time budget was exceeded.")
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


def to_graphql(exc: DomainError) -> Error:
    """The union member for a domain error."""
    for kind, convert in _CONVERTERS:
        if isinstance(exc, kind):
            return convert(exc)
    raise TypeError(f"unmapped domain error {type(exc).__name__}")


def _unreachable(exc: Any) -> Error:
    if isinstance(exc, StoreWriteError):
        return MemoryGraphUnreachable(
            code=ErrorCode.MEMORY_GRAPH_UNREACHABLE,
            message=exc.message,
            backend=Backend.FILE,
            queued=False,
        )
    return MemoryGraphUnreachable(
        code=ErrorCode.MEMORY_GRAPH_UNREACHABLE,
        message=exc.message,
        backend=Backend.from_domain(exc.backend),
        queued=exc.queued,
    )


_CONVERTERS: list[tuple[type[DomainError], Callable[[Any], Error]]] = [
    (
        MemoryGraphDisabledError,
        lambda e: MemoryGraphDisabled(code=ErrorCode.MEMORY_GRAPH_DISABLED, message=e.message),
    ),
    (StoreUnavailableError, _unreachable),
    (StoreWriteError, _unreachable),
    (
        NodeNotFoundError,
        lambda e: NodeNotFound(code=ErrorCode.NODE_NOT_FOUND, message=e.message, node_id=e.node_id),
    ),
    (
        InvalidInputError,
        lambda e: InvalidInput(code=ErrorCode.INVALID_INPUT, message=e.message, field=e.field),
    ),
    (
        QueryLimitExceededError,
        lambda e: QueryLimitExceeded(code=ErrorCode.QUERY_LIMIT_EXCEEDED, message=e.message),
    ),
    (
        KeyOwnedByOtherSessionError,
        lambda e: KeyOwnedByOtherSession(
            code=ErrorCode.KEY_OWNED_BY_OTHER_SESSION,
            message=e.message,
            key=e.key,
            node_id=strawberry.ID(e.node_id),
            owner_session_id=e.owner_session_id,
        ),
    ),
    (
        DeclareRejectedError,
        lambda e: DeclareRejected(
            code=ErrorCode[e.code.value],
            message=e.message,
            instruction=e.instruction,
            alias=e.alias,
        ),
    ),
]


class DomainErrorsExtension(SchemaExtension):
    """Turns a ``DomainError`` raised under a root field into that field's union member.

    The root fields of a query share a time budget of ``time_budget`` seconds from the start of
    execution; one still running when it is spent is cancelled and answers
    ``QueryLimitExceeded``. Mutations are never cut short: a write is not abandoned halfway. A
    domain error whose member the field's union lacks stays a top-level error with its code.
    """

    # Nested fields pass through ``resolve`` untouched: ``LeanExecution`` may skip it for them.
    RESOLVES_ROOT_FIELDS_ONLY: ClassVar[bool] = True

    def __init__(self, *, time_budget: float | None = None) -> None:
        super().__init__()
        self._time_budget = time_budget
        self._deadline: float | None = None

    def on_execute(self) -> Iterator[None]:
        is_query = self.execution_context.operation_type is StrawberryOperationType.QUERY
        if self._time_budget is None or not is_query:
            yield
            return
        self._deadline = asyncio.get_running_loop().time() + self._time_budget
        # Paced lists check it while they are serialised, after the root fields returned.
        token = DEADLINE.set(self._deadline)
        try:
            yield
        finally:
            DEADLINE.reset(token)

    def resolve(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Any],
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        result = _next(root, info, *args, **kwargs)
        # Nested fields pass straight through: no coroutine wrapper on the hot path.
        if info.path.prev is not None or not _is_awaitable(result):
            return result
        return self._guard(result, info)

    async def _guard(self, result: Awaitable[Any], info: GraphQLResolveInfo[Any]) -> Any:
        try:
            if self._deadline is None or info.operation.operation is not OperationType.QUERY:
                return await result
            return await _within(result, self._deadline)
        except DomainError as exc:
            member = to_graphql(exc)
            if not _is_member(member, info):
                raise
            # A message may quote what the request sent or name a server file.
            member.message = redact(
                member.message,
                request_secrets(self.execution_context),
                paths=_paths_of(info.context),
            )
            return member


async def _within(result: Awaitable[Any], deadline: float) -> Any:
    budget = asyncio.timeout_at(deadline)
    try:
        async with budget:
            return await result
    except TimeoutError as exc:
        if not budget.expired():
            raise
        raise QueryLimitExceededError(OVER_BUDGET) from exc


def _is_member(member: Error, info: GraphQLResolveInfo[Any]) -> bool:
    union = get_nullable_type(info.return_type)
    name = type(member).__strawberry_definition__.name  # type: ignore[attr-defined]
    return isinstance(union, GraphQLUnionType) and any(t.name == name for t in union.types)


def _is_awaitable(value: Any) -> bool:
    return hasattr(value, "__await__")


class MaskUnexpectedErrors(SchemaExtension):
    """Replace unexpected errors by "Unexpected error." plus a request id; log the original."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is None or not result.errors:
            return
        result.errors = self._redacted(result.errors)

    def on_stream_result(self, result: Any) -> Iterator[None]:
        """A WebSocket operation's results are sent before ``on_operation`` ends: mask each one
        the same way before it is streamed (masking a masked error changes nothing)."""
        if getattr(result, "errors", None):
            result.errors = self._redacted(result.errors)
        yield

    def _redacted(self, errors: list[GraphQLError]) -> list[GraphQLError]:
        secrets = request_secrets(self.execution_context)
        paths = _paths_of(self.execution_context.context)
        return [redact_error(self._mask(error), secrets, paths=paths) for error in errors]

    def _mask(self, error: GraphQLError) -> GraphQLError:
        if error.original_error is None or isinstance(error.original_error, GraphQLError):
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


def _expected(error: GraphQLError, exc: DomainError) -> GraphQLError:
    """An expected failure below a root field has no union member to become (e.g. a bad
    ``first`` of ``Session.nodes``): it stays a top-level error, but says what went wrong."""
    member = to_graphql(exc)
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
