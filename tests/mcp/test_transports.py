"""The tools over the two real transports, with the SDK's client: ``science-memory mcp`` as a
subprocess on stdio, and ``/mcp`` on a running gateway (streamable HTTP, bearer tokens)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from gateway.http.app import create_app
from gateway.settings import PREFIX, Settings
from tests.http.live import serving
from tests.mcp.conftest import answer, failure

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

ROOT = Path(__file__).parents[2]
INTERNAL, READ, REVIEWER = "internal-7f3a", "read-52be", "reviewer-9c01"
CLAIM = {
    "session_id": "s1",
    "content": "TP53 drives the effect",
    "claim_type": "finding",
    "confidence": "high",
    "locator": "§2",
}
OBSERVE = """mutation($input: ObserveExecutionInput!) { observeExecution(input: $input) {
  __typename } }"""


def stdio(data_dir: Path, *extra: str) -> StdioServerParameters:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT),
        PREFIX + "DATA_DIR": str(data_dir),
        PREFIX + "LOG_LEVEL": "WARNING",
    }
    return StdioServerParameters(
        command=sys.executable, args=["-m", "gateway", "mcp", *extra], env=env, cwd=str(ROOT)
    )


async def test_stdio_serves_the_agent_and_the_reviewer(tmp_path: Path) -> None:
    async with Client(stdio(tmp_path)) as client:
        agent = {tool.name for tool in (await client.list_tools()).tools}
        rejected = failure(await client.call_tool("declare_claim", CLAIM))
        found = answer(await client.call_tool("query_graph", {"session_id": "s1", "query": "x"}))
    async with Client(stdio(tmp_path, "--role", "reviewer")) as client:
        reviewer = {tool.name for tool in (await client.list_tools()).tools}
        missing = failure(await client.call_tool("trace_provenance", {"node_id": "fig"}))

    assert agent == {"query_graph", "declare_evidence", "declare_claim", "recall", "lessons"}
    assert reviewer == {"query_graph", "trace_provenance", "recall", "lessons"}
    assert (rejected["__typename"], rejected["code"]) == ("DeclareRejected", "NO_CITES_TARGET")
    assert rejected["instruction"]
    assert found == {"nodes": [], "total": 0, "truncated": False}
    assert (missing["__typename"], missing["code"]) == ("NodeNotFound", "NODE_NOT_FOUND")


@pytest.fixture
def gateway_url(tmp_path: Path) -> Iterator[str]:
    settings = Settings(
        data_dir=tmp_path, internal_token=INTERNAL, read_token=READ, reviewer_token=REVIEWER
    )
    with serving(create_app(settings)) as url:
        yield url


@contextlib.asynccontextmanager
async def over_http(url: str, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        yield client


async def observe_figure(url: str) -> None:
    execution: dict[str, Any] = {
        "executionId": "exec-1",
        "sessionId": "s1",
        "turnId": "turn-1",
        "tool": "run_python",
        "codeHash": "hash-1",
        "status": "succeeded",
        "startedAt": "2025-01-01T00:00:09Z",
        "finishedAt": "2025-01-01T00:00:10Z",
        "producedArtifacts": [{"artifactId": "fig", "version": 1}],
    }
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {INTERNAL}"}) as http:
        response = await http.post(
            f"{url}/graphql", json={"query": OBSERVE, "variables": {"input": execution}}
        )
    assert response.json()["data"]["observeExecution"]["__typename"] == "Observed"


async def test_http_tools_follow_the_token(gateway_url: str) -> None:
    await observe_figure(gateway_url)

    async with over_http(gateway_url, INTERNAL) as client:
        agent = {tool.name for tool in (await client.list_tools()).tools}
        rejected = failure(await client.call_tool("declare_claim", CLAIM))
        cited = answer(
            await client.call_tool("declare_claim", {**CLAIM, "cites_artifacts": {"F1": "fig"}})
        )
    async with over_http(gateway_url, READ) as client:
        reader = {tool.name for tool in (await client.list_tools()).tools}
        refused = failure(await client.call_tool("declare_claim", CLAIM))
    async with over_http(gateway_url, REVIEWER) as client:
        reviewer = {tool.name for tool in (await client.list_tools()).tools}
        trace = answer(await client.call_tool("trace_provenance", {"node_id": cited["node_id"]}))

    assert agent == {"query_graph", "declare_evidence", "declare_claim", "recall", "lessons"}
    assert reader == {"query_graph", "recall", "lessons"}
    assert reviewer == {"query_graph", "trace_provenance", "recall", "lessons"}
    assert (rejected["__typename"], rejected["code"]) == ("DeclareRejected", "NO_CITES_TARGET")
    assert "cites_artifacts" in rejected["instruction"]
    assert [chip["node_id"] for chip in cited["chips"]] == ["Artifact:fig#v1"]
    assert refused["field"] == "name"
    assert trace["start"]["id"] == cited["node_id"]
    assert trace["broken"] is True  # no goal in this session: a dead end, named
    assert "no upstream" in trace["reason"]


async def test_http_without_a_valid_token_is_refused(gateway_url: str) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with httpx2.AsyncClient() as http:
        missing = await http.post(f"{gateway_url}/mcp", json=initialize)
        wrong = await http.post(
            f"{gateway_url}/mcp", json=initialize, headers={"Authorization": "Bearer nope"}
        )

    assert missing.status_code == wrong.status_code == 401
    assert missing.headers["WWW-Authenticate"].startswith("Bearer")


async def test_http_offers_no_stream_of_its_own(gateway_url: str) -> None:
    # Stateless, answering in JSON: nothing would ever come down a GET's event stream, which
    # held its connection open (pinging) for as long as the client kept it, outside every
    # timeout. MCP's answer for a server without that stream is 405.
    headers = {
        "Authorization": f"Bearer {INTERNAL}",
        "Accept": "text/event-stream",
        "mcp-protocol-version": "2025-06-18",
    }
    async with httpx2.AsyncClient(headers=headers, timeout=10) as http:
        async with http.stream("GET", f"{gateway_url}/mcp") as stream:
            get = stream.status_code, stream.headers.get("allow")
        delete = await http.delete(f"{gateway_url}/mcp")
    async with over_http(gateway_url, INTERNAL) as client:  # the SDK's client does without
        found = answer(await client.call_tool("query_graph", {"session_id": "s1", "query": "x"}))

    assert get == (405, "POST")
    assert (delete.status_code, delete.headers.get("allow")) == (405, "POST")
    assert found == {"nodes": [], "total": 0, "truncated": False}


async def test_the_reviewer_token_may_query_graphql_but_not_mutate(gateway_url: str) -> None:
    headers = {"Authorization": f"Bearer {REVIEWER}"}
    disable = "mutation { configureMemoryGraph(input: {enabled: false}) { __typename } }"
    async with httpx2.AsyncClient(headers=headers) as http:
        query = await http.post(f"{gateway_url}/graphql", json={"query": "{ __typename }"})
        mutation = await http.post(f"{gateway_url}/graphql", json={"query": disable})
        health = await http.get(f"{gateway_url}/health")

    assert query.json() == {"data": {"__typename": "Query"}}
    assert mutation.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert health.json()["enabled"] is True


def test_stdio_on_a_directory_a_gateway_serves_points_to_its_endpoint(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, internal_token=INTERNAL)
    server = stdio(tmp_path)

    with serving(create_app(settings)):
        done = subprocess.run(
            [server.command, *server.args],
            env=server.env,
            cwd=server.cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    assert done.returncode == 1
    assert "/mcp" in done.stderr
    assert done.stdout == ""


def test_stdio_answers_a_line_it_cannot_read(tmp_path: Path) -> None:
    # The SDK's stdio transport hands such a line to the server as an exception, which it
    # only logs: a client would wait for the answer to request 2 for ever.
    server = stdio(tmp_path)
    call = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"recall",'
    lines = [
        "not json",
        call + '"arguments":{"topic":"\\ud800"}}}',
        "[1, 2]",
        '{"id": 3,',
        '{"jsonrpc":"2.0","id":"\\ud800","method":"tools/list"}',  # no answer can carry it
        "[" * 100_000 + "]" * 100_000,
    ]

    done = subprocess.run(
        [server.command, *server.args],
        env=server.env,
        cwd=server.cwd,
        input="".join(f"{line}\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(a.get("id"), a["error"]["code"]) for a in answers] == [
        (None, -32700),
        (2, -32700),
        (None, -32600),
        (None, -32700),
        (None, -32700),
        (None, -32700),
    ]
    assert done.returncode == 0


async def test_http_refuses_json_it_cannot_read_as_a_parse_error(gateway_url: str) -> None:
    # What a JSON body may hold that Python cannot turn into values: an integer past its 4,300
    # digits, nesting past any recursion limit, a cut-off document, a lone surrogate.
    headers = {
        "Authorization": f"Bearer {INTERNAL}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "mcp-protocol-version": "2025-06-18",
    }
    call = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"query_graph",'
    hostile = {
        "a long integer id": '{"jsonrpc":"2.0","id":%s,"method":"tools/list"}' % ("9" * 5000),
        "a long integer argument": call + '"arguments":{"session_id":%s}}}' % ("9" * 5000),
        "deep nesting": call + '"arguments":{"query":%s}}}' % ("[" * 5000 + "]" * 5000),
        "a cut-off document": '{"jsonrpc":"2.0","id":4,',
        "a lone surrogate": call + '"arguments":{"session_id":"s1","query":"\\ud800"}}}',
    }
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        answers = {
            name: await http.post(f"{gateway_url}/mcp", content=body)
            for name, body in hostile.items()
        }
    async with over_http(gateway_url, INTERNAL) as client:
        found = answer(await client.call_tool("query_graph", {"session_id": "s1", "query": "x"}))

    for name, response in answers.items():
        assert response.status_code == 400, name
        assert response.json()["error"]["code"] == -32700, name  # JSON-RPC: parse error
    assert found == {"nodes": [], "total": 0, "truncated": False}
