"""Bearer authentication on ``/graphql`` (SPEC §8)."""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING

import pytest

from gateway.http.auth import READ, WRITE, Access
from gateway.settings import Settings
from tests.http.conftest import INTERNAL_TOKEN, READ_TOKEN, post

if TYPE_CHECKING:
    from starlette.testclient import TestClient

HEALTH = "{ health { status } }"
DISABLE = "mutation { configureMemoryGraph(input: {enabled: false}) { __typename } }"


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", f"Basic {INTERNAL_TOKEN}", "Bearer "],
    ids=["missing", "wrong", "not-bearer", "empty"],
)
def test_graphql_refuses_a_missing_or_invalid_token(
    client: TestClient, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}

    response = post(client, HEALTH, headers=headers)

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert "data" not in response.json()
    assert response.json()["errors"][0]["extensions"] == {"code": "UNAUTHENTICATED"}


def test_a_refused_token_answers_in_the_media_type_asked_for(client: TestClient) -> None:
    accept = "application/graphql-response+json"

    response = post(client, HEALTH, headers={"Accept": accept})

    assert response.status_code == 401
    assert response.headers["content-type"].split(";")[0] == accept


@pytest.mark.parametrize(
    "first", [READ_TOKEN, INTERNAL_TOKEN], ids=["read-first", "internal-first"]
)
def test_two_authorization_headers_present_no_token_whatever_their_order(
    client: TestClient, first: str
) -> None:
    second = INTERNAL_TOKEN if first == READ_TOKEN else READ_TOKEN
    headers = [("Authorization", f"Bearer {first}"), ("Authorization", f"Bearer {second}")]

    response = client.post("/graphql", json={"query": HEALTH}, headers=headers)

    assert response.status_code == 401


@pytest.mark.parametrize("token", [INTERNAL_TOKEN, READ_TOKEN], ids=["internal", "read"])
def test_a_valid_token_may_query(client: TestClient, token: str) -> None:
    response = post(client, HEALTH, token)

    assert response.status_code == 200
    assert response.json() == {"data": {"health": {"status": "HEALTHY"}}}


def test_the_internal_token_may_mutate(client: TestClient) -> None:
    response = post(client, DISABLE, INTERNAL_TOKEN)

    assert response.json() == {"data": {"configureMemoryGraph": {"__typename": "Health"}}}
    assert client.get("/health").json()["enabled"] is False


def test_the_read_token_may_not_mutate_and_nothing_is_written(client: TestClient) -> None:
    response = post(client, DISABLE, READ_TOKEN)

    body = response.json()
    assert body["data"] is None
    assert [error["extensions"]["code"] for error in body["errors"]] == ["FORBIDDEN"]
    assert client.get("/health").json()["enabled"] is True


def test_without_a_configured_token_graphql_is_open(open_client: TestClient) -> None:
    response = post(open_client, DISABLE)

    assert response.status_code == 200
    assert response.json() == {"data": {"configureMemoryGraph": {"__typename": "Health"}}}


@pytest.mark.parametrize(
    ("presented", "grant"),
    [(INTERNAL_TOKEN, WRITE), (READ_TOKEN, READ), ("x", None), (INTERNAL_TOKEN + "x", None)],
    ids=["internal", "read", "short", "longer"],
)
def test_tokens_are_compared_in_constant_time(
    monkeypatch: pytest.MonkeyPatch, presented: str, grant: str | None
) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def compare_digest(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", compare_digest)
    access = Access(Settings(internal_token=INTERNAL_TOKEN, read_token=READ_TOKEN))

    granted = access.grant(f"Bearer {presented}")

    assert granted == grant
    assert compared, "the token was not compared with hmac.compare_digest"
    assert all(supplied == presented.encode() for supplied, _ in compared)
