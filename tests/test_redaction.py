"""``gateway.observability.redaction``: one ``redact()`` for logs and client-facing errors
(SPEC §8).

Each case writes a secret the way some layer may print it, then checks — by decoding the
redacted text as that layer encodes (percent-decoding, JSON string escapes) — that the secret
cannot be read back from it.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote_plus

import pytest
from graphql import Lexer

from gateway.observability import redaction
from gateway.observability.redaction import (
    MASK,
    redact,
    register_secrets,
    request_secrets,
    server_paths,
)

SECRET = "s3cret-Token_42 ü"


@pytest.fixture(autouse=True)
def no_registered_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Secrets registered by other tests of this process (a configured password) stay out."""
    monkeypatch.setattr(redaction, "_known", set())


def readable(text: str) -> list[str]:
    """``text`` as each decoding layer would show it."""
    forms = [text, unquote_plus(text)]
    with contextlib.suppress(json.JSONDecodeError):
        forms.append(json.loads(f'"{text}"'))
    return forms


@pytest.mark.parametrize(
    "written",
    [
        SECRET,
        quote(SECRET, safe=""),  # every unsafe character escaped
        re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), quote(SECRET, safe="")),
        "".join(f"%{byte:02X}" for byte in SECRET.encode()),  # every character escaped
        quote(SECRET, safe="").replace("%20", "+"),  # a form-encoded space
        json.dumps(SECRET, ensure_ascii=True)[1:-1],  # \u00fc
        "".join(f"\\u{ord(char):04x}" for char in SECRET),  # JSON with every character escaped
    ],
    ids=["plain", "percent", "percent-lower", "percent-all", "plus", "json", "json-all"],
)
def test_a_registered_secret_is_masked_in_every_encoding(written: str) -> None:
    text = f'GET /graphql?q={written}&x=1 HTTP/1.1 "{written}"'

    redacted = redact(text, [SECRET])

    assert MASK in redacted
    assert all(SECRET not in form for form in readable(redacted))


def test_secrets_registered_once_are_masked_everywhere_after() -> None:
    register_secrets("registered-secret-0b7e", None, "")

    assert redact("x registered%2Dsecret-0b7e y") == f"x {MASK} y"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("GET /graphql?token=abc%2Ddef HTTP/1.1", "GET /graphql?token=*** HTTP/1.1"),
        ("/x?a=1&access_token=zz&b=2", "/x?a=1&access_token=***&b=2"),
        ("/x?password=p#frag", "/x?password=***#frag"),
        ("Authorization: Bearer abc.def-1", "Authorization: Bearer ***"),
        ("Given URI: 'bolt://neo4j:pa55@db:7687'", "Given URI: 'bolt://neo4j:***@db:7687'"),
        ("neo4j+s://u:p%40ss@host/x", "neo4j+s://u:***@host/x"),
        ("https://example.org/a?b=c", "https://example.org/a?b=c"),
        ("mail user@example.org", "mail user@example.org"),
    ],
)
def test_credentials_are_masked_whoever_they_belong_to(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_server_paths_are_hidden_only_when_asked(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    text = f"could not append to {data_dir}/graph/log.00000000.jsonl; see {Path.home()}/x"

    hidden = redact(text, paths=server_paths(data_dir))

    assert hidden == "could not append to <dataDir>/graph/log.00000000.jsonl; see ~/x"
    assert redact(text) == text  # logs keep them: the operator needs the file


@dataclass
class Request:
    query: str | None
    variables: dict[str, Any] | None = field(default_factory=dict)


@pytest.mark.parametrize(
    ("document", "secret"),
    [
        ('{ x(input: {neo4jPassword: "plain-secret-1"}) }', "plain-secret-1"),
        ('{ x(input: {neo4jPassword: """block-secret-2"""}) }', "block-secret-2"),
        ('{ x(input: {neo4jPassword: """\n  indented-secret-3\n"""}) }', "indented-secret-3"),
        ('{ x(input: {neo4jPassword: "\\u0065scaped-secret-4"}) }', "escaped-secret-4"),
        ('{ x(input: {neo4jPassword: "\\u0065scaped-secret-4"}) }', "\\u0065scaped-secret-4"),
        ("{ x(input: {neo4jPassword: 98765432}) }", "98765432"),
        ('{ x(input: {neo4jPassword: ["listed-secret-5"]}) }', "listed-secret-5"),
        ('{ x(input: {neo4jPassword: {a: "nested-secret-6"}}) }', "nested-secret-6"),
        ('{ x(input: {neo4jPassword: "unterminated-secret-7 }', "unterminated-secret-7"),
        ('{ x(input: {neo4jPassword: "bad-escape-\\u12-secret"}) }', "bad-escape-"),
    ],
    ids=[
        "string",
        "block",
        "block-indented",
        "escape-decoded",
        "escape-written",
        "int",
        "list",
        "object",
        "unterminated",
        "bad-escape",
    ],
)
def test_a_password_in_the_document_is_found_in_any_form(document: str, secret: str) -> None:
    found = request_secrets(Request(document))

    assert any(secret in value for value in found)


@pytest.mark.parametrize(
    "value",
    [12345678, 1234.5678, ["list-secret-8"], {"k": "dict-secret-9"}, True],
    ids=["int", "float", "list", "dict", "bool"],
)
def test_a_password_variable_of_a_wrong_type_is_found(value: Any) -> None:
    request = Request("mutation($i: In!) { x(input: $i) }", {"i": {"neo4jPassword": value}})
    printed = f"got invalid value {value!r}; {json.dumps(value)}"

    redacted = redact(printed, request_secrets(request))

    leaves = [str(v) for v in (value.values() if isinstance(value, dict) else [value])]
    leaves = [leaf for leaf in leaves if len(leaf) >= 4 and leaf not in ("True", "true")]
    assert all(leaf.strip("[]'") not in redacted for leaf in leaves)


def test_a_variable_named_like_the_field_does_not_make_its_type_a_secret() -> None:
    request = Request('mutation($neo4jPassword: String) { x(input: {neo4jPassword: "pw-01"}) }')

    found = request_secrets(request)

    assert "String" not in found
    assert "pw-01" in found


def test_a_secret_with_a_lone_surrogate_is_masked_without_failing() -> None:
    assert redact("pw=\ud800xyz here", ["\ud800xyz"]) == f"pw={MASK} here"


def test_a_secret_too_short_to_mask_leaves_other_text_alone() -> None:
    register_secrets("p")

    assert redact("Unexpected error.") == "Unexpected error."


@pytest.mark.parametrize("secret_field", [False, True])
def test_a_long_document_is_lexed_for_secrets_a_bounded_number_of_tokens(
    monkeypatch: pytest.MonkeyPatch, secret_field: bool
) -> None:
    # A body of 200,000 tokens: none is lexed when no secret field is named; with one named
    # after them, the lexer gives up at LEXED_TOKENS and the text still gives the secret up.
    tail = ' x(input: {neo4jPassword: "late-secret-7"})' if secret_field else ""
    document = "{ a " + "b " * 200_000 + tail + " }"
    advanced = 0
    advance = Lexer.advance

    def counted(lexer: Any) -> Any:
        nonlocal advanced
        advanced += 1
        return advance(lexer)

    monkeypatch.setattr(Lexer, "advance", counted)
    found = request_secrets(Request(document))

    assert advanced <= redaction.LEXED_TOKENS
    assert advanced > 0 if secret_field else advanced == 0
    assert ("late-secret-7" in " ".join(found)) == secret_field
