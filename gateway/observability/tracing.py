"""OpenTelemetry tracing, only when an exporter is configured (``Settings.otel_exporter``).

The SDK is the optional extra ``science-memory[otel]``; without it, or without an exporter in
the environment, the gateway creates no spans and imports nothing from OpenTelemetry. The OTLP
exporter reads its own standard variables (endpoint, headers, timeout). Spans name the GraphQL
operation (``query SessionGraph``); see ``gateway.schema.observability``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer

    from gateway.settings import Settings

logger = logging.getLogger(__name__)

SERVICE_NAME = "science-memory"


@dataclass(frozen=True, slots=True)
class Tracing:
    """A tracer and the provider to flush when the app stops."""

    tracer: Tracer
    provider: TracerProvider

    def shutdown(self) -> None:
        self.provider.shutdown()


def tracing_from(settings: Settings) -> Tracing | None:
    """Tracing for ``settings``, or ``None`` when no exporter is configured or the SDK is absent."""
    if settings.otel_exporter is None:
        return None
    try:
        provider = _provider(settings.otel_exporter)
    except ImportError:
        logger.warning(
            "OpenTelemetry is configured but not installed; install science-memory[otel]"
        )
        return None
    logger.info("OpenTelemetry tracing on (%s exporter)", settings.otel_exporter)
    return Tracing(provider.get_tracer(SERVICE_NAME), provider)


def _provider(exporter: str) -> TracerProvider:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    if exporter == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider
