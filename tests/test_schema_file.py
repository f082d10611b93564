"""``schema.graphql`` at the repository root is the generated schema, byte for byte."""

from __future__ import annotations

from pathlib import Path

from gateway.schema import schema_sdl

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "schema.graphql"


def test_schema_file_matches_the_code() -> None:
    committed = SCHEMA_FILE.read_text(encoding="utf-8")

    generated = schema_sdl()

    assert committed == generated, (
        "schema.graphql is out of date with gateway.schema; regenerate it with "
        "`science-memory export-schema --output schema.graphql` and commit the result"
    )
