"""CORS (SPEC §8): only configured origins, no credentials, preflight cached; none by default."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from starlette.testclient import TestClient

from gateway.http.app import create_app
from gateway.settings import Settings
from tests.http.conftest import INTERNAL_TOKEN
from tests.http.live import LOCAL_URL

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

APP_ORIGIN = "http://127.0.0.1:5173"
OTHER_ORIGIN = "http://127.0.0.1:6006"
HEALTH = {"query": "{ health { __typename } }"}


@pytest.fixture
def cors_client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(
        data_dir=tmp_path,
        internal_token=INTERNAL_TOKEN,
        cors_origins=(APP_ORIGIN,),
        cors_max_age=900,
    )
    with TestClient(base_url=LOCAL_URL, app=create_app(settings)) as client:
        yield client


def preflight(client: TestClient, origin: str) -> dict[str, str]:
    response = client.options(
        "/graphql",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    return {"status": str(response.status_code), **response.headers}


def test_a_preflight_from_a_configured_origin_is_allowed_and_cached(
    cors_client: TestClient,
) -> None:
    headers = preflight(cors_client, APP_ORIGIN)

    assert headers["status"] == "200"
    assert headers["access-control-allow-origin"] == APP_ORIGIN
    assert "POST" in headers["access-control-allow-methods"]
    allowed = {name.strip().lower() for name in headers["access-control-allow-headers"].split(",")}
    assert {"authorization", "content-type"} <= allowed
    assert headers["access-control-max-age"] == "900"
    assert "access-control-allow-credentials" not in headers


def test_a_preflight_from_another_origin_is_refused(cors_client: TestClient) -> None:
    headers = preflight(cors_client, OTHER_ORIGIN)

    assert headers["status"] == "400"
    assert "access-control-allow-origin" not in headers


def test_a_request_from_a_configured_origin_may_read_the_answer(cors_client: TestClient) -> None:
    response = cors_client.post(
        "/graphql",
        json=HEALTH,
        headers={"Origin": APP_ORIGIN, "Authorization": f"Bearer {INTERNAL_TOKEN}"},
    )

    assert response.json() == {"data": {"health": {"__typename": "Health"}}}
    assert response.headers["access-control-allow-origin"] == APP_ORIGIN
    assert "x-request-id" in response.headers["access-control-expose-headers"].lower()
    assert "access-control-allow-credentials" not in response.headers


def test_a_refused_token_is_readable_by_the_page_too(cors_client: TestClient) -> None:
    response = cors_client.post("/graphql", json=HEALTH, headers={"Origin": APP_ORIGIN})

    assert response.status_code == 401
    assert response.headers["access-control-allow-origin"] == APP_ORIGIN


def test_a_request_from_another_origin_gets_no_cors_header(cors_client: TestClient) -> None:
    response = cors_client.post(
        "/graphql",
        json=HEALTH,
        headers={"Origin": OTHER_ORIGIN, "Authorization": f"Bearer {INTERNAL_TOKEN}"},
    )

    assert "access-control-allow-origin" not in response.headers


def test_without_configured_origins_no_cors_header_is_sent(open_client: TestClient) -> None:
    headers = preflight(open_client, APP_ORIGIN)
    response = open_client.post("/graphql", json=HEALTH, headers={"Origin": APP_ORIGIN})

    assert headers["status"] == "405"
    assert not [name for name in headers if name.startswith("access-control-")]
    assert not [name for name in response.headers if name.startswith("access-control-")]
