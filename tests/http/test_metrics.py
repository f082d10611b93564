"""``GET /metrics``: Prometheus text with operations, outcomes, latency and store gauges."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from gateway.http.app import create_app
from gateway.observability.metrics import MAX_OPERATION_NAMES, Metrics
from gateway.settings import Settings
from tests.http.conftest import INTERNAL_TOKEN, READ_TOKEN, post
from tests.http.live import LOCAL_URL

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from starlette.applications import Starlette

REQUESTS = "science_memory_graphql_requests"
FIRST_MESSAGE = """mutation Record { observeSessionFirstMessage(input: {
  sessionId: "s1", goalId: "goal:session:s1", coreObjective: "Study TP53"}) { __typename } }"""


@pytest.fixture
def app(tmp_path: Path) -> Starlette:
    settings = Settings(data_dir=tmp_path, internal_token=INTERNAL_TOKEN, read_token=READ_TOKEN)
    return create_app(settings)


@pytest.fixture
def client(app: Starlette) -> Iterator[TestClient]:
    with TestClient(base_url=LOCAL_URL, app=app) as client:
        yield client


def scrape(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics``: ``(name, sorted labels) -> value``."""
    response = client.get("/metrics", headers={"Authorization": f"Bearer {READ_TOKEN}"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def requests_of(
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float],
) -> set[tuple[str, ...]]:
    """``(type, name, outcome)`` of every counted operation."""
    return {
        (labels["operation_type"], labels["operation_name"], labels["outcome"])
        for (name, pairs), _ in samples.items()
        if name == f"{REQUESTS}_total"
        for labels in [dict(pairs)]
    }


@pytest.mark.parametrize("token", [None, "wrong"], ids=["missing", "wrong"])
def test_metrics_need_a_token_when_one_is_configured(client: TestClient, token: str | None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    response = client.get("/metrics", headers=headers)

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_metrics_are_open_without_a_configured_token(tmp_path: Path) -> None:
    with TestClient(base_url=LOCAL_URL, app=create_app(Settings(data_dir=tmp_path))) as client:
        response = client.get("/metrics")

    assert response.status_code == 200
    assert "science_memory_store_nodes" in response.text


def test_operations_are_counted_by_type_name_and_outcome(client: TestClient) -> None:
    post(client, "query Health { health { status } }", READ_TOKEN)
    post(client, 'query Missing { node(nodeId: "nope") { __typename } }', READ_TOKEN)
    post(client, FIRST_MESSAGE, INTERNAL_TOKEN)
    post(client, FIRST_MESSAGE, READ_TOKEN)
    post(client, "query Invalid { noSuchField }", READ_TOKEN)

    samples = scrape(client)

    assert requests_of(samples) == {
        ("query", "Health", "success"),
        ("query", "Missing", "NodeNotFound"),
        ("mutation", "Record", "success"),
        ("mutation", "Record", "rejected"),
        ("query", "Invalid", "rejected"),
    }
    duration = "science_memory_graphql_request_duration_seconds_count"
    assert samples[(duration, (("operation_name", "Health"), ("operation_type", "query")))] == 1


def test_an_unexpected_error_is_counted_as_unexpected(
    client: TestClient, app: Starlette, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(app.state.runtime, "health", broken)
    post(client, "query Health { health { status } }", READ_TOKEN)

    samples = scrape(client)

    assert requests_of(samples) == {("query", "Health", "unexpected")}


def test_store_gauges_follow_the_store(client: TestClient) -> None:
    before = scrape(client)
    post(client, FIRST_MESSAGE, INTERNAL_TOKEN)

    after = scrape(client)

    nodes = ("science_memory_store_nodes", (("backend", "file"),))
    assert (before[nodes], after[nodes]) == (0, 1)
    log_bytes = ("science_memory_file_store_log_bytes", ())
    assert after[log_bytes] > before[log_bytes]
    assert after[("science_memory_store_up", (("backend", "file"),))] == 1
    assert after[("science_memory_outbox_pending_writes", ())] == 0


def test_a_disabled_store_is_reported_down(client: TestClient) -> None:
    post(
        client,
        "mutation { configureMemoryGraph(input: {enabled: false}) { __typename } }",
        INTERNAL_TOKEN,
    )

    samples = scrape(client)

    assert samples[("science_memory_store_up", (("backend", "file"),))] == 0
    assert ("science_memory_store_nodes", (("backend", "file"),)) not in samples


def test_client_chosen_operation_names_are_bounded() -> None:
    metrics = Metrics()

    labels = [metrics.operation_name(f"Op{index}") for index in range(MAX_OPERATION_NAMES + 1)]

    assert labels[:2] == ["Op0", "Op1"]
    assert labels[-1] == "other"
    assert metrics.operation_name("Op0") == "Op0"  # a name already counted keeps its label
    assert metrics.operation_name("x" * 65) == "other"
    assert metrics.operation_name(None) == "anonymous"
