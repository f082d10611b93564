"""The whole graph as JSON lines: ``export-graph`` writes it, ``import-graph`` builds the
SQLite engine's graph of an empty directory from it, record for record."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING

import pytest

from gateway.cli import main as cli
from gateway.settings import Settings
from gateway.stores.embedded import capture_embedded, export_graph, import_graph
from gateway.stores.sqlite.store import SqliteStore
from tests.stores.sqlite.test_migrate_log import normalised, write_log_store

if TYPE_CHECKING:
    from pathlib import Path


async def test_an_exported_graph_imports_record_for_record(tmp_path: Path) -> None:
    expected = await write_log_store(tmp_path / "old")
    store = await SqliteStore.open(tmp_path / "old")  # migrated on open
    lines = tmp_path / "graph.jsonl"
    written = await export_graph(store, lines)
    await store.aclose()

    imported = await import_graph(tmp_path / "new", lines)
    fresh = await SqliteStore.open(tmp_path / "new")
    found = await capture_embedded(fresh)
    await fresh.aclose()

    assert written == imported == expected.record_count()
    assert normalised(found) == normalised(expected)


async def test_an_import_into_a_directory_holding_a_graph_is_refused(tmp_path: Path) -> None:
    await write_log_store(tmp_path / "graph")
    lines = tmp_path / "graph.jsonl"
    lines.write_text("")

    with pytest.raises(FileExistsError, match="already holds a graph"):
        await import_graph(tmp_path / "graph", lines)


async def test_a_bad_line_is_named_and_nothing_is_built(tmp_path: Path) -> None:
    lines = tmp_path / "graph.jsonl"
    lines.write_text('{"op": "q", "session": "s1", "value": 1}\n{"op": "zz"}\n')

    with pytest.raises(ValueError, match="line 2"):
        await import_graph(tmp_path / "graph", lines)

    assert not (tmp_path / "graph" / "graph.sqlite3").exists()


async def test_the_commands_round_trip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = await write_log_store(tmp_path / "a" / "graph")
    settings = Settings(data_dir=tmp_path / "a", file_engine="sqlite")
    monkeypatch.setattr(cli, "load_settings", lambda: settings)
    lines = tmp_path / "graph.jsonl"

    exported = await asyncio.to_thread(cli.main, ["export-graph", "--output", str(lines)])
    settings = dataclasses.replace(settings, data_dir=tmp_path / "b")
    imported = await asyncio.to_thread(cli.main, ["import-graph", str(lines)])
    again = await asyncio.to_thread(cli.main, ["import-graph", str(lines)])
    store = await SqliteStore.open(tmp_path / "b" / "graph")
    found = await capture_embedded(store)
    await store.aclose()

    assert (exported, imported, again) == (0, 0, 1)
    assert "already holds a graph" in capsys.readouterr().err
    assert normalised(found) == normalised(expected)
