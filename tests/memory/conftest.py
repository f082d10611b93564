"""The ``memory_store`` fixture: an empty store per test, once per backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gateway.stores.file.memory import FileMemoryStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from resolvers.memory import MemoryStore


@pytest.fixture(params=[pytest.param("file", id="file")])
async def memory_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[MemoryStore]:
    store = await _open(request.param, tmp_path)
    yield store
    await store.aclose()


async def _open(backend: str, tmp_path: Path) -> MemoryStore:
    if backend == "file":
        return await FileMemoryStore.open(tmp_path / "memory")
    raise AssertionError(f"unknown memory backend {backend}")
