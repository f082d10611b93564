"""Who may do what (SPEC §8): bearer tokens as Starlette authentication with scopes.

``Access`` decides what a presented token grants: the internal token ``write`` (everything),
the read token ``read`` (queries only), the reviewer token ``review`` (queries, and the
reviewer's tools on ``/mcp``). Tokens are compared in constant time. With no internal token
configured the gateway serves loopback only and every caller may write.

``TokenAuthentication`` is the Starlette ``AuthenticationBackend``: every HTTP request and
WebSocket handshake gets ``request.auth.scopes`` and ``request.user`` (whose name is the
grant). It never refuses by itself — ``/health`` stays open — the guarded endpoints are
wrapped in ``RequireToken``, which answers the one 401 response. A browser's GET of the
GraphiQL page passes without a token (``playground=True``): the page is static. A WebSocket
carries its token in ``connection_init``, checked by the GraphQL app's ``on_ws_connect``.

``LoopbackOnly``: with no token, the gateway serves loopback only, and a request must name a
loopback host too. A browser page of another site whose DNS name was rebound to 127.0.0.1
sends its own name as ``Host`` (421, ``MISDIRECTED_REQUEST``); a page of another site that
posts to 127.0.0.1 sends its ``Origin`` (403, ``FORBIDDEN``; a WebSocket is closed with 4403),
unless that is a loopback page or one of the configured CORS origins. The rule holds on every
path, ``/mcp`` included (the MCP SDK's own check, stricter about case and ports, is off).
"""

from __future__ import annotations

import hmac
import re
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.datastructures import Headers

from gateway.http.graphql import accept_of, coded_error

if TYPE_CHECKING:
    from starlette.authentication import BaseUser
    from starlette.requests import HTTPConnection
    from starlette.responses import Response
    from starlette.types import ASGIApp, Receive, Scope, Send

    from gateway.settings import Settings

READ, WRITE, REVIEW = "read", "write", "review"
SCOPES = {WRITE: [READ, WRITE], READ: [READ], REVIEW: [READ, REVIEW]}
"""The scopes of each grant: who may write may read; the reviewer reads."""


class Access:
    """Decides what a presented token may do."""

    def __init__(self, settings: Settings) -> None:
        self._open = settings.internal_token is None
        self._tokens = [
            (grant, token.encode())
            for grant, token in (
                (WRITE, settings.internal_token),
                (READ, settings.read_token),
                (REVIEW, settings.reviewer_token),
            )
            if token is not None
        ]

    @property
    def open(self) -> bool:
        return self._open

    def grant(self, authorization: str | None) -> str | None:
        """``WRITE``, ``READ``, ``REVIEW`` or ``None`` (refused) for an ``Authorization``
        value."""
        if self.open:
            return WRITE
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        supplied = token.strip().encode()
        for grant, expected in self._tokens:
            if hmac.compare_digest(supplied, expected):
                return grant
        return None


class TokenAuthentication(AuthenticationBackend):
    """The bearer token of a request as its scopes; none (unauthenticated) when refused."""

    def __init__(self, access: Access) -> None:
        self._access = access

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        # Two ``Authorization`` headers present no token: which one counted would depend on
        # their order.
        presented = conn.headers.getlist("authorization")
        grant = self._access.grant(presented[0] if len(presented) == 1 else None)
        if grant is None:
            return None
        return AuthCredentials(SCOPES[grant]), SimpleUser(grant)


def grant_of(scope: Scope) -> str | None:
    """The grant ``TokenAuthentication`` gave this request; ``None`` when unauthenticated."""
    user = scope.get("user")
    return user.display_name if user is not None and user.is_authenticated else None


def unauthorised(scope: Scope) -> Response:
    return coded_error(
        401,
        "invalid or missing bearer token",
        "UNAUTHENTICATED",
        accept_of(Headers(scope=scope)),
        {"WWW-Authenticate": 'Bearer realm="science-memory"'},
    )


class RequireToken:
    """ASGI wrapper: an HTTP request reaches ``app`` only when authenticated (or, with
    ``playground``, when it is a browser's GET of the GraphiQL page)."""

    def __init__(self, app: ASGIApp, *, playground: bool = False) -> None:
        self._app = app
        self._playground = playground

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or grant_of(scope) is not None
            or (self._playground and _is_playground(scope))
        ):
            await self._app(scope, receive, send)
            return
        await unauthorised(scope)(scope, receive, send)


def _is_playground(scope: Scope) -> bool:
    # ?q= and ?variables= carry the playground's document; a GET with ?query= is a request.
    parameters = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    if scope["method"] != "GET" or "query" in parameters:
        return False
    accept = dict(scope["headers"]).get(b"accept", b"")
    return b"text/html" in accept


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})


# A Host value: a name, an IPv4 address or a bracketed IPv6 one, then perhaps ``:<port>``.
_HOST = re.compile(r"(\[[^\]]*\]|[^:\[\]]*)(?::(\d{1,5}))?")


def _loopback_host(value: str) -> bool:
    """Whether a ``Host`` value names a loopback host (and nothing else: a port of digits
    at most)."""
    found = _HOST.fullmatch(value.strip().lower())
    return found is not None and found.group(1) in LOOPBACK_NAMES


def loopback_origin(value: str) -> bool:
    """Whether an ``Origin`` value is a page on a loopback host: a scheme and a host, no more."""
    try:
        parts = urlsplit(value.strip())
        bare = not (parts.path or parts.query or parts.fragment or "@" in parts.netloc)
        return parts.scheme in {"http", "https"} and bare and _loopback_host(parts.netloc)
    except ValueError:
        return False


class LoopbackOnly:
    """ASGI middleware (used with no token configured): an HTTP request or WebSocket whose
    ``Host`` is not a loopback name, or whose ``Origin`` (when sent) is not a loopback page,
    is refused before anything else sees it; ``origins`` (the configured CORS origins) are
    let through too."""

    def __init__(self, app: ASGIApp, origins: tuple[str, ...] = ()) -> None:
        self._app = app
        self._origins = frozenset(origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in {"http", "websocket"}:
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if not _loopback_host(headers.get("host", "")):
            status, message, code = (
                421,
                "the Host header is not a loopback name",
                "MISDIRECTED_REQUEST",
            )
        elif origin is not None and origin not in self._origins and not loopback_origin(origin):
            status, message, code = 403, "requests from this origin are refused", "FORBIDDEN"
        else:
            await self._app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4403, "reason": message})
            return
        await coded_error(status, message, code, accept_of(headers))(scope, receive, send)
