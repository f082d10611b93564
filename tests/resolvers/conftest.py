"""The ``store`` fixture for use-case tests: every test starts from an empty store."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gateway.stores.file.store import FileStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from resolvers.store import GraphStore


@pytest.fixture(params=["file"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[GraphStore]:
    assert request.param == "file"
    opened = await FileStore.open(tmp_path)
    try:
        yield opened
    finally:
        await opened.aclose()
