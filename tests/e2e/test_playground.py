"""The playground in headless Chromium with no network: it loads, runs its document, shows data."""

from __future__ import annotations

import base64
import hashlib
from typing import TYPE_CHECKING

from gateway.http.playground import ASSETS, Playground
from tests.e2e.conftest import (
    ARTIFACTS,
    CLIENTS,
    NODE_MODULES,
    missing,
    require_chromium,
    require_node,
    run_node,
)

if TYPE_CHECKING:
    from pathlib import Path

    from tests.e2e.conftest import Gateway

OBJECTIVE = "Map TP53 variants offline"
FIRST_MESSAGE = """mutation($input: ObserveSessionFirstMessageInput!) {
  observeSessionFirstMessage(input: $input) { __typename } }"""
EXECUTION = """mutation($input: ObserveExecutionInput!) {
  observeExecution(input: $input) { __typename } }"""
# Where each asset sits in clients/node_modules (the CDN URLs name the same files).
NPM_FILES = {
    "graphiql.min.css": "graphiql/graphiql.min.css",
    "graphiql.min.js": "graphiql/graphiql.min.js",
    "react.production.min.js": "react/umd/react.production.min.js",
    "react-dom.production.min.js": "react-dom/umd/react-dom.production.min.js",
}


def seed_demo_session(gateway: Gateway) -> None:
    gateway.post(
        FIRST_MESSAGE,
        input={
            "sessionId": "demo-session",
            "goalId": "goal:session:demo-session",
            "coreObjective": OBJECTIVE,
        },
    )
    gateway.post(
        EXECUTION,
        input={
            "sessionId": "demo-session",
            "executionId": "exec-1",
            "turnId": "t1",
            "tool": "run_python",
            "codeHash": "sha256:abc",
            "status": "succeeded",
            "startedAt": "2026-01-01T10:00:00Z",
            "finishedAt": "2026-01-01T10:00:05Z",
            "producedArtifacts": [{"artifactId": "fig-volcano", "version": 1}],
        },
    )


def test_the_playground_runs_its_default_document_without_network(gateway: Gateway) -> None:
    require_chromium()
    require_node()
    if not Playground().offline:
        missing("the GraphiQL assets are not installed (run tools/setup-clients.sh)")
    seed_demo_session(gateway)
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "playground.png"
    screenshot.unlink(missing_ok=True)

    run = run_node(CLIENTS / "e2e" / "playground.mjs", gateway.graphql, OBJECTIVE, str(screenshot))

    session = run["result"]["data"]["session"]
    assert run["blocked"] == []
    assert set(run["loadedFrom"]) >= {f"/graphql/assets/{asset.name}" for asset in ASSETS}
    assert session["goal"]["coreObjective"] == OBJECTIVE
    assert [step["__typename"] for step in session["chain"]] == ["ToolCall"]
    assert OBJECTIVE in run["shown"]
    assert screenshot.stat().st_size > 0


def test_the_cdn_fallback_pins_the_same_files_as_the_npm_lock() -> None:
    require_node()

    installed = {name: sha384(NODE_MODULES / path) for name, path in NPM_FILES.items()}

    assert {asset.name: asset.integrity for asset in ASSETS} == installed


def sha384(path: Path) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(path.read_bytes()).digest()).decode()
