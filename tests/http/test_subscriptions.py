"""``graphEvents`` over graphql-transport-ws: commit order, fan-out, auth, slow subscribers."""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from gateway.http.app import create_app
from gateway.settings import Settings
from tests.http.conftest import INTERNAL_TOKEN, READ_TOKEN, post
from tests.http.live import LOCAL_URL, LOCAL_WS
from tests.timing import Pauses, once_within

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from starlette.applications import Starlette
    from starlette.testclient import WebSocketTestSession

PROTOCOL = "graphql-transport-ws"
HANG_GUARD_SECONDS = 5  # only turns a hang into a failure; messages arrive in milliseconds
EVENTS = """subscription Events($sessionId: String!) {
  graphEvents(sessionId: $sessionId) {
    kind seq removed sessionId node { id } edge { type source target }
  }
}"""
FIRST_MESSAGE = """mutation { observeSessionFirstMessage(input: {
  sessionId: "s1", goalId: "goal:session:s1", coreObjective: "Study TP53"}) { __typename } }"""
EXECUTION = """mutation { observeExecution(input: {
  sessionId: "s1", executionId: "exec-1", turnId: "t1", tool: "run_python", codeHash: "h1",
  status: "succeeded", startedAt: "2026-01-01T10:00:00Z", finishedAt: "2026-01-01T10:00:05Z",
  producedArtifacts: [{artifactId: "fig", version: 1}]}) { __typename } }"""

GOAL, CALL, CODE, FIG = (
    "ResearchGoal:goal:session:s1",
    "ToolCall:subtask:exec-1",
    "Code:exec-1",
    "Artifact:fig#v1",
)
IN_COMMIT_ORDER = [
    ("NODE", GOAL),
    ("NODE", CALL),
    ("NODE", CODE),
    ("NODE", FIG),
    ("EDGE", f"NEXT {GOAL} {CALL}"),
    ("EDGE", f"PRODUCES {CALL} {CODE}"),
    ("EDGE", f"PRODUCES {CODE} {FIG}"),
]


@pytest.fixture
def app(tmp_path: Path) -> Starlette:
    settings = Settings(data_dir=tmp_path, internal_token=INTERNAL_TOKEN, read_token=READ_TOKEN)
    return create_app(settings)


@pytest.fixture
def client(app: Starlette) -> Iterator[TestClient]:
    with TestClient(base_url=LOCAL_URL, app=app) as client:
        yield client


def receive(ws: WebSocketTestSession) -> dict[str, Any]:
    """The next server message, failing instead of hanging when none comes."""

    async def guarded() -> Any:
        return await once_within(HANG_GUARD_SECONDS, ws._send_rx.receive())

    message = ws.portal.call(guarded)
    if message["type"] == "websocket.close":
        raise WebSocketDisconnect(message.get("code", 1000), message.get("reason"))
    decoded: dict[str, Any] = json.loads(message["text"])
    return decoded


def connect(ws: WebSocketTestSession, token: str | None) -> dict[str, Any]:
    payload = {"Authorization": f"Bearer {token}"} if token else {}
    ws.send_json({"type": "connection_init", "payload": payload})
    return receive(ws)


def subscribe(ws: WebSocketTestSession, session: str = "s1", operation: str = "1") -> None:
    payload = {"query": EVENTS, "variables": {"sessionId": session}}
    ws.send_json({"id": operation, "type": "subscribe", "payload": payload})


@contextmanager
def subscriber(
    client: TestClient, token: str | None = READ_TOKEN
) -> Iterator[WebSocketTestSession]:
    with client.websocket_connect(f"{LOCAL_WS}/graphql", subprotocols=[PROTOCOL]) as ws:
        assert connect(ws, token) == {"type": "connection_ack"}
        subscribe(ws)
        yield ws


def wait_for_subscribers(app: Starlette, count: int) -> None:
    """The subscribe message is handled asynchronously: wait until the bus has the subscribers."""
    events = app.state.runtime.events
    started = time.monotonic()
    with Pauses() as pauses:
        while events.subscriber_count < count:
            waited = pauses.running_since(started)
            assert waited < HANG_GUARD_SECONDS, "the subscriptions never started"
            time.sleep(0.001)


