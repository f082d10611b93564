"""Clients over the real Starlette app (its lifespan opens the stores in ``tmp_path``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from starlette.testclient import TestClient

from gateway.http.app import create_app
from gateway.settings import Settings
from tests.http.live import LOCAL_URL

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    import httpx2

INTERNAL_TOKEN = "internal-token-7f3a9c"
READ_TOKEN = "read-token-52be1d"


@pytest.fixture
def open_client(tmp_path: Path) -> Iterator[TestClient]:
    """No token configured: everything is open (loopback only)."""
    with TestClient(base_url=LOCAL_URL, app=create_app(Settings(data_dir=tmp_path))) as client:
        yield client


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """The internal and the read token are configured."""
    settings = Settings(data_dir=tmp_path, internal_token=INTERNAL_TOKEN, read_token=READ_TOKEN)
    with TestClient(base_url=LOCAL_URL, app=create_app(settings)) as client:
        yield client


def post(
    client: TestClient,
    query: str,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    **variables: Any,
) -> httpx2.Response:
    """POST a GraphQL document, with ``Authorization: Bearer <token>`` when given."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    return client.post("/graphql", json={"query": query, "variables": variables}, headers=sent)
