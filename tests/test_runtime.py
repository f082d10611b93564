"""The runtime's persisted state: the toggle survives a restart, the state file stays private."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import shutil
import stat
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from gateway.runtime.state import STATE_FILE, Runtime
from resolvers.errors import InvalidInputError, StoreUnavailableError, StoreWriteError
from resolvers.events import ExecutionObserved
from resolvers.observe import observe_execution
from resolvers.records import Backend
from tests.timing import once_within

if TYPE_CHECKING:
    from gateway.settings import Settings

PASSWORD = "neo4j-pw-93c1"
HANG_GUARD_SECONDS = 3  # only turns a hang into a failure; a working aclose takes milliseconds


async def close(runtime: Runtime) -> None:
    await once_within(HANG_GUARD_SECONDS, runtime.aclose())  # cancelled on a hang: frees the dir


async def test_the_toggle_survives_a_restart(settings: Settings) -> None:
    runtime = await Runtime.start(settings)
    await runtime.configure(enabled=False)
    await close(runtime)

    restarted = await Runtime.start(settings)
    report = await restarted.health()
    await close(restarted)

    assert restarted.state.enabled is False
    assert report.status == "DISABLED"


async def test_switching_back_on_survives_a_restart(settings: Settings) -> None:
    runtime = await Runtime.start(settings)
    await runtime.configure(enabled=False)
    await runtime.configure(enabled=True)
    await close(runtime)

    restarted = await Runtime.start(settings)
    report = await restarted.health()
    await close(restarted)

    assert report.status == "HEALTHY"


async def test_the_state_file_is_private(settings: Settings) -> None:
    runtime = await Runtime.start(settings)

    await runtime.configure(enabled=False)
    await close(runtime)

    mode = (settings.data_dir / STATE_FILE).stat().st_mode
    assert stat.S_IMODE(mode) == 0o600


async def test_the_password_never_appears_in_the_state_repr(settings: Settings) -> None:
    runtime = await Runtime.start(settings)

    await runtime.configure(neo4j_password=PASSWORD)
    text = repr(runtime.state)
    await close(runtime)

    assert runtime.state.neo4j_password == PASSWORD
    assert PASSWORD not in text


async def test_closing_right_after_configure_returns(settings: Settings) -> None:
    runtime = await Runtime.start(settings)
    await runtime.configure(enabled=False)

    await close(runtime)

    assert runtime.outbox is None  # closed all the way


async def test_an_unreachable_neo4j_is_degraded_without_naming_its_address(
    settings: Settings,
) -> None:
    runtime = await Runtime.start(settings)

    report = await runtime.configure(
        backend=Backend.NEO4J, neo4j_uri=f"bolt://neo4j:{PASSWORD}@127.0.0.1:9", neo4j_password="p"
    )
    text = repr(runtime.state)
    await close(runtime)

    assert report.status == "DEGRADED"
    assert report.reason is not None
    assert "127.0.0.1" not in report.reason
    assert PASSWORD not in text


@pytest.mark.parametrize("host", ["a..b", ".a", "a" * 64, "\u00e9" * 70])
async def test_a_host_the_resolver_refuses_is_invalid_and_not_saved(
    settings: Settings, host: str
) -> None:
    runtime = await Runtime.start(settings)
    try:
        with pytest.raises(InvalidInputError) as refused:
            await runtime.configure(
                backend=Backend.NEO4J, neo4j_uri=f"bolt://{host}:7687", neo4j_password="p"
            )
        report = await runtime.health()
    finally:
        await close(runtime)

    assert refused.value.field == "input.neo4jUri"
    assert not (settings.data_dir / STATE_FILE).exists()
    assert (runtime.state.backend, report.status) == (Backend.FILE, "HEALTHY")


async def test_a_saved_host_the_resolver_refuses_leaves_neo4j_degraded_not_the_start(
    settings: Settings,
) -> None:
    # As a file saved before hosts were checked holds it: the start goes on, and
    # configureMemoryGraph can still correct the address.
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    saved = {"backend": "neo4j", "neo4j_uri": "bolt://a..b:7687", "neo4j_password": "p"}
    (settings.data_dir / STATE_FILE).write_text(json.dumps(saved), encoding="utf-8")

    runtime = await Runtime.start(settings)
    try:
        before = await runtime.health()
        after = await runtime.configure(backend=Backend.FILE)
    finally:
        await close(runtime)

    assert (before.backend, before.status, before.reachable) == (Backend.NEO4J, "DEGRADED", False)
    assert (after.backend, after.status) == (Backend.FILE, "HEALTHY")


def _execution() -> ExecutionObserved:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return ExecutionObserved(
        "s1", "e1", "t1", "run_python", "h1", "succeeded", started_at=at, finished_at=at
    )


async def test_writes_journalled_for_neo4j_keep_the_file_backend_degraded(
    settings: Settings,
) -> None:
    runtime = await Runtime.start(settings)
    await runtime.configure(
        backend=Backend.NEO4J, neo4j_uri="bolt://127.0.0.1:9", neo4j_password="p"
    )
    with contextlib.suppress(StoreUnavailableError):
        await runtime.record(observe_execution, _execution())

    report = await runtime.configure(backend=Backend.FILE)
    await close(runtime)

    assert (report.status, report.reachable, report.pending_writes) == ("DEGRADED", True, 1)
    assert report.reason is not None
    assert "journalled" in report.reason
    assert "127.0.0.1" not in report.reason


async def test_a_deleted_data_directory_refuses_writes_and_settings_and_is_degraded(
    settings: Settings,
) -> None:
    runtime = await Runtime.start(settings)
    await runtime.record(observe_execution, _execution())
    shutil.rmtree(settings.data_dir)

    with pytest.raises(StoreWriteError) as observed:
        await runtime.record(
            observe_execution, dataclasses.replace(_execution(), execution_id="e2")
        )
    with pytest.raises(StoreWriteError) as configured:
        await runtime.configure(enabled=False)
    health = await runtime.health()
    for _ in range(40):  # the directory is checked every second
        if health.status != "HEALTHY":
            break
        await asyncio.sleep(0.1)
        health = await runtime.health()
    state = runtime.state
    await close(runtime)

    assert "ENOENT" in observed.value.message
    assert "ENOENT" in configured.value.message
    assert str(settings.data_dir) not in configured.value.message
    assert state.enabled is True  # a setting that could not be saved changed nothing
    assert (health.status, health.reachable) == ("DEGRADED", False)
    assert "deleted" in (health.reason or "")
