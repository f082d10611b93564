"""GraphQL over HTTP: ``application/graphql-response+json`` and its status codes, 405 over GET."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from resolvers import subgraph
from tests.http.conftest import INTERNAL_TOKEN, READ_TOKEN

if TYPE_CHECKING:
    from starlette.testclient import TestClient

NEW = "application/graphql-response+json"
AUTH = {"Authorization": f"Bearer {INTERNAL_TOKEN}"}
MUTATION = "mutation { compactMemory { __typename } }"


def send(
    client: TestClient, query: str, accept: str, **variables: object
) -> tuple[int, str, dict[str, Any]]:
    response = client.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={**AUTH, "Accept": accept},
    )
    return response.status_code, response.headers["content-type"], response.json()


def test_the_new_media_type_answers_an_executed_document_with_200(client: TestClient) -> None:
    status, media, body = send(client, "{ health { status } }", NEW)

    assert (status, media.split(";")[0]) == (200, NEW)
    assert body == {"data": {"health": {"status": "HEALTHY"}}}


def test_the_new_media_type_answers_a_document_that_does_not_parse_with_400(
    client: TestClient,
) -> None:
    status, media, body = send(client, "{ health {", NEW)

    assert (status, media.split(";")[0]) == (400, NEW)
    assert "data" not in body
    assert body["errors"]


def test_the_new_media_type_answers_an_invalid_document_with_400(client: TestClient) -> None:
    status, _, body = send(client, "{ noSuchField }", NEW)

    assert status == 400
    assert "data" not in body


def test_the_new_media_type_answers_a_variable_that_does_not_coerce_with_400(
    client: TestClient,
) -> None:
    query = "query($id: ID!) { node(nodeId: $id) { __typename } }"

    status, _, body = send(client, query, NEW, id={"not": "an id"})

    assert status == 400
    assert "data" not in body


def test_a_refused_limit_is_a_request_error_under_the_new_media_type(client: TestClient) -> None:
    deep = "{ health { " * 14 + "}" * 14

    status, _, body = send(client, deep, NEW)

    assert status == 400
    assert "data" not in body


def test_a_field_error_still_answers_200_with_its_data(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(subgraph, "session_subgraph", explode)

    status, _, body = send(client, '{ subgraph(sessionId: "s") { __typename } }', NEW)

    assert status == 200
    assert "data" in body  # null: the non-null root field's error propagated
    assert body["errors"][0]["path"] == ["subgraph"]


def test_a_read_token_mutating_is_refused_with_403_under_the_new_media_type(
    client: TestClient,
) -> None:
    response = client.post(
        "/graphql",
        json={"query": MUTATION},
        headers={"Authorization": f"Bearer {READ_TOKEN}", "Accept": NEW},
    )

    assert response.status_code == 403
    assert [error["extensions"]["code"] for error in response.json()["errors"]] == ["FORBIDDEN"]


def test_application_json_keeps_the_legacy_answer(client: TestClient) -> None:
    status, media, body = send(client, "{ noSuchField }", "application/json")

    assert (status, media.split(";")[0]) == (200, "application/json")
    assert body["data"] is None


def test_a_mutation_over_get_answers_405_with_allow(client: TestClient) -> None:
    response = client.get("/graphql", params={"query": MUTATION}, headers=AUTH)

    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert client.get("/health").json()["enabled"] is True


def test_a_query_over_get_runs(client: TestClient) -> None:
    response = client.get("/graphql", params={"query": "{ health { status } }"}, headers=AUTH)

    assert response.json() == {"data": {"health": {"status": "HEALTHY"}}}


def _named(client: TestClient, accept: str, operation: str | None, query: str | None) -> Any:
    payload = {"query": query, "operationName": operation}
    return client.post("/graphql", json=payload, headers={**AUTH, "Accept": accept})


def test_an_unknown_operation_name_is_a_graphql_request_error(client: TestClient) -> None:
    document = "query A { __typename } query B { __typename }"

    new = _named(client, NEW, "C", document)
    legacy = _named(client, "application/json", "C", document)

    assert (new.status_code, new.headers["content-type"].split(";")[0]) == (400, NEW)
    assert "data" not in new.json()
    assert new.json()["errors"][0]["message"] == 'Unknown operation named "C".'
    assert legacy.status_code == 200
    assert legacy.json()["data"] is None
    assert legacy.json()["errors"][0]["message"] == 'Unknown operation named "C".'
    codes = [answer.json()["errors"][0]["extensions"]["code"] for answer in (new, legacy)]
    assert codes == ["GRAPHQL_VALIDATION_FAILED"] * 2


def test_a_request_without_a_document_is_a_graphql_request_error(client: TestClient) -> None:
    response = _named(client, NEW, None, None)

    assert response.status_code == 400
    assert response.json()["errors"][0]["message"] == "No GraphQL query found in the request"
    assert response.json()["errors"][0]["extensions"] == {"code": "BAD_REQUEST"}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'[{"query": "{ __typename }"}]', "batching is off"),
        (b'"{ __typename }"', "a JSON string, not an object"),
        (b"null", "JSON null, not an object"),
        (b"{", "not a GraphQL request"),
        (b'{"query": "{ __typename }", "variables": [1]}', "`variables` must be an object"),
        (b'{"query": 5}', "`query` must be a string"),
        (b'{"query": "{ __typename }", "operationName": 5}', "`operationName` must be a string"),
        (b'{"query": "{ __typename }", "extensions": "x"}', "`extensions` must be an object"),
        (b'{"query": "{ __typename }", "variables": {"n": 1e999}}', "a JSON number too large"),
        (b'{"query": "{ __typename }", "variables": {"n": ' + b"9" * 5000 + b"}}", "too long"),
        (b'{"query": "", "variables": {"n": ' + b"[" * 5000 + b"]" * 5000 + b"}}", "too deeply"),
    ],
)
def test_a_body_that_is_not_a_graphql_request_answers_a_coded_400_under_either_media_type(
    client: TestClient, body: bytes, reason: str
) -> None:
    for accept in (NEW, "application/json"):
        response = client.post(
            "/graphql",
            content=body,
            headers={**AUTH, "Accept": accept, "Content-Type": "application/json"},
        )

        assert (response.status_code, response.headers["content-type"].split(";")[0]) == (
            400,
            accept,
        )
        [error] = response.json()["errors"]
        assert reason in error["message"]
        assert error["extensions"] == {"code": "BAD_REQUEST"}


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ({"Content-Type": "text/plain"}, "text/plain"),
        ({"Content-Type": "application/json; charset=latin-1"}, "latin-1"),
        ({"Content-Type": "application/json", "Content-Encoding": "gzip"}, "gzip"),
    ],
)
def test_a_body_of_another_media_type_charset_or_encoding_answers_a_coded_415(
    client: TestClient, headers: dict[str, str], named: str
) -> None:
    response = client.post(
        "/graphql", content=b'{"query": "{ __typename }"}', headers={**AUTH, **headers}
    )

    assert response.status_code == 415
    assert response.json()["errors"][0]["extensions"] == {"code": "BAD_REQUEST"}
    assert named in response.json()["errors"][0]["message"]


@pytest.mark.parametrize(
    "content_type", ["APPLICATION/JSON", "Application/Json; Charset=UTF-8", "application/json;"]
)
def test_the_json_media_type_is_read_in_any_case(client: TestClient, content_type: str) -> None:
    response = client.post(
        "/graphql",
        content=b'{"query": "{ __typename }"}',
        headers={**AUTH, "Content-Type": content_type},
    )

    assert response.json() == {"data": {"__typename": "Query"}}


@pytest.mark.parametrize(
    "headers",
    [
        [("Content-Type", "text/plain"), ("Content-Type", "application/json")],
        [("Content-Type", "application/json"), ("Content-Type", "text/plain")],
        [("Content-Encoding", "identity"), ("Content-Encoding", "gzip")],
    ],
    ids=["two-types", "two-types-reversed", "two-encodings"],
)
def test_header_lines_that_disagree_are_refused_whatever_their_order(
    client: TestClient, headers: list[tuple[str, str]]
) -> None:
    lines = [("Authorization", AUTH["Authorization"]), *headers]
    if not any(name == "Content-Type" for name, _ in headers):
        lines.append(("Content-Type", "application/json"))

    response = client.post("/graphql", content=b'{"query": "{ __typename }"}', headers=lines)

    assert response.status_code == 415


def test_every_accept_line_counts(client: TestClient) -> None:
    headers = [
        ("Authorization", AUTH["Authorization"]),
        ("Accept", "application/json"),
        ("Accept", NEW),
    ]

    response = client.post("/graphql", json={"query": "{"}, headers=headers)

    assert (response.status_code, response.headers["content-type"].split(";")[0]) == (400, NEW)


def test_an_operation_named_null_is_run_by_its_name_over_get(client: TestClient) -> None:
    document = "query null { __typename } query other { health { status } }"

    response = client.get(
        "/graphql", params={"query": document, "operationName": "null"}, headers=AUTH
    )

    assert response.json() == {"data": {"__typename": "Query"}}


@pytest.mark.parametrize(
    ("kind", "value", "said"),
    [
        ("Int!", None, "not to be null."),
        ("Int", True, "non-integer value: true"),
        ("Int", "5", 'non-integer value: "5"'),
        ("Int", {"a": None, "b": [True, "é"]}, 'non-integer value: {"a": null, "b": [true, "é"]}'),
    ],
    ids=["null", "boolean", "string", "object"],
)
def test_a_refused_variable_is_quoted_in_json_words(
    client: TestClient, kind: str, value: object, said: str
) -> None:
    query = f"query($n: {kind}) {{ lessons(limit: $n) {{ __typename }} }}"

    status, _, body = send(client, query, NEW, n=value)

    assert status == 400
    assert body["errors"][0]["message"].endswith(said)
    assert body["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT"}


def test_a_method_graphql_is_not_served_over_answers_a_coded_405_with_allow(
    client: TestClient,
) -> None:
    response = client.put("/graphql", json={"query": "{ __typename }"}, headers=AUTH)

    assert response.status_code == 405
    assert response.headers["allow"] == "GET, POST"
    assert response.json()["errors"][0]["extensions"] == {"code": "METHOD_NOT_ALLOWED"}


def test_a_get_with_empty_optional_parameters_runs_and_a_bad_one_is_coded(
    client: TestClient,
) -> None:
    query = {"query": "{ __typename }"}
    blank = client.get(
        "/graphql",
        params={**query, "variables": " null ", "extensions": "", "operationName": ""},
        headers=AUTH,
    )
    bad = client.get("/graphql", params={**query, "variables": "[1]"}, headers=AUTH)

    assert blank.json() == {"data": {"__typename": "Query"}}
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["message"] == (
        "The GraphQL operation's `variables` parameter is not a JSON object: "
        "a JSON array, not an object."
    )
