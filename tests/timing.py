"""Bounds on wall-clock time that a stalled machine does not break.

The shared test machines sometimes pause every process for seconds. One measurement that
overran its bound then proves nothing about the code, and the two helpers here tell a pause from
slow code without loosening the bound:

* ``within`` runs a repeatable action again when it overran: a pause does not come back at
  once, while an implementation that is really too slow is too slow every time;
* ``once_within`` awaits an action that cannot be repeated, and holds the bound against the
  time the code could run: ``Pauses`` measures how long the whole process stood still (a
  thread that wakes every few milliseconds finds itself late by that much). Waiting on a
  socket, a timer or a disk does not stop that thread: only the machine's pauses are taken off.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING, Self, TypeVar

import pytest

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from types import TracebackType

T = TypeVar("T")

ATTEMPTS = 3
TICK = 0.01  # seconds between the watching thread's wake-ups
PAUSE = 0.25  # a wake-up this late is a pause of the machine, not a scheduling delay


async def within(
    seconds: float, action: Callable[[], Awaitable[T]], *, attempts: int = ATTEMPTS
) -> T:
    """The result of the first run of ``action`` that took less than ``seconds``.

    ``action`` must be repeatable (each run starts from the same state). Fails the test,
    naming every duration, when ``attempts`` runs in a row overran."""
    durations: list[float] = []
    for _ in range(attempts):
        started = time.monotonic()
        result = await action()
        elapsed = time.monotonic() - started
        if elapsed < seconds:
            return result
        durations.append(elapsed)
    took = ", ".join(f"{duration:.2f} s" for duration in durations)
    pytest.fail(f"each of {attempts} attempts took {seconds:g} s or longer: {took}")


async def once_within(seconds: float, action: Awaitable[T]) -> T:
    """The result of ``action``, which must end within ``seconds``, the machine's pauses not
    counted. It is cancelled, and the test fails, once it ran that long."""
    task = asyncio.ensure_future(action)
    started = time.monotonic()
    with Pauses() as pauses:
        while not task.done() and (left := seconds - pauses.running_since(started)) > 0:
            await asyncio.wait({task}, timeout=left)
        took = pauses.running_since(started)
    if not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        pytest.fail(f"still running after {seconds:g} s (the machine's pauses not counted)")
    if took >= seconds:
        task.exception()  # retrieved: the bound is the failure
        pytest.fail(f"ran {took:.2f} s, {seconds:g} s allowed (the machine's pauses not counted)")
    return task.result()


class Pauses:
    """``with Pauses() as pauses:`` … ``pauses.running_since(started)``: the seconds since the
    ``time.monotonic()`` reading ``started``, less the machine's pauses in between."""

    def __init__(self) -> None:
        self._paused: list[tuple[float, float]] = []  # (woke at, seconds late), in order
        self._woke = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="pauses", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def running_since(self, started: float) -> float:
        now = time.monotonic()
        # A pause that ended just now is counted once the watching thread woke after it.
        while self._woke < now and self._thread.is_alive():
            time.sleep(TICK / 2)
        paused = [min(late, woke - started) for woke, late in self._paused if woke > started]
        return now - started - sum(paused)

    def _watch(self) -> None:
        before = time.monotonic()
        while not self._stop.wait(TICK):
            now = time.monotonic()
            late = now - before - TICK
            if late > PAUSE:
                self._paused.append((now, late))
            before = self._woke = now
