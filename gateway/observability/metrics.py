"""Prometheus metrics, served as text by ``GET /metrics``.

Per app (its own registry, so several apps in one process never collide):

==================================================  =========  ==================================
metric                                              type       labels
==================================================  =========  ==================================
science_memory_graphql_requests_total               counter    operation_type operation_name
                                                               outcome
science_memory_graphql_request_duration_seconds     histogram  operation_type operation_name
science_memory_store_up                             gauge      backend
science_memory_store_nodes                          gauge      backend
science_memory_file_store_log_bytes                 gauge      (file backend only)
science_memory_outbox_pending_writes                gauge
science_memory_outbox_refused_writes                gauge
science_memory_graph_subscribers                    gauge
science_memory_graph_events_delivered_total         counter
science_memory_graph_subscribers_dropped_total      counter
==================================================  =========  ==================================

``outcome`` is ``success``, the typename of the error union member a root field answered
(``NodeNotFound``, ``MemoryGraphUnreachable``, …; the first one when several fields failed),
``rejected`` (the request never ran: parse, validation, limits, a read token mutating) or
``unexpected`` (a masked internal error). ``operation_name`` is the client's operation name
when it is a plain GraphQL name, ``anonymous`` without one; past ``MAX_OPERATION_NAMES``
distinct names, further ones count as ``other`` (clients choose names: keep cardinality bounded).
Store gauges are read when scraped; a subscription counts once, without a duration.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.responses import Response

from resolvers.errors import DomainError
from resolvers.store import SizedStore

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    from prometheus_client.metrics_core import Metric
    from starlette.requests import Request

    from gateway.live.bus import EventBus
    from gateway.runtime.state import Runtime

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MAX_OPERATION_NAMES = 200
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]{0,63}")


class _BusCollector(Collector):
    """Live-update counters, read from the runtime's event bus when scraped."""

    def __init__(self) -> None:
        self.bus: EventBus | None = None

    def collect(self) -> Iterator[Metric]:
        bus = self.bus
        yield GaugeMetricFamily(
            "science_memory_graph_subscribers",
            "Open graphEvents subscriptions.",
            value=bus.subscriber_count if bus else 0,
        )
        yield CounterMetricFamily(
            "science_memory_graph_events_delivered",
            "Graph events queued to subscribers.",
            value=bus.published if bus else 0,
        )
        yield CounterMetricFamily(
            "science_memory_graph_subscribers_dropped",
            "Subscriptions dropped for falling too far behind.",
            value=bus.dropped if bus else 0,
        )


class Metrics:
    """The app's registry and instruments."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        labels = ["operation_type", "operation_name"]
        self.requests = Counter(
            "science_memory_graphql_requests",
            "GraphQL operations by type, name and outcome.",
            [*labels, "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "science_memory_graphql_request_duration_seconds",
            "GraphQL operation latency, from parsing to the response.",
            labels,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.store_up = Gauge(
            "science_memory_store_up",
            "1 when the active graph store answers, else 0.",
            ["backend"],
            registry=self.registry,
        )
        self.store_nodes = Gauge(
            "science_memory_store_nodes",
            "Nodes in the active graph store.",
            ["backend"],
            registry=self.registry,
        )
        self.log_bytes = Gauge(
            "science_memory_file_store_log_bytes",
            "Durable bytes in the file store's log files (what a restart replays).",
            registry=self.registry,
        )
        self.pending = Gauge(
            "science_memory_outbox_pending_writes",
            "Observe events journalled for an unreachable Neo4j, waiting for replay.",
            registry=self.registry,
        )
        self.refused = Gauge(
            "science_memory_outbox_refused_writes",
            "Journalled observe events refused on replay, kept in outbox/refused.jsonl.",
            registry=self.registry,
        )
        self._bus = _BusCollector()
        self.registry.register(self._bus)
        self._names: set[str] = set()

    def operation_name(self, name: str | None) -> str:
        """A bounded label value for a client-chosen operation name."""
        if not name:
            return "anonymous"
        if not _NAME.fullmatch(name):
            return "other"
        if name not in self._names and len(self._names) >= MAX_OPERATION_NAMES:
            return "other"
        self._names.add(name)
        return name

    def observe(
        self, operation_type: str, name: str | None, outcome: str, seconds: float | None
    ) -> None:
        label = self.operation_name(name)
        self.requests.labels(operation_type, label, outcome).inc()
        if seconds is not None:
            self.latency.labels(operation_type, label).observe(seconds)

    async def refresh(self, runtime: Runtime) -> None:
        """Read the store and outbox gauges from ``runtime`` (before a scrape)."""
        self._bus.bus = runtime.events
        self.pending.set(runtime.outbox.pending if runtime.outbox is not None else 0)
        self.refused.set(runtime.outbox.refused if runtime.outbox is not None else 0)
        backend = runtime.state.backend.value
        self.store_nodes.clear()
        try:
            store = runtime.graph_store
            nodes = await store.count_nodes()
        except DomainError:
            self.store_up.labels(backend).set(0)
            return
        self.store_up.labels(backend).set(1)
        self.store_nodes.labels(backend).set(nodes)
        if isinstance(store, SizedStore):
            self.log_bytes.set(store.stored_bytes())

    def render(self) -> bytes:
        return generate_latest(self.registry)


def metrics_endpoint(metrics: Metrics) -> Callable[[Request], Awaitable[Response]]:
    """``GET /metrics`` (the app guards it with the same bearer rule as ``/graphql``)."""

    async def endpoint(request: Request) -> Response:
        await metrics.refresh(request.app.state.runtime)
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    return endpoint
