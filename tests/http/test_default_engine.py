"""The default engine is SQLite: a data directory the log engine wrote is migrated by the first
start with default settings (once, its progress logged), a second start migrates nothing, and
every read answers as the log engine answered it.

The gateway is the real app (``create_app``, its lifespan opening the store) with the default
engine; only the document limits are raised, for the one document that selects every field of
every node type (``tests.graphql.test_execution.DOCUMENT``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import TYPE_CHECKING, Any

import pytest
from starlette.testclient import TestClient

from gateway.http.app import create_app
from gateway.settings import Settings
from gateway.stores.embedded import EngineMismatchError
from gateway.stores.sqlite.migrate import DATABASE_NAME, MIGRATED_DIRECTORY
from tests.graphql.test_execution import DOCUMENT, record_every_label
from tests.http.conftest import post
from tests.http.live import LOCAL_URL

if TYPE_CHECKING:
    from pathlib import Path

# The limits of tests.graphql.test_execution.ROOMY, as settings.
ROOMY = {
    "max_aliases": 10_000,
    "max_tokens": 100_000,
    "max_cost": 10**9,
    "max_cost_read": 10**9,
}
EXPORT = """query($s: String!, $format: ExportFormat!) { exportSession(sessionId: $s,
  format: $format) { __typename ... on SessionExport { mediaType content } } }"""
CHAINS = """query { goal: getChain(nodeId: "fig", kind: VIEW_GOAL) { __typename ... on Chain {
  total nodes { id } edges { type source target } } }
  exists: chainExists(nodeId: "fig", kinds: [VIEW_GOAL, VIEW_PRODUCING_CODE, VIEW_CITING_CLAIM])
  { __typename ... on ChainAvailability { entries { kind exists } } }
  artifacts: nodesByType(labels: [ARTIFACT, CLAIM, EVIDENCE]) { __typename ... on NodeList {
  total nodes { id label createdAt } } }
  produces: edgesByType(types: [PRODUCES]) { ...Edges }
  supports: edgesByType(types: [SUPPORTS]) { ...Edges }
  statedIn: edgesByType(types: [STATED_IN]) { ...Edges }
  everywhere: searchNodes(query: "paper") { __typename ... on NodeList { total nodes { id } } } }
  fragment Edges on EdgeListResult {
    __typename ... on EdgeList { total edges { source target } } }"""
MIGRATING = "migrating the graph in"
# ``edgesByType`` is asked one type at a time: over several types the log engine's order from
# one type to the next follows the hash of their names, which differs from process to process.


class OverHttp:
    """The ``execute`` of ``tests.conftest.GraphQLClient`` over the app's ``/graphql``, for the
    builders of ``tests.builders``."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    async def execute(self, document: str, **variables: Any) -> dict[str, Any]:
        body = post(self.client, document, **variables).json()
        assert "errors" not in body, body
        data: dict[str, Any] = body["data"]
        return data


def reads(client: TestClient) -> dict[str, Any]:
    """The answers of every read, as JSON text (key order included)."""
    answers = {
        "every field": post(client, DOCUMENT, s="s1", yes=True, no=False).json(),
        "chains, lists and search": post(client, CHAINS).json(),
    }
    for export_format in ("PROV_JSON", "PROV_JSONLD", "GRAPHML", "MERMAID"):
        answers[export_format] = post(client, EXPORT, s="s1", format=export_format).json()
    for name, answer in answers.items():
        assert "errors" not in answer, (name, answer)
    return {name: json.dumps(answer) for name, answer in answers.items()}


def migrations(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if MIGRATING in record.getMessage()]


async def test_a_log_directory_is_migrated_once_and_answers_alike(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    default = Settings(data_dir=tmp_path, **ROOMY)  # type: ignore[arg-type]
    assert default.file_engine == "sqlite"
    graph = tmp_path / "graph"
    with TestClient(
        base_url=LOCAL_URL, app=create_app(dataclasses.replace(default, file_engine="log"))
    ) as client:
        await record_every_label(OverHttp(client))
        expected = reads(client)
    log_files = sorted(path.name for path in graph.glob("log.*.jsonl"))
    assert log_files
    assert not (graph / DATABASE_NAME).exists()
    caplog.set_level(logging.INFO, "gateway.stores.sqlite")

    with TestClient(base_url=LOCAL_URL, app=create_app(default)) as client:
        first = reads(client)
    first_migrations = migrations(caplog)
    progress = [record.getMessage() for record in caplog.records]
    database = (graph / DATABASE_NAME).stat()
    caplog.clear()
    with TestClient(base_url=LOCAL_URL, app=create_app(default)) as client:
        second = reads(client)

    assert first == expected
    assert second == expected
    assert len(first_migrations) == 1
    assert any(
        " of " in line and line.startswith("writing the graph to SQLite") for line in progress
    )
    assert migrations(caplog) == []
    assert (graph / DATABASE_NAME).stat().st_ino == database.st_ino  # not rebuilt
    assert not list(graph.glob("log.*.jsonl"))
    assert sorted(path.name for path in (graph / MIGRATED_DIRECTORY).glob("log.*")) == log_files


def test_the_log_engine_on_a_migrated_directory_stops_the_start_with_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with TestClient(base_url=LOCAL_URL, app=create_app(Settings(data_dir=tmp_path))) as client:
        assert "errors" not in post(client, "{ __typename }").json()
    assert (tmp_path / "graph" / DATABASE_NAME).exists()
    app = create_app(Settings(data_dir=tmp_path, file_engine="log"))

    with pytest.raises(EngineMismatchError), TestClient(base_url=LOCAL_URL, app=app):
        pass

    critical = [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]
    assert len(critical) == 1
    assert critical[0].startswith("cannot start: the graph in ")
    assert "SCIENCE_AGENT_MEMORY_GRAPH_FILE_ENGINE=sqlite" in critical[0]
