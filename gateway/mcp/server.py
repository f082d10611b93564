"""The MCP server over stdio and over streamable HTTP.

One low-level SDK ``Server`` lists and calls the tools of ``gateway.mcp.tools``; who is calling
(``Caller``) comes from a function of the request: fixed for stdio (``science-memory mcp
--role``), the bearer token's grant over HTTP. The HTTP endpoint is stateless (every POST is
answered on its own, so gateway replicas behind a load balancer need no sticky sessions) and
is guarded by the gateway's ``BearerAuth``: ``write`` → the agent with its declares, ``read`` →
the agent's read-only tools, ``review`` → the reviewer.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from gateway.mcp.tools import Caller, Role, call_tool, offered
from gateway.runtime.state import Runtime, package_version

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from mcp.server import ServerRequestContext
    from starlette.types import ASGIApp, Scope

    from gateway.settings import Settings

logger = logging.getLogger(__name__)

NAME = "science-memory"
INSTRUCTIONS = (
    "ScienceMemory records each research session as a provenance graph: the goal, every step "
    "and the code it ran, the files produced, the papers found, and the evidence and claims "
    "behind the report. Use query_graph to look things up, declare_evidence and declare_claim "
    "(silently) to cite, recall and lessons to learn from earlier sessions."
)
REVIEWER_INSTRUCTIONS = (
    "ScienceMemory records each research session as a provenance graph. As the reviewer, use "
    "trace_provenance on every artifact or claim you review, and query_graph to read around it."
)

# The grants of gateway.http.auth.Access, as callers of the tools.
GRANT_CALLERS = {
    "write": Caller(Role.AGENT, can_write=True),
    "read": Caller(Role.AGENT, can_write=False),
    "review": Caller(Role.REVIEWER, can_write=False),
}


def build_server(
    runtime_of: Callable[[], Runtime],
    caller_of: Callable[[ServerRequestContext[Any, Any]], Caller],
    *,
    instructions: str = INSTRUCTIONS,
) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[spec.to_mcp() for spec in offered(caller_of(ctx))])

    async def call(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await call_tool(runtime_of(), caller_of(ctx), params.name, params.arguments)

    return Server(
        NAME,
        version=package_version(),
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call,
    )


# --- stdio -----------------------------------------------------------------------------------


async def serve_stdio(settings: Settings, role: Role) -> None:
    """Serve the tools over this process's stdin/stdout, on its own runtime (the data
    directory's store is opened here: a gateway running on it holds its lock)."""
    caller = Caller(role, can_write=role is Role.AGENT)
    runtime = await Runtime.start(settings)
    try:
        server = build_server(
            lambda: runtime,
            lambda ctx: caller,
            instructions=REVIEWER_INSTRUCTIONS if role is Role.REVIEWER else INSTRUCTIONS,
        )
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await runtime.aclose()


# --- streamable HTTP -------------------------------------------------------------------------


class HttpEndpoint:
    """``/mcp`` on the gateway: the ASGI app and the session manager its lifespan runs."""

    def __init__(
        self,
        settings: Settings,
        runtime_of: Callable[[], Runtime],
        grant_of: Callable[[Scope], str | None],
    ) -> None:
        """``grant_of``: what the HTTP app's authentication granted a request (``read``,
        ``write``, ``review``), which decides the caller of the tools."""

        def caller_of_request(ctx: ServerRequestContext[Any, Any]) -> Caller:
            grant = grant_of(ctx.request.scope) if ctx.request is not None else None
            return GRANT_CALLERS.get(str(grant), GRANT_CALLERS["read"])

        server = build_server(runtime_of, caller_of_request)
        self.manager = StreamableHTTPSessionManager(
            app=server,
            stateless=True,
            json_response=True,
            security_settings=_security(settings),
            max_request_body_size=settings.max_body_bytes,
        )
        self.app: ASGIApp = StreamableHTTPASGIApp(self.manager)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield


def _security(settings: Settings) -> TransportSecuritySettings | None:
    """Without a token the gateway serves loopback only; then a browser page of another
    origin must not reach the tools through a rebound DNS name either."""
    if not settings.loopback_only:
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
