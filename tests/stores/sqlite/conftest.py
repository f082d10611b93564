"""Fixtures of the SQLite engine's tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gateway.stores.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    """An empty SQLite store in the test's directory, without fsync."""
    store = await SqliteStore.open(tmp_path, fsync=False)
    try:
        yield store
    finally:
        await store.aclose()
