"""``science-memory`` (also ``python -m gateway``): one function per command, each thin."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.cli import export as cli_export
from gateway.cli import mcp as cli_mcp
from gateway.cli import memory as cli_memory
from gateway.settings import Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"science-memory: {exc}", file=sys.stderr)
        return 2
    try:
        code: int = args.handler(args, settings)
    except Exception as exc:
        # A store another process holds, or one that cannot be read, or a file named on the
        # command line that cannot be written or read: one line, not a trace.
        from gateway.runtime.state import STARTUP_ERRORS
        from resolvers.errors import StoreUnavailableError

        if not isinstance(exc, (*STARTUP_ERRORS, StoreUnavailableError, OSError)):
            raise
        print(f"science-memory: {exc}", file=sys.stderr)
        return 1
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="science-memory",
        description="ScienceMemory: the provenance-graph gateway for research agents.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the GraphQL gateway")
    serve.add_argument("--host", help="bind address (default from the environment)")
    serve.add_argument("--port", type=int, help="bind port (default from the environment)")
    serve.set_defaults(handler=serve_command)
    export_schema = commands.add_parser("export-schema", help="print or write schema.graphql")
    export_schema.add_argument("--output", type=Path, help="file to write (default: stdout)")
    export_schema.set_defaults(handler=export_schema_command)
    migrate = commands.add_parser(
        "migrate", help="copy the file store into Neo4j (idempotent; safe to re-run)"
    )
    migrate.add_argument("--to", choices=["neo4j"], required=True, help="target backend")
    migrate.add_argument("--uri", help="Bolt URI (default from the environment)")
    migrate.add_argument("--user", help="Neo4j user (default from the environment)")
    migrate.set_defaults(handler=migrate_command)
    export_graph = commands.add_parser(
        "export-graph", help="write the whole embedded graph as JSON lines (one record a line)"
    )
    export_graph.add_argument("--output", type=Path, required=True, help="file to write")
    export_graph.set_defaults(handler=export_graph_command)
    import_graph = commands.add_parser(
        "import-graph",
        help="build the SQLite engine's graph of an empty data directory from export-graph lines",
    )
    import_graph.add_argument("source", type=Path, help="a file written by export-graph")
    import_graph.add_argument(
        "--old-key-forms",
        action="store_true",
        help="keep keys of forms the API now refuses in new ids (an older version's export)",
    )
    import_graph.set_defaults(handler=import_graph_command)
    cli_memory.register(commands)
    cli_export.register(commands)
    cli_mcp.register(commands)
    return parser


# The server and schema are imported by the commands that need them, so the memory commands
# start without loading the GraphQL stack.


def serve_command(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from gateway.http.app import create_app
    from gateway.http.serving import (
        HeadTimeoutProtocol,
        fit_open_file_limit,
        settle_startup_heap,
        tune_interpreter,
    )
    from gateway.observability.logs import configure_logging

    settings = dataclasses.replace(
        settings, host=args.host or settings.host, port=args.port or settings.port
    )
    try:
        settings.check_bind()
    except SettingsError as exc:
        print(f"science-memory: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings)
    if settings.loopback_only:
        logging.getLogger("gateway").warning(
            "no internal token configured: serving on loopback only (%s), without authentication",
            settings.host,
        )
    tune_interpreter()
    uvicorn.run(
        create_app(settings, started=settle_startup_heap),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        lifespan="on",
        log_config=None,  # uvicorn's loggers go through configure_logging's handler too
        ws_max_size=settings.max_body_bytes,  # one WebSocket message, like one HTTP body
        # Isolation (SPEC §8): idle keep-alive connections are closed, the number of open
        # connections and tasks is capped (503 beyond), and a request head is bounded in size
        # and time. The head and body timeouts are our own (gateway.http.serving and
        # gateway.http.app.BodySizeLimit): uvicorn has neither.
        http=HeadTimeoutProtocol.with_timeout(settings.header_timeout_seconds),
        timeout_keep_alive=max(1, round(settings.keep_alive_seconds)),
        limit_concurrency=fit_open_file_limit(settings.max_connections),
        h11_max_incomplete_event_size=settings.max_header_bytes,
    )
    return 0


def export_schema_command(args: argparse.Namespace, settings: Settings) -> int:
    from gateway.schema import schema_sdl

    text = schema_sdl()
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
    return 0


def export_graph_command(args: argparse.Namespace, settings: Settings) -> int:
    return asyncio.run(_export_graph(args.output, settings))


async def _export_graph(output: Path, settings: Settings) -> int:
    from gateway.stores.embedded import (
        export_graph,
        open_embedded_store,
        salvage_graph,
        stored_engine,
    )
    from gateway.stores.file.lock import StoreLockedError
    from gateway.stores.sqlite.migrate import DatabaseFileError
    from resolvers.errors import StoreUnavailableError

    directory = settings.data_dir / "graph"
    engine = stored_engine(directory) or settings.file_engine
    try:
        store = await open_embedded_store(directory, engine=engine)
        try:
            count = await export_graph(store, output)
        finally:
            await store.aclose()
    except StoreLockedError as exc:
        print(f"science-memory: {exc}", file=sys.stderr)
        return 1
    except (DatabaseFileError, StoreUnavailableError) as exc:
        if engine != "sqlite":
            raise
        # A damaged database: what can still be read of it, and what could not.
        print(f"science-memory: {exc}; copying out what can still be read", file=sys.stderr)
        try:
            count, salvaged = await salvage_graph(directory, output)
        except ValueError as unreadable:
            print(f"science-memory: {unreadable}", file=sys.stderr)
            return 1
        print(f"science-memory: left out (damaged): {salvaged.summary()}", file=sys.stderr)
    print(f"wrote {output} ({count} records)")
    return 0


def import_graph_command(args: argparse.Namespace, settings: Settings) -> int:
    from gateway.stores.embedded import import_graph
    from gateway.stores.file.lock import StoreLockedError

    try:
        count = asyncio.run(
            import_graph(settings.data_dir / "graph", args.source, old_key_forms=args.old_key_forms)
        )
    except (OSError, ValueError, StoreLockedError) as exc:
        print(f"science-memory: {exc}", file=sys.stderr)
        return 1
    print(f"imported {count} records into {settings.data_dir / 'graph'} (SQLite engine)")
    return 0


def migrate_command(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.neo4j_password:
        print(
            "science-memory: set SCIENCE_AGENT_MEMORY_GRAPH_NEO4J_PASSWORD for the target Neo4j",
            file=sys.stderr,
        )
        return 2
    return asyncio.run(_migrate(args, settings))


async def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    from gateway.stores import Neo4jAddress, graph_directory, open_graph_store
    from gateway.stores.embedded import capture_embedded, open_embedded_store, stored_engine
    from gateway.stores.file.log import StoreLockedError
    from gateway.stores.file.memory import FileMemoryStore
    from gateway.stores.migrate import migrate_to_neo4j
    from gateway.stores.neo4j.memory import Neo4jMemoryStore
    from resolvers.errors import StoreUnavailableError
    from resolvers.records import Backend

    # The graph is read where it is, by the engine whose files hold it: a log directory is
    # not migrated to SQLite on the way to Neo4j, nor a SQLite one refused by FILE_ENGINE=log.
    directory = graph_directory(settings)
    engine = stored_engine(directory) or settings.file_engine
    try:
        source = await open_embedded_store(directory, engine=engine)
    except StoreLockedError as exc:
        print(f"science-memory: {exc} (stop the gateway before migrating)", file=sys.stderr)
        return 1
    print(f"reading the graph in {directory} ({engine} engine)", file=sys.stderr)
    captured = await capture_embedded(source)
    await source.aclose()
    try:
        address = Neo4jAddress(
            args.uri or settings.neo4j_uri,
            args.user or settings.neo4j_user,
            settings.neo4j_password,
        )
        target = await open_graph_store(settings, Backend.NEO4J, neo4j=address)
    except StoreUnavailableError as exc:
        print(f"science-memory: {exc.message}", file=sys.stderr)
        return 1
    memory = await FileMemoryStore.open(settings.data_dir / "memory", read_only=True)
    try:
        report = await migrate_to_neo4j(captured, target, progress=_progress)
        remembered = await (await Neo4jMemoryStore.open(target)).append_many(
            await memory.all_records()
        )
    finally:
        await target.aclose()
        await memory.aclose()
    print(file=sys.stderr)
    print(
        f"copied {report.nodes} nodes, {report.edges} edges, {report.parked} parked edges, "
        f"{report.sessions} session counters and {remembered} new memory records; Neo4j held "
        f"{report.nodes_before} graph nodes before and {report.nodes_after} after"
    )
    return 0


def _progress(done: int, total: int) -> None:
    width = 30
    filled = width * done // total if total else width
    percent = 100 * done // total if total else 100
    bar = "#" * filled + "-" * (width - filled)
    print(f"\rmigrating [{bar}] {percent:3d}% {done}/{total}", end="", file=sys.stderr, flush=True)
