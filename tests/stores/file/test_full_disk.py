"""A really full disk: the store on a tiny tmpfs, filled up (needs root and ``mount``; skipped
with the reason otherwise — ``test_disk_faults.py`` covers the same paths by injecting the
``OSError``)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import subprocess
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from gateway.stores.file.faults import DIRECTORY_CHECK_SECONDS
from gateway.stores.file.store import FileStore
from resolvers.errors import StoreUnavailableError, StoreWriteError
from resolvers.records import Label, NodeRecord
from tests.timing import once_within

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SIZE = "1m"


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(path: Path) -> None:
    """Write ``path`` until the disk holding it is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0")
    finally:
        os.close(fd)


def node(number: int) -> NodeRecord:
    """A node whose record spans pages: a full tmpfs has no room left in any of them."""
    return NodeRecord(f"Code:c{number}", Label.CODE, f"c{number}", "s1", T0, {"code": "x" * 20_000})


async def healthy(store: FileStore) -> None:
    """Return once ``ping`` passes (the directory check runs every second), or fail."""

    async def poll() -> None:
        while True:
            try:
                await store.ping()
            except StoreUnavailableError:
                await asyncio.sleep(0.05)
            else:
                return

    await once_within(10 * DIRECTORY_CHECK_SECONDS, poll())


async def put(store: FileStore, number: int) -> None:
    async with store.transaction("s1") as tx:
        await tx.put_node(node(number))


async def test_a_full_disk_refuses_writes_reports_it_and_recovers(tiny_disk: Path) -> None:
    store = await FileStore.open(tiny_disk / "graph")
    await put(store, 0)
    fill(tiny_disk / "filler")

    with pytest.raises(StoreWriteError, match=errno.errorcode[errno.ENOSPC]):
        await put(store, 1)
    with pytest.raises(StoreUnavailableError, match="the disk is full"):
        await store.ping()  # the failed write says so at once, before the directory check
    refused = await store.get_nodes(["Code:c1"])
    (tiny_disk / "filler").unlink()
    await put(store, 2)
    await healthy(store)
    await store.aclose()
    reopened = await FileStore.open(tiny_disk / "graph")
    stored = await reopened.session_node_ids("s1")
    await reopened.aclose()

    assert refused == [None]
    assert sorted(stored) == ["Code:c0", "Code:c2"]
