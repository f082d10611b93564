"""``/graphql`` over HTTP: the playground, masked unexpected errors, secrets kept out of logs."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest

from resolvers import subgraph
from tests.http.conftest import INTERNAL_TOKEN, READ_TOKEN, post

if TYPE_CHECKING:
    from starlette.testclient import TestClient

SUBGRAPH = '{ subgraph(sessionId: "s1") { __typename } }'
SECRET_DETAIL = "boom: internals at /srv/secret"


@pytest.fixture
def broken_subgraph(monkeypatch: pytest.MonkeyPatch) -> None:
    async def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError(SECRET_DETAIL)

    monkeypatch.setattr(subgraph, "session_subgraph", explode)


def test_a_browser_gets_the_playground_with_our_default_query(client: TestClient) -> None:
    response = client.get("/graphql", headers={"Accept": "text/html"})

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "query SessionChain" in response.text


@pytest.mark.usefixtures("broken_subgraph")
def test_an_unexpected_error_is_masked_with_a_request_id(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    headers = {"X-Request-Id": "req-42"}

    response = post(client, SUBGRAPH, INTERNAL_TOKEN, headers=headers)

    assert response.status_code == 200
    (error,) = response.json()["errors"]
    assert error["message"] == "Unexpected error."
    assert error["extensions"] == {"code": "INTERNAL", "requestId": "req-42"}
    assert "boom" not in response.text
    assert "Traceback" not in response.text
    assert "req-42" in caplog.text
    assert SECRET_DETAIL in caplog.text  # the original is logged for the operator


@pytest.mark.usefixtures("broken_subgraph")
def test_tokens_never_reach_the_logs(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    post(client, SUBGRAPH, "wrong-token-0d41")
    post(client, SUBGRAPH, READ_TOKEN)
    post(client, SUBGRAPH, INTERNAL_TOKEN)

    assert caplog.records, "nothing was logged, so the check would prove nothing"
    for secret in ("wrong-token-0d41", READ_TOKEN, INTERNAL_TOKEN):
        assert secret not in caplog.text
