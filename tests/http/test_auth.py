"""Bearer authentication on ``/graphql`` (SPEC §8)."""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from gateway.http.app import create_app
from gateway.http.auth import READ, WRITE, Access
from gateway.settings import Settings
from tests.http.conftest import INTERNAL_TOKEN, READ_TOKEN, post
from tests.http.live import LOCAL_URL, LOCAL_WS

if TYPE_CHECKING:
    from pathlib import Path


HEALTH = "{ health { status } }"
DISABLE = "mutation { configureMemoryGraph(input: {enabled: false}) { __typename } }"


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", f"Basic {INTERNAL_TOKEN}", "Bearer "],
    ids=["missing", "wrong", "not-bearer", "empty"],
)
def test_graphql_refuses_a_missing_or_invalid_token(
    client: TestClient, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}

    response = post(client, HEALTH, headers=headers)

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert "data" not in response.json()
    assert response.json()["errors"][0]["extensions"] == {"code": "UNAUTHENTICATED"}


def test_a_refused_token_answers_in_the_media_type_asked_for(client: TestClient) -> None:
    accept = "application/graphql-response+json"

    response = post(client, HEALTH, headers={"Accept": accept})

    assert response.status_code == 401
    assert response.headers["content-type"].split(";")[0] == accept


@pytest.mark.parametrize(
    "first", [READ_TOKEN, INTERNAL_TOKEN], ids=["read-first", "internal-first"]
)
def test_two_authorization_headers_present_no_token_whatever_their_order(
    client: TestClient, first: str
) -> None:
    second = INTERNAL_TOKEN if first == READ_TOKEN else READ_TOKEN
    headers = [("Authorization", f"Bearer {first}"), ("Authorization", f"Bearer {second}")]

    response = client.post("/graphql", json={"query": HEALTH}, headers=headers)

    assert response.status_code == 401


@pytest.mark.parametrize("token", [INTERNAL_TOKEN, READ_TOKEN], ids=["internal", "read"])
def test_a_valid_token_may_query(client: TestClient, token: str) -> None:
    response = post(client, HEALTH, token)

    assert response.status_code == 200
    assert response.json() == {"data": {"health": {"status": "HEALTHY"}}}


def test_the_internal_token_may_mutate(client: TestClient) -> None:
    response = post(client, DISABLE, INTERNAL_TOKEN)

    assert response.json() == {"data": {"configureMemoryGraph": {"__typename": "Health"}}}
    assert client.get("/health").json()["enabled"] is False


def test_the_read_token_may_not_mutate_and_nothing_is_written(client: TestClient) -> None:
    response = post(client, DISABLE, READ_TOKEN)

    body = response.json()
    assert body["data"] is None
    assert [error["extensions"]["code"] for error in body["errors"]] == ["FORBIDDEN"]
    assert client.get("/health").json()["enabled"] is True


def test_without_a_configured_token_graphql_is_open(open_client: TestClient) -> None:
    response = post(open_client, DISABLE)

    assert response.status_code == 200
    assert response.json() == {"data": {"configureMemoryGraph": {"__typename": "Health"}}}


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "rebound.example"},
        {"Host": "rebound.example:17674"},
        {"Host": "127.0.0.1.rebound.example"},
        {"Host": "localhost.example"},
        {"Host": "127.0.0.1", "Origin": "https://rebound.example"},
        {"Host": "127.0.0.1", "Origin": "null"},
        {"Host": "127.0.0.1", "Origin": "http://127.0.0.1.rebound.example"},
        {"Host": "127.0.0.1:abc"},
        {"Host": "localhost:17674/rebound"},
        {"Host": "[::1]x"},
        {"Host": "127.0.0.1", "Origin": "http://127.0.0.1:17674, https://rebound.example"},
        {"Host": "127.0.0.1", "Origin": "http://localhost@rebound.example"},
        {"Host": "127.0.0.1", "Origin": "http://localhost:17674/rebound"},
    ],
    ids=[
        "host",
        "host-port",
        "host-prefix",
        "host-suffix",
        "origin",
        "null-origin",
        "origin-prefix",
        "host-bad-port",
        "host-path",
        "host-after-bracket",
        "origin-list",
        "origin-userinfo",
        "origin-path",
    ],
)
def test_without_a_token_a_request_not_from_loopback_is_refused_and_writes_nothing(
    open_client: TestClient, headers: dict[str, str]
) -> None:
    # A page of another site whose name was rebound to 127.0.0.1 sends its own Host; a page
    # posting to 127.0.0.1 sends its Origin.
    refused = post(open_client, DISABLE, headers=headers)
    metrics = open_client.get("/metrics", headers=headers)

    expected = (421, "MISDIRECTED_REQUEST") if "Origin" not in headers else (403, "FORBIDDEN")
    assert (refused.status_code, refused.json()["errors"][0]["extensions"]["code"]) == expected
    assert metrics.status_code == expected[0]
    status = post(open_client, HEALTH).json()["data"]["health"]["status"]
    assert status != "DISABLED"  # the refused mutation changed nothing


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "127.0.0.1:17674"},
        {"Host": "localhost"},
        {"Host": "LOCALHOST:80"},
        {"Host": "[::1]:17674"},
        {"Host": "127.0.0.1", "Origin": "http://localhost:5173"},
        {"Host": "[::1]", "Origin": "http://[::1]:17674"},
    ],
    ids=["ipv4-port", "localhost", "upper-case", "ipv6", "local-origin", "ipv6-origin"],
)
def test_without_a_token_a_loopback_request_is_served(
    open_client: TestClient, headers: dict[str, str]
) -> None:
    assert post(open_client, HEALTH, headers=headers).status_code == 200


