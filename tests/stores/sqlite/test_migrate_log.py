"""The first open of a log-engine directory with the SQLite engine migrates it: every record,
once, with progress, and a second open (or one after an interrupted migration) changes nothing."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from gateway.stores.embedded import EngineMismatchError, capture_embedded, open_embedded_store
from gateway.stores.file.store import FileStore
from gateway.stores.sqlite.migrate import DATABASE_NAME, MIGRATED_DIRECTORY
from gateway.stores.sqlite.store import SqliteStore
from resolvers.events import ExecutionObserved, FirstMessageObserved
from resolvers.observe import observe_execution, observe_session_first_message

if TYPE_CHECKING:
    from pathlib import Path

    from gateway.stores.file.codec import Captured

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def write_log_store(directory: Path) -> Captured:
    """A log-engine store with nodes, edges, counters and a parked edge; its records."""
    store = await FileStore.open(directory)
    goal = FirstMessageObserved(session_id="s1", goal_id="goal:session:s1", core_objective="TP53")
    await observe_session_first_message(store, goal)
    for number in (1, 2, 3):
        event = ExecutionObserved(
            session_id="s1",
            execution_id=f"e{number}",
            turn_id="t",
            tool="run_python",
            code_hash="h",
            status="succeeded",
            started_at=T0 + timedelta(seconds=number),
            finished_at=T0 + timedelta(seconds=number),
            input_source_files=("later.csv",),  # not uploaded: the input edge is parked
        )
        await observe_execution(store, event)
    captured = store.capture()
    await store.aclose()
    return captured


def normalised(captured: Captured) -> tuple[object, ...]:
    return (
        sorted(captured.nodes, key=lambda node: node.id),
        sorted(captured.edges, key=lambda edge: edge.identity),
        captured.seq,
        sorted(captured.parked, key=lambda item: (item[0], item[1].identity)),
    )


def file_names(directory: Path, pattern: str) -> list[str]:
    return sorted(path.name for path in directory.glob(pattern))


async def captured_by_sqlite(directory: Path) -> Captured:
    store = await SqliteStore.open(directory)
    try:
        return await capture_embedded(store)
    finally:
        await store.aclose()


async def test_every_record_is_migrated_with_progress(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    expected = await write_log_store(tmp_path)
    caplog.set_level(logging.INFO, "gateway.stores.sqlite")

    migrated = await captured_by_sqlite(tmp_path)

    assert normalised(migrated) == normalised(expected)
    assert expected.parked  # every kind of record took part
    assert expected.seq
    assert "writing the graph to SQLite: " in caplog.text
    assert "migrated the graph in" in caplog.text
    assert file_names(tmp_path, "log.*") == []
    assert file_names(tmp_path / MIGRATED_DIRECTORY, "log.*") != []


async def test_a_second_open_migrates_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    expected = await write_log_store(tmp_path)
    await captured_by_sqlite(tmp_path)
    caplog.set_level(logging.INFO, "gateway.stores.sqlite")

    again = await captured_by_sqlite(tmp_path)

    assert normalised(again) == normalised(expected)
    assert "SQLite" not in caplog.text


async def test_an_interrupted_migration_starts_over(tmp_path: Path) -> None:
    expected = await write_log_store(tmp_path)
    (tmp_path / f"{DATABASE_NAME}.migrating").write_bytes(b"half a database")

    migrated = await captured_by_sqlite(tmp_path)

    assert normalised(migrated) == normalised(expected)
    assert not (tmp_path / f"{DATABASE_NAME}.migrating").exists()


async def test_a_migration_interrupted_after_its_rename_only_moves_the_files(
    tmp_path: Path,
) -> None:
    expected = await write_log_store(tmp_path)
    await captured_by_sqlite(tmp_path)
    for path in (tmp_path / MIGRATED_DIRECTORY).iterdir():  # as if killed before the move
        path.rename(tmp_path / path.name)

    again = await captured_by_sqlite(tmp_path)

    assert normalised(again) == normalised(expected)
    assert file_names(tmp_path, "log.*") == []


async def test_the_log_engine_refuses_a_migrated_directory(tmp_path: Path) -> None:
    await write_log_store(tmp_path)
    await captured_by_sqlite(tmp_path)

    with pytest.raises(EngineMismatchError, match="FILE_ENGINE=sqlite"):
        await open_embedded_store(tmp_path, engine="log")
