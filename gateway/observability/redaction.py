"""Redaction: the one place that decides what of a text may leave the process (SPEC §8).

``redact(text, secrets, paths=...)`` is called for every log record
(``gateway.observability.logs``), every error answered to a client (``gateway.schema.errors``),
every GraphQL error logged (``gateway.schema.federation``), the Neo4j adapter's error
details and ``/health``'s reason.
It masks, by ``***``:

* every secret passed in and every one registered with ``register_secrets`` (the configured
  tokens and password, a password set by ``configureMemoryGraph``), in each form it may be
  written in: as is, percent-encoded (any mix of escaped and plain characters, ``+`` for a
  space, hex digits in either case) as in a query string of the access log, and escaped as in
  JSON or a GraphQL string (``\\"``, ``\\\\``, ``\\uXXXX``);
* any ``Bearer <credential>``;
* the value of a credential-like query or form parameter (``token=``, ``access_token=``,
  ``password=``, ``secret=``, ``api_key=`` …), whoever's it is;
* the password of a URI's user-info: ``bolt://user:pass@host`` becomes ``bolt://user:***@host``.

With ``paths`` (a mapping of server directories to the placeholder shown instead, see
``server_paths``), absolute paths under those directories lose their prefix: a client learns
``<dataDir>/graph/log.00000000.jsonl``, never where the server keeps its files. Logs keep paths:
the operator needs them.

Request secrets — what a GraphQL request carries in a secret field (``neo4jPassword``), in any
form the field may be given: a string, a block string, with escapes, or a value of a wrong type
— are found by ``request_secrets``.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from graphql import GraphQLError, GraphQLSyntaxError, Lexer, Source, TokenKind

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from graphql import Token

__all__ = [
    "MASK",
    "SECRET_FIELDS",
    "redact",
    "redact_error",
    "register_secrets",
    "request_secrets",
    "server_paths",
]

MASK = "***"
# A shorter value is not masked where it stands in text: masking a one-letter password would
# garble every message, and no text can be kept free of it anyway (Neo4j asks for 8 or more).
MIN_SECRET_LENGTH = 4
SECRET_FIELDS = frozenset({"neo4jPassword"})
# A wrong-typed secret's scalar parts shorter than this are left alone: masking every "1" or
# "true" in a message would garble it, and so short a value protects nothing.
MIN_SCALAR_SECRET = 4
# Tokens a document's secrets are looked for in by the lexer (twice the parser's limit).
LEXED_TOKENS = 8_000

_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
_CREDENTIAL_PARAMETER = re.compile(
    r"(?i)([?&;](?:access_?token|api_?key|auth(?:orization)?|bearer|pass(?:wd|word)?|"
    r"secret|token)=)[^&#\s\"']+"
)
_USER_INFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@\"']*):[^/\s@\"']*@")
_known: set[str] = set()


class _Request(Protocol):
    """What of a request holds its secrets (strawberry's ``ExecutionContext`` has both)."""

    @property
    def query(self) -> str | None: ...

    @property
    def variables(self) -> dict[str, Any] | None: ...


def register_secrets(*secrets: str | None) -> None:
    """Mask these in every later ``redact`` (empty values are ignored)."""
    _known.update(secret for secret in secrets if secret)


def redact(
    text: str, secrets: Iterable[str] = (), *, paths: Mapping[str, str] | None = None
) -> str:
    """``text`` with every secret, credential and (with ``paths``) server path masked."""
    pattern = _secrets_pattern(frozenset(_known.union(secrets)))
    if pattern is not None:
        text = pattern.sub(MASK, text)
    text = _BEARER.sub(lambda match: match.group(1) + MASK, text)
    text = _CREDENTIAL_PARAMETER.sub(lambda match: match.group(1) + MASK, text)
    text = _USER_INFO.sub(lambda match: f"{match.group(1)}:{MASK}@", text)
    if paths:
        text = _paths_pattern(tuple(paths.items())).sub(lambda m: paths[m.group(1)], text)
    return text


def redact_error(
    error: GraphQLError, secrets: Iterable[str], *, paths: Mapping[str, str] | None = None
) -> GraphQLError:
    """``error`` with its message redacted (the same error when nothing changes)."""
    message = redact(error.message, secrets, paths=paths)
    if message == error.message:
        return error
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=error.original_error,
        extensions=error.extensions,
    )


def server_paths(data_dir: Path | None = None) -> dict[str, str]:
    """Directories of this server a client must not learn, each with its placeholder."""
    roots = {
        str(Path(__file__).resolve().parents[2]): "<server>",
        sys.prefix: "<python>",
        str(Path.home()): "~",
    }
    if data_dir is not None:
        roots[str(data_dir)] = "<dataDir>"
        roots[str(data_dir.resolve())] = "<dataDir>"
    return {root: placeholder for root, placeholder in roots.items() if len(root) > 1}


def request_secrets(context: _Request | None) -> set[str]:
    """Every secret a request carries, in its document or its variables, in each form."""
    if context is None:
        return set()
    found = set(_document_secrets(context.query or ""))
    found.update(_variable_secrets(context.variables))
    return {secret for secret in found if secret}


