"""Secrets never reach the logs nor other clients (SPEC §8), through a real uvicorn at DEBUG.

Every log record of the run (uvicorn's access and error logs, strawberry, the gateway, the Neo4j
driver) and every response body is scanned for each secret that was sent.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

import httpx2

from gateway.app import create_app
from gateway.settings import Settings
from tests.http.live import serving

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

INTERNAL = "internal-secret-5c1e0a"
READ = "read-secret-9b27f4"
WRONG = "wrong-secret-3d8e61"
PASSWORD = "neo4j-secret-7a0c52"
INLINE_PASSWORD = "inline-secret-e41b9d"
SECRETS = (INTERNAL, READ, WRONG, PASSWORD, INLINE_PASSWORD)

CONFIGURE = """mutation($input: MemoryGraphSettingsInput!) {
  configureMemoryGraph(input: $input) { __typename ... on Health { status } } }"""
# A document that fails validation while it carries a password literal on the same line.
INLINE = (
    'mutation { configureMemoryGraph(input: {neo4jPassword: "' + INLINE_PASSWORD + '", '
    "unknownField: 1}) { __typename } }"
)


def neo4j_uri() -> str:
    """The test Neo4j when there is one (its driver then logs a real HELLO), else a dead port."""
    return os.environ.get("GATEWAY_TEST_NEO4J_URI", "bolt://127.0.0.1:9")


def send_everything(url: str) -> list[str]:
    """Requests carrying every secret; the response bodies."""
    bearer = {"Authorization": f"Bearer {INTERNAL}"}
    requests: list[tuple[dict[str, str], dict[str, Any]]] = [
        ({"Authorization": f"Bearer {WRONG}"}, {"query": "{ health { status } }"}),
        ({"Authorization": f"Bearer {READ}"}, {"query": "{ health { status } }"}),
        (
            {"Authorization": f"Bearer {READ}"},
            {"query": CONFIGURE, "variables": {"input": {"neo4jPassword": PASSWORD}}},
        ),
        (
            bearer,
            {
                "query": CONFIGURE,
                "variables": {
                    "input": {
                        "backend": "NEO4J",
                        "neo4jUri": neo4j_uri(),
                        "neo4jPassword": PASSWORD,
                    }
                },
            },
        ),
        (bearer, {"query": '{ subgraph(sessionId: "s1") { __typename } }'}),
        (bearer, {"query": INLINE}),
        (bearer, {"query": CONFIGURE, "variables": {"input": {"backend": "FILE"}}}),
    ]
    with httpx2.Client(base_url=url, timeout=30.0) as client:
        return [
            client.post("/graphql", json=body, headers=headers).text for headers, body in requests
        ]


def test_no_secret_reaches_a_log_record_or_a_response(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = Settings(data_dir=tmp_path, internal_token=INTERNAL, read_token=READ)

    with serving(create_app(settings)) as url:
        bodies = send_everything(url)

    logged = [record.getMessage() for record in caplog.records]
    logged += [caplog.text]
    access = [r for r in caplog.records if r.name == "uvicorn.access"]
    assert len(access) == len(bodies), "uvicorn's access log was not captured"
    assert any(r.name.startswith("neo4j") for r in caplog.records), "the driver logged nothing"
    leaks = [(secret, text) for secret in SECRETS for text in logged + bodies if secret in text]
    assert leaks == []
