"""The HTTP app: ``GET /health``, ``GET/POST /graphql`` (GraphiQL in a browser), ``WS /graphql``.

Authentication (SPEC §8): ``/graphql`` needs ``Authorization: Bearer <token>`` when a token is
configured — the internal token may do everything, the read token may only query. Tokens are
compared in constant time. The GraphiQL page itself is static and served without a token.
"""

from __future__ import annotations

import hmac
import logging
import uuid
from contextlib import asynccontextmanager
from typing import Any, TYPE_CHECKING

from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError

from gateway.playground import playground_html
from gateway.runtime import Runtime
from gateway.schema import Limits, build_schema
from gateway.schema.context import GraphContext
from gateway.settings import Settings, load_settings

if TYPE_CHECKING:
    from starlette.requests import Request
    from strawberry.types.unset import UnsetType
    from starlette.types import ASGIApp, Receive, Scope, Send
    from starlette.websockets import WebSocket
    from collections.abc import AsyncIterator

logger = logging.getLogger(__name__)

READ, WRITE = "read", "write"


class Access:
    """Decides what a presented token may do."""

    def __init__(self, settings: Settings) -> None:
        self._write = settings.internal_token
        self._read = settings.read_token

    @property
    def open(self) -> bool:
        return self._write is None

    def grant(self, authorization: str | None) -> str | None:
        """``WRITE``, ``READ`` or ``None`` (refused) for an ``Authorization`` value."""
        if self.open:
            return WRITE
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        supplied = token.strip().encode()
        if self._write is not None and hmac.compare_digest(supplied, self._write.encode()):
            return WRITE
        if self._read is not None and hmac.compare_digest(supplied, self._read.encode()):
            return READ
        return None


class GatewayGraphQL(GraphQL[GraphContext, None]):
    """Strawberry's ASGI app with our context, auth and playground."""

    def __init__(self, access: Access, **kwargs: Any) -> None:
        super().__init__(build_schema(kwargs.pop("limits", None)), **kwargs)
        self._access = access

    @property
    def graphql_ide_html(self) -> str:
        return playground_html(super().graphql_ide_html)

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> GraphContext:
        grant = request.scope.get("state", {}).get("grant", WRITE)
        request_id = request.headers.get("x-request-id") or uuid.uuid4().hex
        return GraphContext(
            runtime=request.app.state.runtime, can_write=grant == WRITE, request_id=request_id[:64]
        )

    async def on_ws_connect(self, context: GraphContext) -> UnsetType | dict[str, object] | None:
        payload = getattr(context, "connection_params", None) or {}
        authorization = payload.get("Authorization") or payload.get("authorization")
        if self._access.grant(str(authorization) if authorization else None) is None:
            raise ConnectionRejectionError({"reason": "invalid token"})
        return await super().on_ws_connect(context)


class BearerAuth:
    """ASGI middleware guarding ``/graphql`` over HTTP; the grant goes into ``scope['state']``."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self._app = app
        self._access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _is_playground(scope):
            await self._app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        raw = headers.get(b"authorization")
        grant = self._access.grant(raw.decode("latin-1") if raw else None)
        if grant is None:
            response = JSONResponse(
                {"errors": [{"message": "invalid or missing bearer token"}]},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="science-memory"'},
            )
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})["grant"] = grant
        await self._app(scope, receive, send)


def _is_playground(scope: Scope) -> bool:
    if scope["method"] != "GET" or scope.get("query_string"):
        return False
    accept = dict(scope["headers"]).get(b"accept", b"")
    return b"text/html" in accept


async def health(request: Request) -> JSONResponse:
    runtime: Runtime = request.app.state.runtime
    report = await runtime.health()
    return JSONResponse(report.as_json())


def create_app(settings: Settings | None = None, limits: Limits | None = None) -> Starlette:
    settings = settings or load_settings()
    access = Access(settings)
    graphql = GatewayGraphQL(access, limits=limits)
    guarded = BearerAuth(graphql, access)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.runtime = await Runtime.start(settings)
        try:
            yield
        finally:
            await app.state.runtime.aclose()

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/graphql", guarded, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
        ],
        lifespan=lifespan,
    )