def _document_secrets(document: str) -> Iterator[str]:
    """The values of secret fields in a document, as written and as parsed. The lexer alone
    is used, so a document that does not parse still has its secrets found (up to the error).
    A document naming no secret field holds none (one pass of ``in``, however long it is); one
    the lexer would take more than ``LEXED_TOKENS`` tokens to read is searched as text, like
    one that does not lex (the parser refuses it anyway: ``Limits.max_tokens``)."""
    if not any(field in document for field in SECRET_FIELDS):
        return
    advance = _counted(Lexer(Source(document)))
    previous: TokenKind | None = None
    name = ""  # the last token's value when it is a field name (not a ``$variable``)
    try:
        token = advance()
        while token.kind is not TokenKind.EOF:
            if token.kind is TokenKind.COLON and name in SECRET_FIELDS:
                yield from _value_tokens(advance, document)
            is_field = token.kind is TokenKind.NAME and previous is not TokenKind.DOLLAR
            name = (token.value or "") if is_field else ""
            previous = token.kind
            token = advance()
        return
    except (GraphQLSyntaxError, _GaveUpError):
        pass
    # The lexer stopped inside or before a secret, or gave up: what follows a secret field on
    # its line is secret, and so is each piece of it (a syntax error may quote a piece).
    fields = "|".join(SECRET_FIELDS)
    for match in re.finditer(r"\b(?:" + fields + r")\s*:\s*(.+)", document):
        rest = match.group(1).strip()
        yield rest
        yield from (p for p in re.split(r'[\s"\\,]+', rest) if len(p) >= MIN_SCALAR_SECRET)


class _GaveUpError(Exception):
    """The lexer read ``LEXED_TOKENS`` tokens."""


def _counted(lexer: Lexer) -> Callable[[], Token]:
    """``lexer.advance``, raising ``_GaveUpError`` past ``LEXED_TOKENS`` tokens."""
    read = 0

    def advance() -> Token:
        nonlocal read
        read += 1
        if read > LEXED_TOKENS:
            raise _GaveUpError
        return lexer.advance()

    return advance


def _value_tokens(advance: Callable[[], Token], document: str) -> Iterator[str]:
    """The literal after a secret field's colon: one token, or a whole list or object."""
    depth = 0
    while True:
        token = advance()
        if token.kind in (TokenKind.BRACKET_L, TokenKind.BRACE_L):
            depth += 1
        elif token.kind in (TokenKind.BRACKET_R, TokenKind.BRACE_R):
            depth -= 1
        elif token.kind in (TokenKind.STRING, TokenKind.BLOCK_STRING):
            yield from _forms(token.value or "")
            yield document[token.start : token.end].strip('"')  # as written, escapes and all
        elif token.kind in (TokenKind.INT, TokenKind.FLOAT, TokenKind.NAME):
            if len(token.value or "") >= MIN_SCALAR_SECRET:
                yield token.value or ""
        elif token.kind is TokenKind.EOF:
            return
        if depth <= 0:
            return


def _variable_secrets(value: Any, secret: bool = False) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _variable_secrets(item, secret or key in SECRET_FIELDS)
    elif isinstance(value, list | tuple):
        if secret:
            yield repr(value)
        for item in value:
            yield from _variable_secrets(item, secret)
    elif secret and isinstance(value, str):
        yield from _forms(value)
    elif secret and value is not None and len(str(value)) >= MIN_SCALAR_SECRET:
        yield str(value)


def _forms(secret: str) -> Iterator[str]:
    """The secret and the ways a message may print it (``repr`` of Python, JSON, GraphQL)."""
    yield secret
    yield repr(secret)[1:-1]
    escaped = secret.replace("\\", "\\\\").replace('"', '\\"')
    yield escaped


@functools.lru_cache(maxsize=64)
def _secrets_pattern(secrets: frozenset[str]) -> re.Pattern[str] | None:
    # Longest first, so that a secret containing another is masked whole.
    kept = (secret for secret in secrets if len(secret) >= MIN_SECRET_LENGTH)
    alternatives = [_any_encoding(secret) for secret in sorted(kept, key=len, reverse=True)]
    return re.compile("|".join(alternatives)) if alternatives else None


def _any_encoding(secret: str) -> str:
    """A pattern matching ``secret`` with any of its characters written plainly,
    percent-encoded or escaped as in JSON (``\\u00XX``)."""
    return "".join(_char_pattern(char) for char in secret)


def _char_pattern(char: str) -> str:
    forms = [re.escape(char)]
    # ``surrogatepass``: a value may hold a lone surrogate (a JSON ``\ud800``).
    forms.append("".join(f"%{_hex(byte)}" for byte in char.encode("utf-8", "surrogatepass")))
    if ord(char) <= 0xFFFF:
        forms.append(r"\\u" + "".join(_hex_digit(d) for d in f"{ord(char):04x}"))
    if char == " ":
        forms.append(r"\+")
    return "(?:" + "|".join(forms) + ")"


def _hex(byte: int) -> str:
    return "".join(_hex_digit(d) for d in f"{byte:02x}")


def _hex_digit(digit: str) -> str:
    return f"[{digit}{digit.upper()}]" if digit.isalpha() else digit


@functools.lru_cache(maxsize=16)
def _paths_pattern(roots: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    # Longest first: the data directory wins over the home directory that holds it.
    ordered = sorted((root for root, _ in roots), key=len, reverse=True)
    return re.compile("(" + "|".join(re.escape(root) for root in ordered) + r")(?=/|\b|$)")
