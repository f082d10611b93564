"""The timing helpers of the tests (``tests/timing.py``): a pause of the whole process is not
held against the code, slow code still fails."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from tests.timing import once_within, within

BOUND = 0.5


async def slow_then_fast(runs: list[float]) -> str:
    await asyncio.sleep(runs.pop(0))
    return "done"


async def pause_the_process(seconds: float) -> str:
    """Stop every thread of this process for ``seconds`` (SIGSTOP), as a stalled machine does;
    the shell that stops it continues it on any exit."""
    pid = os.getpid()
    script = f"trap 'kill -CONT {pid}' EXIT; kill -STOP {pid}; sleep {seconds}"
    pausing = await asyncio.create_subprocess_exec("sh", "-c", script)
    await pausing.wait()
    return "resumed"


async def block_the_loop(seconds: float) -> str:
    time.sleep(seconds)  # noqa: ASYNC251 -- the code under test would be this slow
    return "blocked"


async def test_within_measures_again_after_an_overrun() -> None:
    runs = [BOUND * 2, 0.0]

    answer = await within(BOUND, lambda: slow_then_fast(runs))

    assert (answer, runs) == ("done", [])


async def test_within_fails_when_every_attempt_overran() -> None:
    runs = [BOUND * 1.2] * 3

    with pytest.raises(pytest.fail.Exception, match="each of 3 attempts"):
        await within(BOUND, lambda: slow_then_fast(runs))


async def test_once_within_does_not_count_a_pause_of_the_machine() -> None:
    answer = await once_within(BOUND, pause_the_process(BOUND * 3))

    assert answer == "resumed"


async def test_once_within_cancels_and_fails_what_waits_too_long() -> None:
    waiting = asyncio.Event()

    with pytest.raises(pytest.fail.Exception, match="still running"):
        await once_within(BOUND, waiting.wait())


async def test_once_within_fails_code_that_blocks_the_loop_too_long() -> None:
    with pytest.raises(pytest.fail.Exception, match="allowed"):
        await once_within(BOUND, block_the_loop(BOUND * 1.5))
