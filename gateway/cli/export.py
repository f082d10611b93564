"""``science-memory export``: one session as PROV-JSON, PROV-JSON-LD, GraphML or Mermaid.

The file store takes a single-writer lock, so the command cannot read the data directory while
a gateway serves it; it then says so and exits 1 (the running gateway answers the same export
through the ``exportSession`` GraphQL field). ``--backend neo4j`` reads the Neo4j configured in
the environment instead (no lock involved).
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.exports.formats import ExportFormat, SessionRecords, export_session, load_session
from gateway.stores import graph_directory, open_graph_store
from resolvers.errors import DomainError
from resolvers.records import Backend

if TYPE_CHECKING:
    import argparse

    from gateway.settings import Settings
    from resolvers.store import GraphReader

GRAPHQL_HINT = (
    "query { exportSession(sessionId: %s, format: %s) "
    "{ ... on SessionExport { content } ... on Error { message } } }"
)


class ExportError(Exception):
    """The export could not be made; the message is for the user."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``export`` subcommand."""
    export = subparsers.add_parser(
        "export", help="export a session as PROV-JSON, PROV-JSON-LD, GraphML or Mermaid"
    )
    export.add_argument("--session", required=True, help="the session id")
    export.add_argument(
        "--format", required=True, choices=[f.value for f in ExportFormat], help="output format"
    )
    export.add_argument("--output", type=Path, help="file to write (default: stdout)")
    export.add_argument(
        "--backend",
        choices=[b.value for b in Backend],
        help="store to read (default: SCIENCE_AGENT_MEMORY_GRAPH_BACKEND)",
    )
    export.set_defaults(handler=export_command)


def export_command(args: argparse.Namespace, settings: Settings) -> int:
    export_format = ExportFormat(args.format)
    backend = Backend(args.backend) if args.backend else settings.backend
    try:
        records = asyncio.run(_load(settings, backend, args.session, export_format))
    except ExportError as exc:
        print(f"science-memory: {exc}", file=sys.stderr)
        return 1
    content = export_session(records, export_format).content
    if args.output is None:
        sys.stdout.write(content)
    else:
        args.output.write_text(content, encoding="utf-8")
        print(f"wrote {args.output} ({len(records.nodes)} nodes, {len(records.edges)} edges)")
    return 0


async def _load(
    settings: Settings, backend: Backend, session_id: str, export_format: ExportFormat
) -> SessionRecords:
    if backend is Backend.NEO4J:
        return await _load_neo4j(settings, session_id)
    from gateway.stores.embedded import stored_engine
    from gateway.stores.file.log import StoreLockedError

    directory = graph_directory(settings)
    if not directory.is_dir():
        raise ExportError(f"no file store in {directory} (set SCIENCE_AGENT_MEMORY_GRAPH_DATA_DIR)")
    # Read by the engine whose files hold the graph (an export migrates nothing).
    engine = stored_engine(directory) or settings.file_engine
    try:
        store = await open_graph_store(replace(settings, file_engine=engine), Backend.FILE)
    except StoreLockedError as exc:
        graphql = GRAPHQL_HINT % (json.dumps(session_id), export_format.name)
        raise ExportError(
            f"{exc}.\nA running gateway holds the file store; ask it instead, e.g. "
            f"POST /graphql {graphql}"
        ) from exc
    try:
        return await _records(store, session_id)
    finally:
        await store.aclose()


async def _load_neo4j(settings: Settings, session_id: str) -> SessionRecords:
    if not settings.neo4j_password:
        raise ExportError("set SCIENCE_AGENT_MEMORY_GRAPH_NEO4J_PASSWORD to read Neo4j")
    try:
        store = await open_graph_store(settings, Backend.NEO4J)
    except DomainError as exc:
        raise ExportError(exc.message) from exc
    try:
        return await _records(store, session_id)
    finally:
        await store.aclose()


async def _records(store: GraphReader, session_id: str) -> SessionRecords:
    try:
        return await load_session(store, session_id, max_nodes=None)
    except DomainError as exc:
        raise ExportError(exc.message) from exc
