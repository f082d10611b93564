"""OpenTelemetry: one span per GraphQL operation, named after it, only when configured."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from gateway.observability.tracing import tracing_from
from gateway.schema import build_schema
from gateway.schema.context import GraphContext
from gateway.schema.observability import Observer
from gateway.settings import Settings

if TYPE_CHECKING:
    from collections.abc import Iterator

    import strawberry

    from gateway.runtime.state import Runtime


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def traced(exporter: InMemorySpanExporter) -> Iterator[strawberry.Schema]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield build_schema(observer=Observer(tracer=provider.get_tracer("test")))
    provider.shutdown()


async def test_each_operation_gets_a_span_named_after_it(
    traced: strawberry.Schema, runtime: Runtime, exporter: InMemorySpanExporter
) -> None:
    context = GraphContext(runtime=runtime)

    await traced.execute("query Health { health { status } }", context_value=context)
    await traced.execute(
        'query Missing { node(nodeId: "x") { __typename } }', context_value=context
    )

    spans = exporter.get_finished_spans()
    assert [span.name for span in spans] == ["query Health", "query Missing"]
    assert [dict(span.attributes or {}) for span in spans] == [
        {
            "graphql.operation.type": "query",
            "graphql.operation.name": "Health",
            "science_memory.outcome": "success",
        },
        {
            "graphql.operation.type": "query",
            "graphql.operation.name": "Missing",
            "science_memory.outcome": "NodeNotFound",
        },
    ]


async def test_an_unexpected_error_marks_the_span_as_failed(
    traced: strawberry.Schema,
    runtime: Runtime,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def broken() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(runtime, "health", broken)

    await traced.execute("query Health { health { status } }", context_value=GraphContext(runtime))

    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR


@pytest.mark.parametrize(
    ("environ", "exporter_name"),
    [
        ({}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, "otlp"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, "otlp"),
        ({"OTEL_TRACES_EXPORTER": "console"}, "console"),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, None),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}, None),
    ],
    ids=["unset", "otlp", "otlp-traces", "console", "none", "disabled"],
)
def test_tracing_is_on_only_when_an_exporter_is_configured(
    environ: dict[str, str], exporter_name: str | None
) -> None:
    settings = Settings.from_env(environ)

    tracing = tracing_from(settings)

    assert settings.otel_exporter == exporter_name
    assert (tracing is not None) is (exporter_name is not None)
    if tracing is not None:
        tracing.shutdown()