def test_without_a_token_a_websocket_from_another_origin_is_closed(
    open_client: TestClient,
) -> None:
    with (
        pytest.raises(WebSocketDisconnect) as closed,
        open_client.websocket_connect(
            f"{LOCAL_WS}/graphql",
            subprotocols=["graphql-transport-ws"],
            headers={"Origin": "https://rebound.example"},
        ),
    ):
        pass

    assert closed.value.code == 4403


def test_without_a_token_a_configured_cors_origin_is_served(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, cors_origins=("https://notebook.example",))
    with TestClient(base_url=LOCAL_URL, app=create_app(settings)) as local:
        allowed = post(local, HEALTH, headers={"Origin": "https://notebook.example"})
        other = post(local, HEALTH, headers={"Origin": "https://other.example"})

    assert (allowed.status_code, other.status_code) == (200, 403)


def subscribed(client: TestClient, origin: str, token: str | None = None) -> bool:
    """Whether a WebSocket from a page on ``origin`` is acknowledged."""
    payload = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with client.websocket_connect(
            f"{LOCAL_WS}/graphql",
            subprotocols=["graphql-transport-ws"],
            headers={"Origin": origin},
        ) as socket:
            socket.send_json({"type": "connection_init", "payload": payload})
            return bool(socket.receive_json() == {"type": "connection_ack"})
    except WebSocketDisconnect:
        return False


def test_without_a_token_a_local_page_of_another_port_may_subscribe(
    open_client: TestClient,
) -> None:
    # A development server's page (a Vite app on :5173) beside the gateway.
    assert subscribed(open_client, "http://localhost:5173")
    assert subscribed(open_client, "http://[::1]:8080")
    assert not subscribed(open_client, "https://pages.example")


def test_a_configured_cors_origin_may_subscribe(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        internal_token=INTERNAL_TOKEN,
        read_token=READ_TOKEN,
        cors_origins=("https://notebook.example",),
    )
    with TestClient(base_url=LOCAL_URL, app=create_app(settings)) as local:
        assert subscribed(local, "https://notebook.example", READ_TOKEN)
        assert not subscribed(local, "https://other.example", READ_TOKEN)


@pytest.mark.parametrize("host", ["LOCALHOST", "127.0.0.1", "localhost:80", "[::1]:17674"])
def test_without_a_token_the_tools_follow_the_same_host_rule(
    open_client: TestClient, host: str
) -> None:
    listed = open_client.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Host": host, "Accept": "application/json, text/event-stream"},
    )
    refused = open_client.post("/mcp", json={}, headers={"Host": "rebound.example"})

    assert listed.status_code == 200
    assert "query_graph" in listed.text
    assert refused.status_code == 421
    assert refused.json()["errors"][0]["extensions"]["code"] == "MISDIRECTED_REQUEST"


def test_with_a_token_the_host_is_not_checked(client: TestClient) -> None:
    # Behind a token the gateway may serve any interface, under any name.
    response = post(client, HEALTH, INTERNAL_TOKEN, headers={"Host": "memory.example"})

    assert response.status_code == 200


@pytest.mark.parametrize(
    ("presented", "grant"),
    [(INTERNAL_TOKEN, WRITE), (READ_TOKEN, READ), ("x", None), (INTERNAL_TOKEN + "x", None)],
    ids=["internal", "read", "short", "longer"],
)
def test_tokens_are_compared_in_constant_time(
    monkeypatch: pytest.MonkeyPatch, presented: str, grant: str | None
) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def compare_digest(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", compare_digest)
    access = Access(Settings(internal_token=INTERNAL_TOKEN, read_token=READ_TOKEN))

    granted = access.grant(f"Bearer {presented}")

    assert granted == grant
    assert compared, "the token was not compared with hmac.compare_digest"
    assert all(supplied == presented.encode() for supplied, _ in compared)
