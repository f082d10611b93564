"""A stored ``NaN`` or infinity (an older data directory, a Neo4j written by another tool) is
answered as ``null``: every answer parses with a strict JSON parser, as JavaScript's
``JSON.parse`` does, on every backend and in every output; a request that carries one is refused.

The value is seeded through the store port, as old data would be found, not through the API
(which refuses it)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx2
import pytest
from starlette.testclient import TestClient

from gateway.http.app import create_app
from gateway.settings import FILE_ENGINES, Settings
from gateway.stores.file.store import FileStore
from resolvers.records import EdgeRecord, EdgeType, Label, NodeRecord, node_id
from tests import builders as b
from tests.http.conftest import post
from tests.http.live import LOCAL_URL, LOCAL_WS
from tests.http.test_subscriptions import (
    HANG_GUARD_SECONDS,
    PROTOCOL,
    receive,
    wait_for_subscribers,
)
from tests.timing import once_within

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from starlette.testclient import WebSocketTestSession

    from gateway.runtime.state import Runtime
    from resolvers.store import GraphStore
    from tests.conftest import GraphQLClient

FIG = node_id(Label.ARTIFACT, "fig#v1")
CODE = node_id(Label.CODE, "exec-1")
ODD: dict[str, Any] = {"score": math.nan, "range": [1.5, math.inf], "deep": {"m": [-math.inf]}}
# What a strict client reads for ODD: JSON.stringify's answer.
NULLED: dict[str, Any] = {"score": None, "range": [1.5, None], "deep": {"m": [None]}}


def strict(text: str) -> Any:
    """``json.loads`` refusing the bare ``NaN``/``Infinity`` tokens, as ``JSON.parse`` does."""

    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


async def seed(store: GraphStore) -> None:
    """Give the artifact and its ``produces`` edge non-finite values, behind the API's back."""
    (node,) = await store.get_nodes([FIG])
    assert node is not None
    async with store.transaction("s1") as tx:
        await tx.put_node(dataclasses.replace(node, props={**node.props, **ODD}))
        await tx.put_edge(EdgeRecord(EdgeType.PRODUCES, CODE, FIG, {"weight": math.nan}))


@pytest.fixture
async def http(runtime: Runtime, settings: Settings) -> AsyncIterator[httpx2.AsyncClient]:
    """The real app over the test's runtime (its store is the ``store`` fixture's)."""
    app = create_app(settings)
    app.state.runtime = runtime
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


async def answer(client: httpx2.AsyncClient, query: str) -> Any:
    response = await client.post("/graphql", json={"query": query})
    assert response.status_code == 200, response.text
    decoded = strict(response.text)
    assert "errors" not in decoded, decoded
    return decoded["data"]


async def test_stored_non_finite_values_are_answered_as_null(
    gql: GraphQLClient, store: GraphStore, http: httpx2.AsyncClient
) -> None:
    await b.execution(gql, "s1", "exec-1", artifacts=[b.artifact("fig")])
    await seed(store)

    data = await answer(
        http,
        f"""{{
          subgraph(sessionId: "s1") {{ ... on Subgraph {{
            nodes {{ id properties }} edges {{ type source target properties }} }} }}
          node(nodeId: "{FIG}") {{ ... on Artifact {{ properties version }} }}
          nodesByType(labels: [ARTIFACT]) {{ ... on NodeList {{ nodes {{ properties }} }} }}
          edgesByType(types: [PRODUCES]) {{ ... on EdgeList {{ edges {{ target properties }} }} }}
        }}""",
    )

    nodes = {node["id"]: node["properties"] for node in data["subgraph"]["nodes"]}
    assert {name: nodes[FIG][name] for name in ODD} == NULLED
    assert nodes[FIG]["artifact_id"] == "fig"
    (produces,) = [e for e in data["subgraph"]["edges"] if e["target"] == FIG]
    assert produces["properties"] == {"weight": None}
    assert {name: data["node"]["properties"][name] for name in ODD} == NULLED
    assert data["node"]["version"] == 1
    assert data["nodesByType"]["nodes"][0]["properties"]["score"] is None
    by_type = {e["target"]: e["properties"] for e in data["edgesByType"]["edges"]}
    assert by_type[FIG] == {"weight": None}


async def test_a_typed_field_holding_a_stored_non_finite_value_is_null(
    gql: GraphQLClient, store: GraphStore, http: httpx2.AsyncClient
) -> None:
    await b.upload(gql, "s1", "a.csv", size=10)
    upload = node_id(Label.SOURCE_FILE, b.file_id("s1", "a.csv"))
    (node,) = await store.get_nodes([upload])
    assert node is not None
    async with store.transaction("s1") as tx:
        odd = {"size": math.nan, "media_type": math.inf}
        await tx.put_node(dataclasses.replace(node, props={**node.props, **odd}))

    data = await answer(
        http,
        f'{{ node(nodeId: "{upload}") {{ ... on SourceFile {{ size mediaType name }} }} }}',
    )

    assert data["node"] == {"size": None, "mediaType": None, "name": "a.csv"}


def prov_entity(document: dict[str, Any], export_format: str) -> dict[str, Any]:
    """The artifact's attributes, each value as PROV-JSON writes it (JSON-LD: its one item)."""
    ident = "smn:Artifact:fig%23v1"
    if export_format == "PROV_JSON":
        entity: dict[str, Any] = document["entity"][ident]
        return entity
    (found,) = [item for item in document["@graph"] if item.get("@id") == ident]
    return {name: value[0] if isinstance(value, list) else value for name, value in found.items()}


