"""Structured logs: JSON lines, a request id in every record of a request, secrets redacted."""

from __future__ import annotations

import io
import json
import logging
from typing import TYPE_CHECKING, Any

import pytest
from starlette.testclient import TestClient

from gateway.http.app import create_app
from gateway.observability.logs import JsonFormatter, RedactSecrets, log_handler
from gateway.settings import Settings, SettingsError
from tests.http.live import LOCAL_URL

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from starlette.applications import Starlette

TOKEN = "internal-token-0d6e2f"


def record(message: str, *args: object, **extra: Any) -> logging.LogRecord:
    made = logging.LogRecord("gateway.test", logging.INFO, __file__, 1, message, args, None)
    made.__dict__.update(extra)
    return made


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, internal_token=TOKEN, log_format="json")


@pytest.fixture
def app(settings: Settings) -> Starlette:
    return create_app(settings)


@pytest.fixture
def lines(settings: Settings) -> Iterator[io.StringIO]:
    """What the configured JSON handler writes while it is installed on the root logger."""
    stream = io.StringIO()
    handler = log_handler(settings, stream)
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)


def parsed(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_record_becomes_one_json_object_with_its_extra_fields() -> None:
    line = JsonFormatter().format(record("wrote %d nodes", 3, request_id="r1", outcome="success"))

    entry = json.loads(line)

    assert entry["message"] == "wrote 3 nodes"
    assert (entry["level"], entry["logger"]) == ("INFO", "gateway.test")
    assert (entry["request_id"], entry["outcome"]) == ("r1", "success")


def test_secrets_and_bearer_credentials_are_redacted() -> None:
    redact = RedactSecrets([TOKEN, None])
    leaky = record("token %s sent as Authorization: Bearer abc.def-1", TOKEN)

    redact.filter(leaky)

    assert leaky.getMessage() == "token *** sent as Authorization: Bearer ***"


def test_every_record_of_a_request_carries_its_request_id(
    app: Starlette, lines: io.StringIO
) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Request-ID": "req-42"}
    with TestClient(base_url=LOCAL_URL, app=app) as client:
        response = client.post(
            "/graphql", json={"query": "query Health { health { status } }"}, headers=headers
        )

    requests = [entry for entry in parsed(lines) if entry["logger"] == "gateway.requests"]
    assert response.headers["x-request-id"] == "req-42"
    assert [(entry["request_id"], entry["operation_name"]) for entry in requests] == [
        ("req-42", "Health")
    ]
    assert TOKEN not in lines.getvalue()


def test_an_unsafe_request_id_is_replaced(app: Starlette) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Request-ID": "bad id\twith spaces"}
    with TestClient(base_url=LOCAL_URL, app=app) as client:
        response = client.post("/graphql", json={"query": "{ health { status } }"}, headers=headers)

    assert len(response.headers["x-request-id"]) == 32


def test_a_masked_error_names_the_request_id_of_the_logs(
    app: Starlette, lines: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken() -> None:
        raise RuntimeError(f"leaking {TOKEN}")

    headers = {"Authorization": f"Bearer {TOKEN}", "X-Request-ID": "req-7"}
    with TestClient(base_url=LOCAL_URL, app=app) as client:
        monkeypatch.setattr(app.state.runtime, "health", broken)
        body = client.post("/graphql", json={"query": "{ health { status } }"}, headers=headers)

    errors = [entry for entry in parsed(lines) if entry["level"] == "ERROR"]
    assert body.json()["errors"][0]["extensions"]["requestId"] == "req-7"
    assert [entry["request_id"] for entry in errors] == ["req-7"]
    assert TOKEN not in lines.getvalue()


@pytest.mark.parametrize(
    ("value", "expected"), [(None, "text"), ("JSON", "json"), ("text", "text")]
)
def test_the_log_format_comes_from_the_environment(value: str | None, expected: str) -> None:
    environ = {"SCIENCE_AGENT_MEMORY_GRAPH_LOG_FORMAT": value} if value else {}

    assert Settings.from_env(environ).log_format == expected


def test_an_unknown_log_format_is_refused() -> None:
    with pytest.raises(SettingsError, match="LOG_FORMAT"):
        Settings.from_env({"SCIENCE_AGENT_MEMORY_GRAPH_LOG_FORMAT": "xml"})
