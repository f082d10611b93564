"""``science-memory`` (also ``python -m gateway``): one function per command, each thin."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from gateway import cli_memory
from gateway.settings import Settings, SettingsError, load_settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"science-memory: {exc}", file=sys.stderr)
        return 2
    code: int = args.handler(args, settings)
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
    cli_memory.register(commands)
    return parser


# The server and schema are imported by the commands that need them, so the memory commands
# start without loading the GraphQL stack.


def serve_command(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from gateway.app import create_app

    settings = dataclasses.replace(
        settings, host=args.host or settings.host, port=args.port or settings.port
    )
    try:
        settings.check_bind()
    except SettingsError as exc:
        print(f"science-memory: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if settings.loopback_only:
        logging.getLogger("gateway").warning(
            "no internal token configured: serving on loopback only (%s), without authentication",
            settings.host,
        )
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        lifespan="on",
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
