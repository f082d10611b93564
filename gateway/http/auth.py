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
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

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
