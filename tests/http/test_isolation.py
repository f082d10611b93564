"""Connections and requests that try to hold the server (SPEC §8 isolation, GraphQL over HTTP).

A request head must arrive within the head timeout (``gateway.http.serving``), a body within the
body timeout (``gateway.http.limits.BodySizeLimit``); a subscription POSTed for one answer and a
document of two operations without ``operationName`` are request errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import socket
from typing import TYPE_CHECKING, Any

import pytest
import uvicorn

from gateway.http.limits import BodySizeLimit
from gateway.http.serving import SPARE_DESCRIPTORS, HeadTimeoutProtocol, fit_open_file_limit
from tests.http.conftest import post
from tests.timing import once_within

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.testclient import TestClient
    from starlette.types import Message, Receive, Scope, Send

HEAD_TIMEOUT = 0.3
WAIT = 5.0  # a generous bound on how long a closing may take on a busy machine


def test_a_subscription_posted_for_one_answer_is_a_request_error(open_client: TestClient) -> None:
    response = post(open_client, 'subscription { graphEvents(sessionId: "s1") { __typename } }')

    assert response.status_code == 400
    assert "subscriptions are not allowed" in response.text


TOO_MANY_DIGITS = "1" + "0" * 4400  # more than Python converts to an int


@pytest.mark.parametrize(
    "body",
    [
        '{"query": "query($n: Int) { lessons(limit: $n) { __typename } }", "variables": '
        f'{{"n": {TOO_MANY_DIGITS}}}}}',
        f'{{"query": "{{ __typename }}", "extensions": {{"n": {TOO_MANY_DIGITS}}}}}',
    ],
)
def test_a_body_holding_an_integer_of_too_many_digits_is_bad_json(
    open_client: TestClient, body: str
) -> None:
    refused = open_client.post(
        "/graphql", content=body, headers={"content-type": "application/json"}
    )
    after = post(open_client, "{ __typename }")  # the same connection goes on

    assert refused.status_code == 400
    assert "JSON" in refused.text
    assert after.json() == {"data": {"__typename": "Query"}}


@pytest.mark.parametrize(
    "document",
    [
        f"{{ lessons(limit: {TOO_MANY_DIGITS}) {{ __typename }} }}",
        f"{{ lessons(limit: -{TOO_MANY_DIGITS}) {{ __typename }} }}",
        'mutation { observeUploadFile(input: {sessionId: "s1", fileId: "f", name: "a", '
        f'path: "a", size: {TOO_MANY_DIGITS}}}) {{ __typename }} }}',
    ],
)
def test_an_integer_literal_of_too_many_digits_is_a_limit_not_an_internal_error(
    open_client: TestClient, document: str
) -> None:
    errors = post(open_client, document).json()["errors"]

    assert [error["extensions"]["code"] for error in errors] == ["QUERY_LIMIT_EXCEEDED"]
    assert "4401 digits" in errors[0]["message"]


def test_digits_in_a_string_are_no_integer_literal(open_client: TestClient) -> None:
    document = f'{{ searchNodes(query: "{TOO_MANY_DIGITS}") {{ __typename }} }}'

    errors = post(open_client, document).json().get("errors") or []

    assert not any("digits" in error["message"] for error in errors)


def test_two_operations_without_an_operation_name_are_refused(open_client: TestClient) -> None:
    response = post(open_client, "query A { __typename } query B { __typename }")

    body = response.json()
    assert body["data"] is None
    assert "operation name" in body["errors"][0]["message"]


def test_two_operations_with_an_operation_name_run_that_one(open_client: TestClient) -> None:
    response = open_client.post(
        "/graphql",
        json={
            "query": "query A { __typename } query B { health { status } }",
            "operationName": "B",
        },
    )

    assert response.status_code == 200
    assert "health" in response.json()["data"]


# --- the body timeout -----------------------------------------------------------------------


async def test_a_body_that_does_not_arrive_in_time_answers_408() -> None:
    sent: list[Message] = []
    reached_app = False

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal reached_app
        reached_app = True

    async def trickle() -> Message:
        if not sent and not hasattr(trickle, "started"):
            trickle.started = True  # type: ignore[attr-defined]
            return {"type": "http.request", "body": b"{", "more_body": True}
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    scope: dict[str, Any] = {"type": "http", "method": "POST", "headers": [], "path": "/graphql"}
    guard = BodySizeLimit(app, max_bytes=1000, timeout=0.05)

    await once_within(WAIT, guard(scope, trickle, send))

    assert sent[0]["status"] == 408
    assert not reached_app
    body = json.loads(b"".join(message.get("body", b"") for message in sent[1:]))
    assert body["errors"][0]["extensions"] == {"code": "REQUEST_TIMEOUT"}


# --- the head timeout, on a real uvicorn server ---------------------------------------------


async def hello(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "websocket":  # accept, then speak only after the head timeout
        await receive()
        await send({"type": "websocket.accept"})
        await asyncio.sleep(3 * HEAD_TIMEOUT)
        await send({"type": "websocket.send", "text": "late"})
        await receive()  # until the client goes
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    config = uvicorn.Config(
        hello,
        host="127.0.0.1",
        port=port,
        lifespan="off",
        log_config=None,
        http=HeadTimeoutProtocol.with_timeout(HEAD_TIMEOUT),
        timeout_keep_alive=60,  # longer than the test: only the head timeout can close
    )
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve())
    try:
        while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
            await asyncio.sleep(0.01)
        yield port
    finally:
        server.should_exit = True
        await once_within(WAIT, task)


async def closed_by_server(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sent before it closed the connection."""
    received = b""
    while chunk := await once_within(WAIT, reader.read(4096)):
        received += chunk
    return received


async def test_a_connection_that_sends_nothing_is_closed() -> None:
    async with serving() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)

        received = await closed_by_server(reader)
        writer.close()

    assert received == b""


async def test_a_head_sent_a_byte_at_a_time_is_cut_off() -> None:
    async with serving() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for byte in b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ":
            writer.write(bytes([byte]))
            await asyncio.sleep(HEAD_TIMEOUT / 10)
            if reader.at_eof():
                break

        received = await closed_by_server(reader)
        writer.close()

    assert b"hello" not in received


async def test_a_prompt_request_is_answered_and_an_idle_keep_alive_closed_after() -> None:
    async with serving() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")

        received = await closed_by_server(reader)
        writer.close()

    assert received.startswith(b"HTTP/1.1 200")
    assert b"hello" in received


@pytest.mark.parametrize(
    "head",
    [
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n",
    ],
)
async def test_a_request_that_is_not_http_answers_a_coded_json_error(head: bytes) -> None:
    async with serving() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head)

        received = await closed_by_server(reader)
        writer.close()

    status, _, rest = received.partition(b"\r\n")
    headers, _, body = rest.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 400")
    assert b"content-type: application/json; charset=utf-8" in headers.lower()
    assert json.loads(body)["errors"][0]["extensions"] == {"code": "BAD_REQUEST"}


async def test_a_websocket_outlives_the_head_timeout() -> None:
    handshake = (
        b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    async with serving() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(handshake)

        received = b""
        while b"late" not in received and (chunk := await once_within(WAIT, reader.read(99))):
            received += chunk
        writer.close()

    assert received.startswith(b"HTTP/1.1 101")
    assert b"late" in received


def test_the_open_file_limit_is_raised_to_fit_the_connection_cap() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (512, hard))

        fits = fit_open_file_limit(2_000)

        assert fits == 2_000
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= 2_000 + SPARE_DESCRIPTORS
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_cap_beyond_the_hard_limit_is_cut_to_what_fits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    limits = {"now": (512, 1_024)}
    monkeypatch.setattr(resource, "getrlimit", lambda _: limits["now"])
    monkeypatch.setattr(resource, "setrlimit", lambda _, value: limits.update(now=value))

    fits = fit_open_file_limit(5_000)

    assert fits == 1_024 - SPARE_DESCRIPTORS
    assert limits["now"] == (1_024, 1_024)
