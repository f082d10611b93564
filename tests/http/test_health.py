"""``GET /health``: open to everyone, the state as JSON, disk faults as DEGRADED with a reason."""

from __future__ import annotations

import errno
import os
import shutil
import time
from typing import TYPE_CHECKING, Any

import pytest
from starlette.testclient import TestClient

from gateway.http.app import create_app
from gateway.runtime.state import package_version
from gateway.settings import FILE_ENGINES, Settings
from gateway.stores.file.faults import DIRECTORY_CHECK_SECONDS
from tests.http.conftest import INTERNAL_TOKEN, READ_TOKEN, post
from tests.http.live import LOCAL_URL
from tests.timing import Pauses

if TYPE_CHECKING:
    from pathlib import Path


OBSERVE = """mutation($s: String!, $goal: String!) {
  observeSessionFirstMessage(input: {sessionId: $s, goalId: $goal, coreObjective: "Q?"}) {
  __typename ... on MemoryGraphUnreachable { code message backend queued } } }"""


def health_until(client: TestClient, reason: str) -> dict[str, Any]:
    """``/health`` once its reason mentions ``reason`` (the data directory is checked every
    second, and a check may run while a test changes the conditions)."""
    started = time.monotonic()
    with Pauses() as pauses:
        while True:
            health: dict[str, Any] = client.get("/health").json()
            waited = pauses.running_since(started)
            if reason in (health["reason"] or "") or waited > 10 * DIRECTORY_CHECK_SECONDS:
                return health
            time.sleep(0.05)


def observe(client: TestClient, session: str) -> dict[str, Any]:
    """A first message of a new session: a write that reaches the disk."""
    response = post(client, OBSERVE, INTERNAL_TOKEN, s=session, goal=f"goal:session:{session}")
    answer: dict[str, Any] = response.json()["data"]["observeSessionFirstMessage"]
    return answer


def test_health_answers_without_a_token(client: TestClient) -> None:
    response = client.get("/health")

    assert response.status_code == 200
    assert response.json() == {
        "status": "HEALTHY",
        "backend": "FILE",
        "enabled": True,
        "reachable": True,
        "pendingWrites": 0,
        "refusedWrites": 0,
        "version": package_version(),
        "reason": None,
    }


@pytest.mark.parametrize("engine", FILE_ENGINES)
def test_a_deleted_data_directory_is_degraded_and_refuses_writes(
    tmp_path: Path, engine: str
) -> None:
    settings = Settings(
        data_dir=tmp_path, internal_token=INTERNAL_TOKEN, read_token=READ_TOKEN, file_engine=engine
    )
    with TestClient(base_url=LOCAL_URL, app=create_app(settings)) as client:
        assert observe(client, "s1")["__typename"] == "Observed"

        shutil.rmtree(tmp_path / "graph")
        answer = observe(client, "s2")  # refused at once, before any check of the directory
        health = health_until(client, "deleted")

    assert (health["status"], health["reachable"]) == ("DEGRADED", False)
    assert "deleted" in health["reason"]
    assert (answer["__typename"], answer["backend"], answer["queued"]) == (
        "MemoryGraphUnreachable",
        "FILE",
        False,
    )
    assert "ENOENT" in answer["message"]
    assert str(tmp_path) not in health["reason"] + answer["message"]


def test_a_full_disk_is_degraded_before_any_write_fails(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_statvfs = os.statvfs

    def full(path: Any) -> Any:
        stats = real_statvfs(path)
        return os.statvfs_result((*stats[:4], 0, *stats[5:]))  # f_bavail = 0

    monkeypatch.setattr(os, "statvfs", full)

    health = health_until(client, "ENOSPC")

    assert (health["status"], health["reason"]) == (
        "DEGRADED",
        "Writes cannot be made durable: the disk is full (ENOSPC).",
    )


def test_a_failed_fsync_of_the_log_engine_is_degraded_until_a_write_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log engine fsyncs its log with ``os.fsync``; SQLite's counterpart, whose fsync is
    made in C, is ``tests/http/test_health_sqlite_fsync.py``."""
    settings = Settings(
        data_dir=tmp_path, internal_token=INTERNAL_TOKEN, read_token=READ_TOKEN, file_engine="log"
    )
    log = tmp_path / "graph" / "log.00000000.jsonl"
    real_fsync = os.fsync

    def failing(fd: int) -> None:
        if os.path.samestat(os.fstat(fd), log.stat()):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_fsync(fd)

    with TestClient(base_url=LOCAL_URL, app=create_app(settings)) as client:
        observe(client, "s1")
        monkeypatch.setattr(os, "fsync", failing)
        refused = observe(client, "s2")
        during = client.get("/health").json()
        monkeypatch.undo()
        accepted = observe(client, "s3")
        after = client.get("/health").json()

    assert (refused["__typename"], accepted["__typename"]) == ("MemoryGraphUnreachable", "Observed")
    assert (during["status"], during["reason"]) == (
        "DEGRADED",
        "Writes cannot be made durable: the disk reported an I/O error (EIO).",
    )
    assert (after["status"], after["reason"]) == ("HEALTHY", None)


def test_a_read_only_file_system_is_degraded(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_statvfs = os.statvfs

    def read_only(path: Any) -> Any:
        stats = real_statvfs(path)
        flags = stats.f_flag | os.ST_RDONLY
        return os.statvfs_result((*stats[:8], flags, *stats[9:]))

    monkeypatch.setattr(os, "statvfs", read_only)
    monkeypatch.setattr(os, "access", lambda path, mode: mode != os.W_OK)

    health = health_until(client, "EROFS")

    assert (health["status"], health["reason"]) == (
        "DEGRADED",
        "Writes cannot be made durable: the file system is read-only (EROFS).",
    )


CONFIGURE = """mutation { configureMemoryGraph(input: {enabled: false}) {
  __typename ... on MemoryGraphUnreachable { message backend queued } } }"""


def test_settings_are_refused_and_unchanged_once_the_whole_data_directory_is_gone(
    client: TestClient, tmp_path: Path
) -> None:
    observe(client, "s1")
    shutil.rmtree(tmp_path)

    answer = post(client, CONFIGURE, INTERNAL_TOKEN).json()["data"]["configureMemoryGraph"]
    health = health_until(client, "deleted")

    assert (answer["__typename"], answer["backend"], answer["queued"]) == (
        "MemoryGraphUnreachable",
        "FILE",
        False,
    )
    assert "settings could not be saved" in answer["message"]
    assert str(tmp_path) not in answer["message"]
    assert (health["status"], health["enabled"]) == ("DEGRADED", True)
