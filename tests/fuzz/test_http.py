"""Malformed requests over HTTP and WebSocket: never a 500, never a stack trace; a refused
HTTP request answers a GraphQL error object with a code.

Bodies are arbitrary bytes (invalid UTF-8 included), JSON of any shape and depth, JSON with
escapes that decode to lone surrogates, and requests with odd content types and methods.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from gateway.http.app import create_app
from gateway.settings import Settings
from tests.fuzz.conftest import FUZZ, PYTHON_TEXT
from tests.http.live import LOCAL_URL, LOCAL_WS

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
QUERIES = st.sampled_from(
    [
        "{ health { status } }",
        "query($s: String!) { subgraph(sessionId: $s) { __typename } }",
        "mutation($i: ObserveSessionFirstMessageInput!) { observeSessionFirstMessage(input: $i) "
        "{ __typename } }",
        "{",
        "",
    ]
) | st.text(max_size=50)
REQUESTS = st.fixed_dictionaries(
    {},
    optional={
        "query": QUERIES | JSON_VALUES,
        "variables": JSON_VALUES,
        "operationName": st.text(max_size=10) | JSON_VALUES,
        "extensions": JSON_VALUES,
    },
)
BODIES = st.one_of(
    st.binary(max_size=200),
    REQUESTS.map(lambda request: json.dumps(request).encode()),
    JSON_VALUES.map(lambda value: json.dumps(value).encode()),
    st.integers(1, 100_000).map(lambda depth: b"[" * depth + b"]" * depth),
    st.integers(1, 100_000).map(lambda depth: b'{"a":' * depth + b"1" + b"}" * depth),
    st.sampled_from(
        [b'{"query": "\\ud800"}', b'{"query": "{ health { status } }", "x": "\\udfff"}']
    ),
)
CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "application/json; charset=latin-1",
        "text/plain",
        "",
        "multipart/form-data",
    ]
)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    app = create_app(Settings(data_dir=tmp_path))
    with TestClient(base_url=LOCAL_URL, app=app, raise_server_exceptions=False) as client:
        yield client


def acceptable(status: int, text: str) -> list[str]:
    problems = [f"HTTP {status}"] if status >= 500 else []
    if 400 <= status < 500 and not coded(text):
        problems.append(f"HTTP {status} without a coded GraphQL error: {text[:80]!r}")
    return problems + [f"{marker!r} in the answer" for marker in PYTHON_TEXT if marker in text]


def coded(text: str) -> bool:
    """The answer is a GraphQL error object whose errors each carry a code."""
    try:
        errors = json.loads(text)["errors"]
        return bool(errors) and all(error["extensions"]["code"] for error in errors)
    except (ValueError, KeyError, TypeError):
        return False


def test_any_post_body_answers_a_client_error_or_graphql(client: TestClient) -> None:
    @FUZZ
    @given(body=BODIES, content_type=CONTENT_TYPES)
    def post(body: bytes, content_type: str) -> None:
        response = client.post("/graphql", content=body, headers={"Content-Type": content_type})

        assert acceptable(response.status_code, response.text) == []

    post()


def test_any_query_string_answers_a_client_error_or_graphql(client: TestClient) -> None:
    @FUZZ
    @given(
        params=st.dictionaries(
            st.sampled_from(["query", "variables", "operationName", "extensions", "x"]),
            st.text(max_size=60) | JSON_VALUES.map(json.dumps),
        )
    )
    def get(params: dict[str, str]) -> None:
        response = client.get("/graphql", params=params, headers={"Accept": "application/json"})

        assert acceptable(response.status_code, response.text) == []

    get()


@pytest.mark.parametrize(
    "message",
    ["not json", "[" * 100_000, "[1]", "5", "null", '{"type": 5}', '{"type": "subscribe"}'],
)
def test_a_malformed_websocket_message_closes_the_connection_cleanly(
    client: TestClient, message: str
) -> None:
    with client.websocket_connect(
        f"{LOCAL_WS}/graphql", subprotocols=["graphql-transport-ws"]
    ) as socket:
        socket.send_json({"type": "connection_init"})
        acknowledged = socket.receive_json()
        socket.send_text(message)
        with pytest.raises(WebSocketDisconnect) as closed:
            socket.receive_json()

    assert acknowledged == {"type": "connection_ack"}
    assert 4400 <= closed.value.code < 4500
