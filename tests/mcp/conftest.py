"""An MCP client (the SDK's own) connected in-process to the tools over the test's runtime."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from mcp import Client

from gateway.mcp.server import build_server
from gateway.mcp.tools import Caller, Role

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import mcp_types

    from gateway.runtime.state import Runtime

AGENT = Caller(Role.AGENT, can_write=True)
REVIEWER = Caller(Role.REVIEWER, can_write=False)


@contextlib.asynccontextmanager
async def connected(runtime: Runtime, caller: Caller = AGENT) -> AsyncIterator[Client]:
    async with Client(build_server(lambda: runtime, lambda ctx: caller)) as client:
        yield client


def answer(result: mcp_types.CallToolResult) -> dict[str, Any]:
    """The structured answer of a successful call (fails the test on a tool error)."""
    assert not result.is_error, result.structured_content
    structured: dict[str, Any] | None = result.structured_content
    assert structured is not None
    return structured


def failure(result: mcp_types.CallToolResult) -> dict[str, Any]:
    """The ``error`` object of a tool error (fails the test on success)."""
    assert result.is_error, result.structured_content
    assert result.structured_content is not None
    error = result.structured_content["error"]
    assert isinstance(error, dict)
    return error
