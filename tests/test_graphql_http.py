"""Choosing the response media type from ``Accept`` (GraphQL over HTTP)."""

from __future__ import annotations

import pytest

from gateway.http.graphql import GRAPHQL_RESPONSE_JSON, JSON, response_media_type


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, JSON),
        ("", JSON),
        ("*/*", JSON),
        ("application/*", JSON),
        ("text/html", JSON),
        ("application/json", JSON),
        (GRAPHQL_RESPONSE_JSON, GRAPHQL_RESPONSE_JSON),
        (f"{GRAPHQL_RESPONSE_JSON}, application/json;q=0.9", GRAPHQL_RESPONSE_JSON),
        (f"application/json, {GRAPHQL_RESPONSE_JSON}", GRAPHQL_RESPONSE_JSON),
        (f"application/json, {GRAPHQL_RESPONSE_JSON};q=0.5", JSON),
        (f"{GRAPHQL_RESPONSE_JSON};q=0, application/json", JSON),
        (f"{GRAPHQL_RESPONSE_JSON}, */*;q=0.8", GRAPHQL_RESPONSE_JSON),
        ("Application/GraphQL-Response+JSON; charset=utf-8", GRAPHQL_RESPONSE_JSON),
        ("application/json, multipart/mixed", JSON),
    ],
)
def test_the_media_type_follows_accept(accept: str | None, expected: str) -> None:
    assert response_media_type(accept) == expected
