"""WebSocket subscriptions authenticate in ``connection_init`` (SPEC §8), graphql-transport-ws."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from starlette.websockets import WebSocketDisconnect

from tests.http.conftest import INTERNAL_TOKEN, READ_TOKEN
from tests.http.live import LOCAL_WS

if TYPE_CHECKING:
    from starlette.testclient import TestClient

PROTOCOL = "graphql-transport-ws"
FORBIDDEN = 4403


def handshake(
    client: TestClient, payload: dict[str, str] | None, protocol: str = PROTOCOL
) -> dict[str, object]:
    """Send ``connection_init`` with ``payload``; the server's first message."""
    with client.websocket_connect(f"{LOCAL_WS}/graphql", subprotocols=[protocol]) as socket:
        init: dict[str, object] = {"type": "connection_init"}
        if payload is not None:
            init["payload"] = payload
        socket.send_json(init)
        answer: dict[str, object] = socket.receive_json()
        return answer


@pytest.mark.parametrize("token", [INTERNAL_TOKEN, READ_TOKEN], ids=["internal", "read"])
@pytest.mark.parametrize("key", ["Authorization", "authorization"])
def test_a_valid_token_is_acknowledged(client: TestClient, token: str, key: str) -> None:
    answer = handshake(client, {key: f"Bearer {token}"})

    assert answer == {"type": "connection_ack"}


@pytest.mark.parametrize(
    "payload",
    [
        None,
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": INTERNAL_TOKEN},
        {"Authorization": f"Basic {INTERNAL_TOKEN}"},
        {"Authorization": "Bearer "},
    ],
    ids=["no-payload", "no-token", "wrong", "no-scheme", "not-bearer", "empty"],
)
def test_a_missing_or_invalid_token_closes_the_connection(
    client: TestClient, payload: dict[str, str] | None
) -> None:
    with pytest.raises(WebSocketDisconnect) as closed:
        handshake(client, payload)

    assert closed.value.code == FORBIDDEN


def test_without_a_configured_token_the_handshake_is_open(open_client: TestClient) -> None:
    assert handshake(open_client, None) == {"type": "connection_ack"}


def test_the_retired_graphql_ws_protocol_is_refused(client: TestClient) -> None:
    # Only graphql-transport-ws is spoken (docs/live-updates.md): the older protocol's
    # messages would skip what the gateway sends over the newer one.
    with pytest.raises(WebSocketDisconnect) as closed:
        handshake(client, {"Authorization": f"Bearer {INTERNAL_TOKEN}"}, "graphql-ws")

    assert closed.value.code == 4406
