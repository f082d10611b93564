"""Per-operation observation: a Prometheus sample, one log line and (when configured) a span.

``OperationObserver`` is the last extension of the schema, so its ``resolve`` hook wraps the
field resolvers, inside which strawberry's exception handlers turn domain errors into union
members (it sees which member a root field answered)
and its ``on_operation`` closes first (it sees errors before they are masked, to tell
unexpected ones apart). Outcomes are described in ``gateway.observability.metrics``.
"""

from __future__ import annotations

import logging
import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension

from gateway.schema.errors import Error, member_for
from resolvers.errors import DomainError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from graphql import GraphQLResolveInfo
    from opentelemetry.trace import Span, Tracer

    from gateway.observability.metrics import Metrics

logger = logging.getLogger("gateway.requests")

SUCCESS, REJECTED, UNEXPECTED = "success", "rejected", "unexpected"


@dataclass(frozen=True, slots=True)
class Observer:
    """Where operations are reported; either part may be absent."""

    metrics: Metrics | None = None
    tracer: Tracer | None = None

    def extension(self) -> OperationObserver:
        return OperationObserver(self)


class OperationObserver(SchemaExtension):
    # Nested fields pass through ``resolve`` untouched: ``LeanExecution`` may skip it for them.
    RESOLVES_ROOT_FIELDS_ONLY: ClassVar[bool] = True

    def __init__(self, observer: Observer) -> None:
        super().__init__()
        self._observer = observer
        self._members: list[str] = []

    def on_operation(self) -> Iterator[None]:
        started = time.perf_counter()
        tracer = self._observer.tracer
        span_context = (
            tracer.start_as_current_span("graphql", kind=_server_kind())
            if tracer is not None
            else nullcontext()
        )
        with span_context as span:
            yield
            operation_type, name = self._operation()
            outcome = self._outcome()
            if span is not None:
                _annotate(span, operation_type, name, outcome)
        seconds = time.perf_counter() - started
        self._report(operation_type, name, outcome, seconds)

    def _report(self, operation_type: str, name: str | None, outcome: str, seconds: float) -> None:
        # A subscription lasts as long as the client wants: it is counted, not timed.
        timed = seconds if operation_type != "subscription" else None
        if self._observer.metrics is not None:
            self._observer.metrics.observe(operation_type, name, outcome, timed)
        logger.info(
            "%s %s -> %s in %.1f ms",
            operation_type,
            name or "anonymous",
            outcome,
            seconds * 1000,
            extra={
                "operation_type": operation_type,
                "operation_name": name,
                "outcome": outcome,
                "duration_ms": round(seconds * 1000, 3),
            },
        )

    def resolve(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Any],
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        if info.path.prev is not None:
            return _next(root, info, *args, **kwargs)
        return self._resolve_root(_next, root, info, *args, **kwargs)

    async def _resolve_root(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Any],
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        # The inner resolver starts here, not before: a task cancelled before its first step
        # then leaves no coroutine behind that was never awaited.
        result = _next(root, info, *args, **kwargs)
        value = await result if hasattr(result, "__await__") else result
        self.answered(value)
        return value

    def answered(self, value: Any) -> None:
        """Note what a root field answered; the executor also calls it for a member it
        answers in place of the resolver's value (``gateway.schema.budget``)."""
        if isinstance(value, Error):
            self._members.append(type(value).__strawberry_definition__.name)  # type: ignore[attr-defined]

    def _operation(self) -> tuple[str, str | None]:
        context = self.execution_context
        try:
            operation_type = context.operation_type.value
        except Exception:  # no document, or no operation by that name: the request was rejected
            operation_type = "unknown"
        return operation_type, context.operation_name

    def _outcome(self) -> str:
        result = self.execution_context.result
        errors: list[GraphQLError] = list(getattr(result, "errors", None) or [])
        causes = [error.original_error for error in errors]
        if any(_unexpected(cause) for cause in causes):
            return UNEXPECTED
        if self._members:
            return self._members[0]
        domain = [cause for cause in causes if isinstance(cause, DomainError)]
        if domain:
            return str(type(member_for(domain[0])).__strawberry_definition__.name)  # type: ignore[attr-defined]
        return REJECTED if errors else SUCCESS


def _unexpected(cause: BaseException | None) -> bool:
    return cause is not None and not isinstance(cause, GraphQLError | DomainError)


def _server_kind() -> Any:
    from opentelemetry.trace import SpanKind

    return SpanKind.SERVER


def _annotate(span: Span, operation_type: str, name: str | None, outcome: str) -> None:
    from opentelemetry.trace import Status, StatusCode

    from gateway.observability.logs import current_request_id

    span.update_name(f"{operation_type} {name or 'anonymous'}")
    span.set_attribute("graphql.operation.type", operation_type)
    span.set_attribute("graphql.operation.name", name or "")
    span.set_attribute("science_memory.outcome", outcome)
    request_id = current_request_id()
    if request_id is not None:
        span.set_attribute("science_memory.request_id", request_id)
    if outcome == UNEXPECTED:
        span.set_status(Status(StatusCode.ERROR))
