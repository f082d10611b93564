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
import json
import logging
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from gateway.mcp.tools import Caller, Role, call_tool, offered
from gateway.runtime.state import Runtime, package_version
from resolvers.errors import InvalidInputError
from resolvers.validate import check_unicode

if TYPE_CHECKING:
    from collections.abc import AsyncIterable, AsyncIterator, Callable

    from anyio.streams.memory import MemoryObjectSendStream
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
            readable, sifted = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(_answer_unreadable, read_stream, readable, write_stream)
                await server.run(sifted, write_stream, server.create_initialization_options())
    finally:
        await runtime.aclose()


async def _answer_unreadable(
    lines: AsyncIterable[SessionMessage | Exception],
    readable: MemoryObjectSendStream[SessionMessage | Exception],
    answers: Any,
) -> None:
    """Hand the server the lines that are JSON-RPC messages; answer each other line with a
    JSON-RPC error at once (the SDK's stdio transport passes it on as an exception, which the
    server only logs, so a client would wait for its answer for ever): ``-32700`` for a line
    that is not JSON the SDK reads (a lone surrogate included), ``-32600`` for JSON that is no
    message (a batch array), with the request's ``id`` when the line has a usable one."""
    async with readable:
        async for line in lines:
            if not isinstance(line, Exception):
                await readable.send(line)
                continue
            logger.info("unreadable line on stdin: %s", line)
            await answers.send(SessionMessage(_unreadable(line)))


def _unreadable(exc: Exception) -> types.JSONRPCError:
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    parse = any(error["type"] == "json_invalid" for error in errors)
    sent = errors[0].get("input") if errors else None
    request_id = None
    with contextlib.suppress(ValueError, TypeError, RecursionError):
        text = json.loads(sent) if isinstance(sent, str) else sent
        if isinstance(text, dict) and type(text.get("id")) in {str, int}:  # no bool
            request_id = text["id"]
    if isinstance(request_id, str):
        try:
            check_unicode(request_id, "id")
        except InvalidInputError:
            request_id = None  # a lone surrogate: no answer could carry it
    code, message = (
        (types.PARSE_ERROR, "Parse error: the line is not JSON this server reads")
        if parse
        else (types.INVALID_REQUEST, "Invalid request: the line is not a JSON-RPC message")
    )
    error = types.ErrorData(code=code, message=message)
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


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
            # No transport security of the SDK's own: without a token the gateway's
            # ``LoopbackOnly`` checks Host and Origin on every path, this one included.
            max_request_body_size=settings.max_body_bytes,
        )
        self.app: ASGIApp = StreamableHTTPASGIApp(self.manager)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield
