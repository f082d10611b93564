"""Two gateway processes (uvicorn on 127.0.0.1) on one Neo4j share live updates.

Both take writes to one session at the same time; a ``graphEvents`` subscriber on each must see
every committed change exactly once and in the same order: the order of the session's change
feed in the database, which this test reads back as the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from typing import TYPE_CHECKING, Any

import httpx
import neo4j
import pytest
import websockets

from bench.neo4j import Connection
from bench.server import running_gateway
from gateway.live.feed import decode_changes

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from websockets.asyncio.client import ClientConnection

EVENTS = """subscription($sessionId: String!) {
  graphEvents(sessionId: $sessionId) { kind seq removed node { id } edge { type source target } }
}"""
EXECUTION = """mutation($input: ObserveExecutionInput!) {
  observeExecution(input: $input) { __typename }
}"""
WRITES_PER_GATEWAY = 6
SETTLE_SECONDS = 1.5  # the subscriptions' feed cursors start (one poll) before the writes
QUIET_SECONDS = 2.0  # no event for this long after the last write: the stream is complete
HANG_GUARD_SECONDS = 60.0


def execution(session: str, index: int) -> dict[str, Any]:
    return {
        "sessionId": session,
        "executionId": f"{session}-exec-{index}",  # keys are global: one run's own
        "turnId": "t1",
        "tool": "run_python",
        "codeHash": f"h{index}",
        "status": "succeeded",
        "startedAt": f"2026-01-01T10:00:{index:02d}Z",
        "finishedAt": f"2026-01-01T10:00:{index:02d}.5Z",
        "producedArtifacts": [{"artifactId": "fig", "version": index + 1}],
    }


@contextlib.asynccontextmanager
async def subscribed(url: str, session: str) -> AsyncIterator[ClientConnection]:
    ws_url = url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(ws_url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        payload = {"query": EVENTS, "variables": {"sessionId": session}}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        yield ws


async def collect(ws: ClientConnection, done: asyncio.Event) -> list[tuple[Any, ...]]:
    """``(kind, seq, removed, what)`` of every event until the stream is quiet after ``done``."""
    events: list[tuple[Any, ...]] = []
    while True:
        try:
            message = json.loads(await asyncio.wait_for(ws.recv(), QUIET_SECONDS))
        except TimeoutError:
            if done.is_set():
                return events
            continue
        assert message["type"] == "next", message
        event = message["payload"]["data"]["graphEvents"]
        edge = event["edge"]
        what = (
            event["node"]["id"] if event["node"] else (edge["type"], edge["source"], edge["target"])
        )
        events.append((event["kind"], event["seq"], event["removed"], what))


def as_event(change: Any) -> tuple[str, bool, Any]:
    if change.node is not None:
        return "NODE", change.removed, change.node.id
    edge = change.edge
    return "EDGE", change.removed, (edge.type.value.upper(), edge.source, edge.target)


async def feed_of(connection: Connection, session: str) -> list[tuple[str, bool, Any]]:
    async with neo4j.AsyncGraphDatabase.driver(
        connection.uri, auth=(connection.user, connection.password)
    ) as driver:
        result = await driver.execute_query(
            "MATCH (f:ChangeFeed {session_id: $session}) RETURN f.seq AS seq, f.changes AS changes "
            "ORDER BY f.seq",
            {"session": session},
        )
    numbers = [record["seq"] for record in result.records]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))  # no gap
    return [
        as_event(change)
        for record in result.records
        for change in decode_changes(session, record["changes"])
    ]


@pytest.mark.slow
async def test_subscribers_on_two_replicas_see_every_write_once_in_one_order(
    connection: dict[str, str], tmp_path: Path
) -> None:
    neo = Connection(connection["uri"], connection["user"], connection["password"])
    session = f"replicas-{uuid.uuid4().hex[:8]}"
    async with (
        running_gateway(tmp_path / "a", neo.settings()) as a,
        running_gateway(tmp_path / "b", neo.settings()) as b,
        subscribed(a.url, session) as on_a,
        subscribed(b.url, session) as on_b,
        httpx.AsyncClient(timeout=30.0) as client,
    ):
        done = asyncio.Event()
        readers = [asyncio.ensure_future(collect(ws, done)) for ws in (on_a, on_b)]
        await asyncio.sleep(SETTLE_SECONDS)

        async def write(gateway_url: str, first: int) -> None:
            for index in range(first, first + 2 * WRITES_PER_GATEWAY, 2):
                variables = {"input": execution(session, index)}
                body = {"query": EXECUTION, "variables": variables}
                answer = (await client.post(f"{gateway_url}/graphql", json=body)).json()
                assert answer["data"]["observeExecution"]["__typename"] == "Observed", answer

        await asyncio.gather(write(a.url, 0), write(b.url, 1))
        done.set()
        seen_a, seen_b = await asyncio.wait_for(asyncio.gather(*readers), HANG_GUARD_SECONDS)
    expected = await feed_of(neo, session)

    assert [(kind, removed, what) for kind, _, removed, what in seen_a] == expected
    assert [(kind, removed, what) for kind, _, removed, what in seen_b] == expected
    assert [row[1] for row in seen_a] == list(range(1, len(expected) + 1))
    assert [row[1] for row in seen_b] == list(range(1, len(expected) + 1))
    calls = {what for kind, _, _, what in seen_a if kind == "NODE"}
    assert {f"ToolCall:subtask:{session}-exec-{i}" for i in range(2 * WRITES_PER_GATEWAY)} <= calls
