"""``GET /health``: open to everyone, the state as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.runtime import package_version

if TYPE_CHECKING:
    from starlette.testclient import TestClient


def test_health_answers_without_a_token(client: TestClient) -> None:
    response = client.get("/health")

    assert response.status_code == 200
    assert response.json() == {
        "status": "HEALTHY",
        "backend": "FILE",
        "enabled": True,
        "reachable": True,
        "pendingWrites": 0,
        "version": package_version(),
    }
