"""``science-memory mcp``: the agent's tools over stdio (Model Context Protocol)."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from gateway.settings import Settings


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="serve the agent's tools over MCP on stdin/stdout",
        description="Serve query_graph, declare_evidence, declare_claim, recall and lessons "
        "(or, for the reviewer, trace_provenance instead of the declares) over the Model "
        "Context Protocol on stdin/stdout, on the data directory's store. A running gateway "
        "holds that store: connect the MCP client to its /mcp endpoint instead.",
    )
    mcp.add_argument(
        "--role",
        choices=["agent", "reviewer"],
        default="agent",
        help="agent: the research agent's tools (default); reviewer: adds trace_provenance "
        "and leaves out the declares",
    )
    mcp.set_defaults(handler=mcp_command)


def mcp_command(args: argparse.Namespace, settings: Settings) -> int:
    # Imported here: the other commands start without the MCP SDK.
    from gateway.mcp.server import serve_stdio
    from gateway.mcp.tools import Role
    from gateway.observability.logs import configure_logging
    from gateway.stores.file.log import StoreLockedError
    from gateway.stores.file.memory import MemoryStoreLockedError

    configure_logging(settings)  # logs go to stderr: stdout carries the protocol
    try:
        asyncio.run(serve_stdio(settings, Role(args.role)))
    except (StoreLockedError, MemoryStoreLockedError) as exc:
        print(
            f"science-memory: {exc}; while a gateway serves this data directory, point the MCP "
            f"client at its /mcp endpoint (http://{settings.host}:{settings.port}/mcp)",
            file=sys.stderr,
        )
        return 1
    return 0