@pytest.mark.parametrize("export_format", ["PROV_JSON", "PROV_JSONLD"])
async def test_a_prov_export_of_a_stored_non_finite_value_is_json(
    gql: GraphQLClient, store: GraphStore, http: httpx2.AsyncClient, export_format: str
) -> None:
    await b.execution(gql, "s1", "exec-1", artifacts=[b.artifact("fig")])
    await seed(store)

    data = await answer(
        http,
        f'{{ exportSession(sessionId: "s1", format: {export_format}) '
        "{ ... on SessionExport { content } } }",
    )

    entity = prov_entity(strict(data["exportSession"]["content"]), export_format)
    value, kind = ("$", "type") if export_format == "PROV_JSON" else ("@value", "@type")
    # A scalar is PROV's own xsd:double literal, which has NaN and INF; lists and maps travel
    # as JSON text, where it is null.
    assert entity["sm:score"] == {value: "NaN", kind: "xsd:double"}
    texts = [entity[name] for name in ("sm:range", "sm:deep")]
    if export_format == "PROV_JSONLD":
        texts = [text[value] for text in texts]
    assert [strict(text) for text in texts] == [NULLED["range"], NULLED["deep"]]


async def test_a_graphml_export_of_a_stored_non_finite_value_holds_json(
    gql: GraphQLClient, store: GraphStore, http: httpx2.AsyncClient
) -> None:
    await b.execution(gql, "s1", "exec-1", artifacts=[b.artifact("fig")])
    await seed(store)

    data = await answer(
        http,
        '{ exportSession(sessionId: "s1", format: GRAPHML) { ... on SessionExport { content } } }',
    )

    root = ET.fromstring(data["exportSession"]["content"])
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    (fig,) = [n for n in root.iterfind(".//g:node", ns) if n.get("id") == FIG]
    props = strict(next(d.text or "" for d in fig if d.get("key") == "props"))
    assert {name: props[name] for name in ODD} == NULLED
    edge_props = [
        strict(d.text or "")
        for e in root.iterfind(".//g:edge", ns)
        if e.get("target") == FIG
        for d in e
        if d.get("key") == "edge_props"
    ]
    assert edge_props == [{"weight": None}]


async def test_a_request_carrying_a_non_finite_token_is_refused(
    gql: GraphQLClient, http: httpx2.AsyncClient
) -> None:
    body = (
        '{"query": "mutation($i: ObserveUploadFileInput!) { observeUploadFile(input: $i) '
        '{ __typename } }", "variables": {"i": {"sessionId": "s1", "fileId": '
        '"source_file:session:s1:a.csv", "name": "a.csv", "path": "a.csv", "size": NaN}}}'
    )

    response = await http.post(
        "/graphql", content=body, headers={"content-type": "application/json"}
    )

    assert response.status_code == 400
    after = await b.subgraph(gql, "s1")
    assert after["nodes"] == []


# --- over a WebSocket, from an older data directory -------------------------------------------

EVENTS = 'subscription { graphEvents(sessionId: "s1") { kind node { id properties } } }'
# Sent later than the stored one (which has no time), so it updates the stored goal.
RESENT_GOAL = """mutation { observeSessionFirstMessage(input: {sessionId: "s1",
  goalId: "goal:session:s1", coreObjective: "Study TP53", domain: "oncology",
  createdAt: "2026-01-01T10:00:00Z"}) { ... on Observed { written } } }"""


async def old_data_directory(directory: Path) -> None:
    """A file store as an older version may have left it: a goal holding non-finite values."""
    store = await FileStore.open(directory / "graph", fsync=False)
    goal = NodeRecord(
        id=node_id(Label.RESEARCH_GOAL, "goal:session:s1"),
        label=Label.RESEARCH_GOAL,
        key="goal:session:s1",
        session_id="s1",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        props={"goal_id": "goal:session:s1", "core_objective": "Study TP53", **ODD},
    )
    async with store.transaction("s1") as tx:
        await tx.put_node(goal)
    await store.aclose()


def receive_text(ws: WebSocketTestSession) -> str:
    """The next server message as the text sent, failing instead of hanging when none comes."""

    async def guarded() -> Any:
        return await once_within(HANG_GUARD_SECONDS, ws._send_rx.receive())

    message = ws.portal.call(guarded)
    assert message["type"] == "websocket.send", message
    text: str = message["text"]
    return text


@pytest.mark.parametrize("engine", FILE_ENGINES)
def test_a_graph_event_of_a_node_holding_a_stored_non_finite_value_is_json(
    tmp_path: Path, engine: str
) -> None:
    """The log engine reads the old directory as it is; SQLite (the default) migrates it."""
    asyncio.run(old_data_directory(tmp_path))
    app = create_app(Settings(data_dir=tmp_path, fsync=False, file_engine=engine))

    with (
        TestClient(base_url=LOCAL_URL, app=app) as client,
        client.websocket_connect(f"{LOCAL_WS}/graphql", subprotocols=[PROTOCOL]) as ws,
    ):
        ws.send_json({"type": "connection_init", "payload": {}})
        assert receive(ws) == {"type": "connection_ack"}
        ws.send_json({"id": "1", "type": "subscribe", "payload": {"query": EVENTS}})
        wait_for_subscribers(app, 1)
        changed = post(client, RESENT_GOAL)
        text = receive_text(ws)

    assert changed.json()["data"]["observeSessionFirstMessage"] == {"written": 1}
    event = strict(text)
    assert event["type"] == "next", event
    node = event["payload"]["data"]["graphEvents"]["node"]
    assert {name: node["properties"][name] for name in ODD} == NULLED
    assert node["properties"]["domain"] == "oncology"