def event_of(message: dict[str, Any]) -> tuple[str, str]:
    assert message["type"] == "next", message
    event = message["payload"]["data"]["graphEvents"]
    if event["kind"] == "NODE":
        return "NODE", event["node"]["id"]
    edge = event["edge"]
    return "EDGE", f"{edge['type']} {edge['source']} {edge['target']}"


def record_session(client: TestClient) -> None:
    for document in (FIRST_MESSAGE, EXECUTION):
        assert post(client, document, INTERNAL_TOKEN).json()["data"], document


def test_mutations_arrive_as_events_in_commit_order(client: TestClient, app: Starlette) -> None:
    with subscriber(client) as ws:
        wait_for_subscribers(app, 1)

        record_session(client)
        messages = [receive(ws) for _ in IN_COMMIT_ORDER]

    assert [event_of(message) for message in messages] == IN_COMMIT_ORDER
    events = [message["payload"]["data"]["graphEvents"] for message in messages]
    assert [event["seq"] for event in events] == list(range(1, len(IN_COMMIT_ORDER) + 1))
    assert {(event["sessionId"], event["removed"]) for event in events} == {("s1", False)}


def test_several_subscribers_each_receive_every_event(client: TestClient, app: Starlette) -> None:
    with subscriber(client) as one, subscriber(client) as two, subscriber(client) as three:
        wait_for_subscribers(app, 3)

        record_session(client)
        received = [[event_of(receive(ws)) for _ in IN_COMMIT_ORDER] for ws in (one, two, three)]

    assert received == [IN_COMMIT_ORDER] * 3


def test_a_subscriber_sees_only_its_session(client: TestClient, app: Starlette) -> None:
    with client.websocket_connect(f"{LOCAL_WS}/graphql", subprotocols=[PROTOCOL]) as ws:
        connect(ws, READ_TOKEN)
        subscribe(ws, session="other")
        subscribe(ws, session="s1", operation="2")
        wait_for_subscribers(app, 2)

        record_session(client)
        # Read every event before closing, so no event is cut off mid-execution.
        messages = [receive(ws) for _ in IN_COMMIT_ORDER]

    assert {message["id"] for message in messages} == {"2"}
    assert [event_of(message) for message in messages] == IN_COMMIT_ORDER


def test_a_read_token_may_subscribe_but_not_mutate(client: TestClient) -> None:
    with client.websocket_connect(f"{LOCAL_WS}/graphql", subprotocols=[PROTOCOL]) as ws:
        ack = connect(ws, READ_TOKEN)
        ws.send_json({"id": "m", "type": "subscribe", "payload": {"query": FIRST_MESSAGE}})
        answer = receive(ws)

    assert ack == {"type": "connection_ack"}
    assert [error["extensions"]["code"] for error in answer["payload"]["errors"]] == ["FORBIDDEN"]
    assert post(client, '{ session(sessionId: "s1") { __typename } }', READ_TOKEN).json() == {
        "data": {"session": {"__typename": "NodeNotFound"}}
    }


@pytest.mark.parametrize("token", [None, "wrong-token"], ids=["missing", "wrong"])
def test_a_connection_without_a_valid_token_is_refused(
    client: TestClient, token: str | None
) -> None:
    with (
        client.websocket_connect(f"{LOCAL_WS}/graphql", subprotocols=[PROTOCOL]) as ws,
        pytest.raises(WebSocketDisconnect) as refused,
    ):
        connect(ws, token)

    assert refused.value.code == 4403


def test_a_slow_subscriber_is_dropped_and_the_others_go_on(
    client: TestClient, app: Starlette
) -> None:
    events = app.state.runtime.events
    events.capacity = 2  # the execution commits 5 changes at once: the third overflows
    with subscriber(client) as slow:
        wait_for_subscribers(app, 1)
        events.capacity = 1024
        with subscriber(client) as steady:
            wait_for_subscribers(app, 2)

            assert post(client, EXECUTION, INTERNAL_TOKEN).json()["data"]
            dropped = [receive(slow), receive(slow)]
            received = [event_of(receive(steady)) for _ in range(5)]

    errors = dropped[0]["payload"]["errors"]
    assert [error["extensions"]["code"] for error in errors] == ["SUBSCRIBER_LAGGED"]
    assert dropped[1] == {"id": "1", "type": "complete"}
    assert received == [event for event in IN_COMMIT_ORDER if GOAL not in event[1]]
    assert (events.subscriber_count, events.dropped) == (0, 1)


