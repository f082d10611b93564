"""Secrets never reach the logs nor other clients (SPEC §8), through a real uvicorn at DEBUG.

Every log record of the run (uvicorn's access and error logs, strawberry, the gateway, the Neo4j
driver) and every response body is scanned for each secret that was sent.
"""

from __future__ import annotations

import io
import json
import logging
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import httpx2

from gateway.http.app import create_app
from gateway.observability.logs import log_handler
from gateway.settings import Settings
from tests.http.live import serving

if TYPE_CHECKING:
    from collections.abc import Iterator
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


URI_PASSWORD = "uri-secret-60f2c8"
BLOCK_PASSWORD = "block-secret-1d93aa"
ESCAPED_PASSWORD = "escaped-secret-8e04b7"
NUMBER_PASSWORD = 73519046
LISTED_PASSWORD = "listed-secret-c27d15"
FORM_SECRETS = (
    INTERNAL,
    URI_PASSWORD,
    BLOCK_PASSWORD,
    ESCAPED_PASSWORD,
    str(NUMBER_PASSWORD),
    LISTED_PASSWORD,
)


def invalid_configure(literal: str) -> dict[str, Any]:
    """A document carrying ``neo4jPassword: <literal>`` that fails validation."""
    return {
        "query": "mutation { configureMemoryGraph(input: {neo4jPassword: "
        + literal
        + ", unknownField: 1}) { __typename } }"
    }


def send_every_form(url: str) -> list[str]:
    bearer = {"Authorization": f"Bearer {INTERNAL}"}
    # \u escapes for the first letter, so the document never holds the password as written.
    escaped = '"\\u00' + f"{ord(ESCAPED_PASSWORD[0]):02x}" + ESCAPED_PASSWORD[1:] + '"'
    encoded = "".join(f"%{byte:02x}" for byte in INTERNAL.encode())
    with httpx2.Client(base_url=url, timeout=30.0) as client:
        responses = [
            client.get(f"/graphql?query=%7B__typename%7D&token={encoded}", headers=bearer),
            client.get(f"/graphql?query=%7B__typename%7D&access={quote(INTERNAL)}"),
            client.post(
                "/graphql",
                json={
                    "query": CONFIGURE,
                    "variables": {
                        "input": {
                            "backend": "NEO4J",
                            "neo4jUri": f"bolt://neo4j:{URI_PASSWORD}@127.0.0.1:9",
                            "neo4jPassword": PASSWORD,
                        }
                    },
                },
                headers=bearer,
            ),
            client.post(
                "/graphql", json=invalid_configure(f'"""{BLOCK_PASSWORD}"""'), headers=bearer
            ),
            client.post("/graphql", json=invalid_configure(escaped), headers=bearer),
            client.post("/graphql", json=invalid_configure(str(NUMBER_PASSWORD)), headers=bearer),
            client.post(
                "/graphql",
                json={
                    "query": CONFIGURE,
                    "variables": {"input": {"neo4jPassword": NUMBER_PASSWORD}},
                },
                headers=bearer,
            ),
            client.post(
                "/graphql",
                json={
                    "query": CONFIGURE,
                    "variables": {"input": {"neo4jPassword": [LISTED_PASSWORD]}},
                },
                headers=bearer,
            ),
            client.post(
                "/graphql",
                json={"query": CONFIGURE, "variables": {"input": {"backend": "FILE"}}},
                headers=bearer,
            ),
        ]
    return [response.text for response in responses]


def configured_log(settings: Settings) -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = log_handler(settings, stream)
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)


def test_no_secret_in_any_form_reaches_the_configured_log_or_a_response(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, internal_token=INTERNAL, read_token=READ)
    logs = configured_log(settings)
    stream = next(logs)

    try:
        with serving(create_app(settings)) as url:
            bodies = send_every_form(url)
    finally:
        next(logs, None)

    text = stream.getvalue()
    assert "/graphql?query=%7B__typename%7D&token=***" in text  # the access log was written
    assert "neo4j:***@127.0.0.1" in text  # the unreachable URI was logged, masked
    assert all(json.loads(body) for body in bodies)
    readable = [text, unquote(text), *bodies]  # the access log percent-encodes
    leaks = [secret for secret in FORM_SECRETS for where in readable if secret in where]
    assert leaks == []
