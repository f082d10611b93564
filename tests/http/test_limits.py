"""The request body limit (SPEC §8): HTTP 413 before the body is parsed, declared or chunked."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import httpx2
import pytest
from starlette.testclient import TestClient

from gateway.http.app import create_app
from gateway.http.limits import BodySizeLimit
from gateway.settings import Settings
from tests.http.live import LOCAL_URL, serving

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from starlette.types import Message, Receive, Scope, Send

LIMIT = 1024
HEALTHY = {"data": {"health": {"status": "HEALTHY"}}}


def body_of(size: int) -> bytes:
    """A valid GraphQL request of exactly ``size`` bytes (padded by an ignored key)."""
    empty = json.dumps({"query": "{ health { status } }", "pad": ""}).encode()
    body = json.dumps({"query": "{ health { status } }", "pad": "x" * (size - len(empty))})
    assert len(body) == size
    return body.encode()


@pytest.fixture
def small(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(
        base_url=LOCAL_URL, app=create_app(Settings(data_dir=tmp_path, max_body_bytes=LIMIT))
    ) as client:
        yield client


def post_bytes(client: TestClient, body: bytes) -> httpx2.Response:
    return client.post("/graphql", content=body, headers={"Content-Type": "application/json"})


def test_a_body_at_the_limit_is_served(small: TestClient) -> None:
    response = post_bytes(small, body_of(LIMIT))

    assert (response.status_code, response.json()) == (200, HEALTHY)


def test_a_body_one_byte_over_the_limit_is_refused_with_413(small: TestClient) -> None:
    response = post_bytes(small, body_of(LIMIT + 1))

    assert response.status_code == 413
    (error,) = response.json()["errors"]
    assert error["extensions"] == {"code": "QUERY_LIMIT_EXCEEDED"}
    assert str(LIMIT) in error["message"]


def test_a_body_over_the_limit_is_refused_in_the_media_type_asked_for(small: TestClient) -> None:
    accept = "application/graphql-response+json"
    response = small.post(
        "/graphql",
        content=body_of(LIMIT + 1),
        headers={"Content-Type": "application/json", "Accept": accept},
    )

    assert response.status_code == 413
    assert response.headers["content-type"].split(";")[0] == accept


class Recorder:
    """An ASGI app that records the body it was given; and a chunked client."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.read = 0
        self.body: bytes | None = None
        self.sent: list[Message] = []

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        self.body = message["body"]
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive(self) -> Message:
        chunk = self.chunks[self.read]
        self.read += 1
        return {"type": "http.request", "body": chunk, "more_body": self.read < len(self.chunks)}

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    async def run(self, limit: int) -> int:
        scope = {"type": "http", "method": "POST", "path": "/graphql", "headers": []}
        await BodySizeLimit(self.app, limit)(scope, self.receive, self.send)
        status: int = self.sent[0]["status"]
        return status


async def test_a_chunked_body_at_the_limit_reaches_the_app_whole() -> None:
    recorder = Recorder([b"a" * 400, b"b" * 400, b"c" * 224])

    status = await recorder.run(LIMIT)

    assert status == 204
    assert recorder.body == b"a" * 400 + b"b" * 400 + b"c" * 224


async def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit() -> None:
    recorder = Recorder([b"a" * 1000, b"b" * 25, b"never read"])

    status = await recorder.run(LIMIT)

    assert status == 413
    assert recorder.body is None  # the app never ran
    assert recorder.read == 2


def test_a_chunked_body_over_the_limit_is_refused_by_the_real_server(tmp_path: Path) -> None:
    def chunks() -> Iterator[bytes]:
        body = body_of(LIMIT + 1)
        yield body[:600]
        yield body[600:]

    settings = Settings(data_dir=tmp_path, max_body_bytes=LIMIT)

    with serving(create_app(settings)) as url, httpx2.Client(base_url=url) as client:
        refused = client.post(
            "/graphql", content=chunks(), headers={"Content-Type": "application/json"}
        )
        served = client.post(
            "/graphql", content=iter([body_of(LIMIT)]), headers={"Content-Type": "application/json"}
        )

    assert refused.request.headers["Transfer-Encoding"] == "chunked"
    assert refused.status_code == 413
    assert (served.status_code, served.json()) == (200, HEALTHY)


def test_the_document_limits_come_from_the_settings(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, max_aliases=1, introspection=False)

    with TestClient(base_url=LOCAL_URL, app=create_app(settings)) as client:
        aliased = client.post(
            "/graphql", json={"query": "{ a: health { status } b: health { status } }"}
        )
        schema = client.post("/graphql", json={"query": "{ __schema { queryType { name } } }"})

    assert [e["extensions"]["code"] for e in aliased.json()["errors"]] == ["QUERY_LIMIT_EXCEEDED"]
    assert "introspection has been disabled" in schema.json()["errors"][0]["message"]