def test_subscribing_while_disabled_answers_disabled(client: TestClient) -> None:
    disable = "mutation { configureMemoryGraph(input: {enabled: false}) { __typename } }"
    assert post(client, disable, INTERNAL_TOKEN).json()["data"]

    with subscriber(client) as ws:
        answer = receive(ws)

    assert [error["extensions"]["code"] for error in answer["payload"]["errors"]] == [
        "MEMORY_GRAPH_DISABLED"
    ]


def test_an_unexpected_error_over_websocket_is_masked(
    client: TestClient, app: Starlette, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken() -> None:
        raise RuntimeError("internal detail")

    monkeypatch.setattr(app.state.runtime, "health", broken)
    with client.websocket_connect(f"{LOCAL_WS}/graphql", subprotocols=[PROTOCOL]) as ws:
        connect(ws, READ_TOKEN)
        ws.send_json(
            {"id": "q", "type": "subscribe", "payload": {"query": "{ health { status } }"}}
        )
        answer = receive(ws)

    (error,) = answer["payload"]["errors"]
    assert error["message"] == "Unexpected error."
    assert error["extensions"]["code"] == "INTERNAL"


PAPER_EVENTS = """subscription { graphEvents(sessionId: "s1") {
  node { ... on Paper { retrievalCount foundBy { id } } } } }"""


def search(task: str) -> str:
    return f"""mutation {{ observeToolCall(input: {{sessionId: "s1", taskId: "{task}",
      toolName: "search", toolType: "search", products: [{{link: "doi:10.1/x"}}]}})
      {{ __typename }} }}"""


def test_relationship_fields_of_an_event_are_current(client: TestClient, app: Starlette) -> None:
    with client.websocket_connect(f"{LOCAL_WS}/graphql", subprotocols=[PROTOCOL]) as ws:
        connect(ws, READ_TOKEN)
        ws.send_json({"id": "1", "type": "subscribe", "payload": {"query": PAPER_EVENTS}})
        wait_for_subscribers(app, 1)

        post(client, search("subtask:mcp:a"), INTERNAL_TOKEN)
        post(client, search("subtask:mcp:b"), INTERNAL_TOKEN)
        nodes = [receive(ws)["payload"]["data"]["graphEvents"]["node"] for _ in range(6)]

    papers = [node for node in nodes if node]
    assert papers == [
        {"retrievalCount": 1, "foundBy": [{"id": "ToolCall:subtask:mcp:a"}]},
        {
            "retrievalCount": 2,
            "foundBy": [{"id": "ToolCall:subtask:mcp:a"}, {"id": "ToolCall:subtask:mcp:b"}],
        },
    ]


@pytest.mark.parametrize(
    ("document", "code"),
    [
        ('subscription { graphEvents(sessionId: "s1") { kind } } x', "GRAPHQL_PARSE_FAILED"),
        ("subscription { " + "graphEvents " * 5_000 + "}", "QUERY_LIMIT_EXCEEDED"),
        ('subscription { graphEvents(sessionId: "s1") { nope } }', None),  # validation, as before
    ],
    ids=["syntax", "tokens", "validation"],
)
def test_a_refused_subscription_gets_an_error_message(
    client: TestClient, document: str, code: str | None
) -> None:
    # The protocol's ``error``, never a bare ``complete`` a client would take for a stream
    # that ended.
    with client.websocket_connect(f"{LOCAL_WS}/graphql", subprotocols=[PROTOCOL]) as ws:
        assert connect(ws, READ_TOKEN) == {"type": "connection_ack"}
        ws.send_json({"id": "1", "type": "subscribe", "payload": {"query": document}})
        message = receive(ws)

    assert message["type"] == "error", message
    assert message["id"] == "1"
    if code is not None:
        assert message["payload"][0]["extensions"]["code"] == code
