"""Apollo Gateway over our subgraph and a "reviews" subgraph, composed with @apollo/composition.

``clients/federation/supergraph.mjs`` reads our SDL from the running gateway's
``_service { sdl }``, composes it with a subgraph that adds ``reviews`` to
``Artifact @key(fields: "id")`` and serves Apollo Gateway on loopback; the queries below
cross from one subgraph into the other in both directions.
"""

from __future__ import annotations

import json
import select
import subprocess
import time
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.e2e.conftest import CLIENTS, START_SECONDS, child_env, require_node, stop

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.e2e.conftest import Gateway

EXECUTION = """mutation($input: ObserveExecutionInput!) {
  observeExecution(input: $input) { ... on Observed { nodeIds } } }"""
# From the reviews subgraph into ours (`_entities` on us), and from ours into the reviews.
ALL_REVIEWS = "{ reviews { score artifact { id logicalName producedBy { id } } } }"
FIGURE_WITH_REVIEWS = """{ node(nodeId: "Artifact:fig#v1") {
  ... on Artifact { logicalName reviews { comment } } } }"""
REVIEWS = {
    "Artifact:fig#v1": [{"score": 4, "comment": "clear axes"}],
    "Artifact:table#v1": [{"score": 2, "comment": "no units"}, {"score": 3, "comment": "ok"}],
}


def read_line(process: subprocess.Popen[str]) -> str:
    """The first line the process prints, waiting at most START_SECONDS."""
    assert process.stdout is not None
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        ready, _, _ = select.select([process.stdout], [], [], 0.5)
        if ready:
            return process.stdout.readline()
    pytest.fail(f"supergraph.mjs printed nothing (exit code {process.poll()})")


@pytest.fixture
def supergraph(gateway: Gateway) -> Iterator[str]:
    """The URL of Apollo Gateway over our gateway and the reviews subgraph."""
    node = require_node()
    with subprocess.Popen(
        [node, "federation/supergraph.mjs", gateway.graphql, json.dumps(REVIEWS)],
        cwd=CLIENTS,
        env=child_env(),
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            started = json.loads(read_line(process))
            assert "errors" not in started, started
            yield str(started["gateway"])
        finally:
            stop(process)


def through(url: str, query: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.post(url, json={"query": query}, timeout=30).json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


def record_figures(gateway: Gateway) -> None:
    gateway.post(
        EXECUTION,
        input={
            "sessionId": "s1",
            "executionId": "e1",
            "turnId": "t1",
            "tool": "run_python",
            "codeHash": "sha256:abc",
            "status": "succeeded",
            "startedAt": "2026-01-01T10:00:00Z",
            "finishedAt": "2026-01-01T10:00:05Z",
            "producedArtifacts": [
                {"artifactId": "fig", "version": 1, "logicalName": "volcano plot"},
                {"artifactId": "table", "version": 1, "logicalName": "hits table"},
            ],
        },
    )


def test_reviews_from_the_other_subgraph_join_our_artifacts(
    gateway: Gateway, supergraph: str
) -> None:
    record_figures(gateway)

    reviews = through(supergraph, ALL_REVIEWS)["reviews"]
    figure = through(supergraph, FIGURE_WITH_REVIEWS)["node"]

    assert [(r["score"], r["artifact"]["logicalName"]) for r in reviews] == [
        (4, "volcano plot"),
        (2, "hits table"),
        (3, "hits table"),
    ]
    assert {r["artifact"]["producedBy"]["id"] for r in reviews} == {"Code:e1"}
    assert figure == {"logicalName": "volcano plot", "reviews": [{"comment": "clear axes"}]}
