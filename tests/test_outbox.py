"""The outbox journals events durably and replays them in order, once."""

from __future__ import annotations

import asyncio
import logging
import zlib
from typing import TYPE_CHECKING

import pytest

from gateway.runtime.outbox import APPLIED_FILE, REFUSED_FILE, Outbox
from gateway.stores.file.log import CorruptLogError, StoreLockedError
from resolvers.events import Event, ExecutionObserved, FirstMessageObserved, SubagentObserved
from tests.resolvers.builders import T0, execution_event

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path


def _make(number: int) -> FirstMessageObserved:
    return FirstMessageObserved(
        session_id=f"s{number}", goal_id=f"goal:session:s{number}", core_objective=f"goal {number}"
    )


EVENTS = [_make(number) for number in range(3)]


def _event(number: int) -> FirstMessageObserved:
    return EVENTS[number]


async def test_journalled_events_survive_a_restart_and_replay_in_order(tmp_path: Path) -> None:
    outbox = await Outbox.open(tmp_path)
    for number in range(3):
        await outbox.append(_event(number))
    await outbox.aclose()
    applied: list[Event] = []

    async def apply(events: Sequence[Event]) -> None:
        applied.extend(events)

    reopened = await Outbox.open(tmp_path)
    pending = reopened.pending
    count = await reopened.drain(apply)
    await reopened.aclose()

    assert pending == 3
    assert count == 3
    assert applied == [_event(0), _event(1), _event(2)]


async def test_drained_events_are_not_replayed_again(tmp_path: Path) -> None:
    outbox = await Outbox.open(tmp_path)
    await outbox.append(_event(1))
    applied: list[Event] = []

    async def apply(events: Sequence[Event]) -> None:
        applied.extend(events)

    await outbox.drain(apply)
    await outbox.aclose()
    reopened = await Outbox.open(tmp_path)
    await reopened.append(_event(2))
    await reopened.drain(apply)
    await reopened.aclose()

    assert applied == [_event(1), _event(2)]


def _step(session: str, number: int) -> FirstMessageObserved:
    return FirstMessageObserved(
        session_id=session, goal_id=f"goal:session:{session}", core_objective=f"step {number}"
    )


def _of(session: str) -> FirstMessageObserved:
    """An event of ``session`` (to ask whether the session is held)."""
    return _step(session, -1)


@pytest.mark.parametrize("restart", [False, True])
async def test_an_interrupted_drain_resumes_after_the_events_it_applied(
    tmp_path: Path, restart: bool
) -> None:
    # Applied again, an event would undo what was done since (a cleanup of its session).
    outbox = await Outbox.open(tmp_path)
    steps = [_step("s1", number) for number in range(3)]
    for step in steps:
        await outbox.append(step)
    applied: list[Event] = []

    async def failing_apply(events: Sequence[Event]) -> None:
        if steps[1] in events:
            raise ConnectionError("backend went away")
        applied.extend(events)

    async def apply(events: Sequence[Event]) -> None:
        applied.extend(events)

    with pytest.raises(ConnectionError):
        await outbox.drain(failing_apply, batch=1)
    if restart:  # the process died: what it applied is known from the disk
        await outbox.aclose()
        outbox = await Outbox.open(tmp_path)
    pending_after_failure = (outbox.pending, outbox.holds(_of("s1")))
    await outbox.drain(apply)
    await outbox.aclose()
    reopened = await Outbox.open(tmp_path)
    pending_after_drain = reopened.pending
    await reopened.aclose()

    assert pending_after_failure == (2, True)
    assert applied == steps  # each once, in order
    assert pending_after_drain == 0


async def test_a_torn_note_of_applied_events_only_means_they_are_applied_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outbox = await Outbox.open(tmp_path)
    for number in range(3):
        await outbox.append(_step("s1", number))
    await outbox.aclose()
    # A damaged line, and a last write cut short (a crash, not worth a warning).
    (tmp_path / APPLIED_FILE).write_bytes(b"-1 0\n-1 x1\n-1 2")

    with caplog.at_level(logging.WARNING):
        reopened = await Outbox.open(tmp_path)
    pending = reopened.pending
    await reopened.aclose()

    assert pending == 2
    assert [r.getMessage().split(" in ")[0] for r in caplog.records] == ["1 damaged lines"]


class _Applied:
    """An ``apply`` that takes a moment, recording the events and how many calls ran at once."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.running = self.peak = 0

    async def __call__(self, events: Sequence[Event]) -> None:
        self.running += 1
        self.peak = max(self.peak, self.running)
        await asyncio.sleep(0.001)
        self.running -= 1
        self.events.extend(events)


async def test_sessions_replay_side_by_side_each_in_its_own_order(tmp_path: Path) -> None:
    outbox = await Outbox.open(tmp_path)
    sessions = [f"s{number}" for number in range(6)]
    journalled = [_step(session, number) for number in range(4) for session in sessions]
    for event in journalled:
        await outbox.append(event)
    held = [outbox.holds(_of(session)) for session in sessions]
    applied = _Applied()

    await outbox.drain(applied, sessions=4, batch=1)
    await outbox.aclose()

    assert held == [True] * 6
    assert applied.peak == 4
    for session in sessions:
        mine = [event for event in journalled if event.session_id == session]
        assert [event for event in applied.events if event.session_id == session] == mine
    assert sorted(map(repr, applied.events)) == sorted(map(repr, journalled))
    assert not any(outbox.holds(_of(session)) for session in sessions)


async def test_a_second_process_cannot_share_the_outbox(tmp_path: Path) -> None:
    outbox = await Outbox.open(tmp_path)

    with pytest.raises(StoreLockedError):
        await Outbox.open(tmp_path)

    await outbox.aclose()


async def test_an_event_being_journalled_when_a_drain_starts_is_not_lost(tmp_path: Path) -> None:
    outbox = await Outbox.open(tmp_path)
    await outbox.append(_event(0))
    applied: list[Event] = []

    async def apply(events: Sequence[Event]) -> None:
        applied.extend(events)

    in_flight = asyncio.create_task(outbox.append(_event(1)))
    await asyncio.sleep(0)  # the record is on its way to the log, not yet acknowledged
    await outbox.drain(apply)
    await in_flight
    await outbox.drain(apply)
    await outbox.aclose()

    assert applied == [_event(0), _event(1)]
    assert outbox.pending == 0


async def test_a_session_replays_in_batches_of_its_consecutive_events(tmp_path: Path) -> None:
    outbox = await Outbox.open(tmp_path)
    journalled = [_step(session, number) for number in range(5) for session in ("s1", "s2")]
    for event in journalled:
        await outbox.append(event)
    calls: list[list[Event]] = []

    async def apply(events: Sequence[Event]) -> None:
        calls.append(list(events))

    count = await outbox.drain(apply, sessions=1, batch=2)
    await outbox.aclose()

    s1 = [event for event in journalled if event.session_id == "s1"]
    s2 = [event for event in journalled if event.session_id == "s2"]
    assert count == 10
    assert calls == [s1[0:2], s1[2:4], s1[4:], s2[0:2], s2[2:4], s2[4:]]


async def test_a_replayed_session_is_released_while_others_still_replay(tmp_path: Path) -> None:
    outbox = await Outbox.open(tmp_path)
    await outbox.append(_step("quick", 0))
    for number in range(3):
        await outbox.append(_step("slow", number))
    slow_started = asyncio.Event()
    finish_slow = asyncio.Event()

    async def apply(events: Sequence[Event]) -> None:
        if events[0].session_id == "slow":
            slow_started.set()
            await finish_slow.wait()

    drain = asyncio.create_task(outbox.drain(apply, sessions=2, batch=1))
    await slow_started.wait()
    await asyncio.sleep(0.01)  # the quick session's only event is applied by now
    during = (outbox.holds(_of("quick")), outbox.holds(_of("slow")), outbox.pending)
    finish_slow.set()
    await drain
    await outbox.aclose()

    assert during == (False, True, 3)
    assert (outbox.holds(_of("slow")), outbox.pending) == (False, 0)


@pytest.mark.parametrize(
    ("journalled", "held", "free"),
    [
        pytest.param([_step("s1", 0), _step("s1", 1)], _of("s1"), _of("s2"), id="its-session"),
        pytest.param(
            [execution_event("x", 1, session="A")],
            execution_event("x", 2, session="B"),
            execution_event("y", 2, session="B"),
            id="a-node-it-claims",
        ),
        pytest.param(
            [SubagentObserved("A", "sub-1", "turn-1", "find", T0, "running")],
            execution_event("x", 2, session="B", scope="sub-1"),
            execution_event("x", 2, session="B"),
            id="the-subagent-scope-it-joins",
        ),
    ],
)
async def test_a_write_held_by_the_journal_waits_for_its_replay_while_the_store_answers(
    tmp_path: Path, journalled: list[Event], held: Event, free: Event
) -> None:
    outbox = await Outbox.open(tmp_path)
    for event in journalled:
        await outbox.append(event)
    started, finish = asyncio.Event(), asyncio.Event()

    async def apply(events: Sequence[Event]) -> None:
        started.set()
        await finish.wait()

    outbox.resume()
    drain = asyncio.create_task(outbox.drain(apply))
    await started.wait()
    waiting = asyncio.create_task(outbox.released(held, 60.0))
    other = await outbox.released(free, 60.0)  # nothing journalled holds it: free at once
    await asyncio.sleep(0.01)
    waited = waiting.done()
    finish.set()
    await drain
    released = await waiting
    await outbox.aclose()

    assert (other, waited, released) == (True, False, True)


async def test_no_write_waits_while_the_store_does_not_answer(tmp_path: Path) -> None:
    outbox = await Outbox.open(tmp_path)
    await outbox.append(_step("s1", 0))

    async with asyncio.timeout(5):
        before_resume = await outbox.released(_of("s1"), 60.0)
        outbox.resume()
        waiting = asyncio.create_task(outbox.released(_of("s1"), 60.0))
        await asyncio.sleep(0.01)
        outbox.pause()  # the replay stopped: the waiting write is journalled at once
        after_pause = await waiting
        other_while_lost = await outbox.released(_of("s2"), 60.0)  # no send to a lost store
        outbox.resume()
        timed_out = await outbox.released(_of("s1"), 0.01)
        other_after_resume = await outbox.released(_of("s2"), 60.0)
    await outbox.aclose()

    assert (before_resume, after_pause, timed_out) == (False, False, False)
    assert (other_while_lost, other_after_resume) == (False, True)
    assert outbox.holds(_of("s1"))


async def test_a_journalled_record_that_is_not_an_event_stops_the_open_saying_where(
    tmp_path: Path,
) -> None:
    outbox = await Outbox.open(tmp_path)
    await outbox.append(_event(1))
    await outbox.aclose()
    path = tmp_path / "log.00000000.jsonl"
    good = path.read_bytes()
    payload = b'{"kind": "no-such-event"}'
    path.write_bytes(good + f"{zlib.crc32(payload):08x} ".encode() + payload + b"\n")

    with pytest.raises(CorruptLogError) as raised:
        await Outbox.open(tmp_path)

    assert f"{path} at byte offset {len(good)} " in str(raised.value)
    assert f"truncate -s {len(good)} {path}" in str(raised.value)


def _run(session: str, execution_id: str) -> ExecutionObserved:
    return execution_event(execution_id, 1, session=session)


async def test_a_node_two_sessions_claim_is_replayed_in_their_journal_order(
    tmp_path: Path,
) -> None:
    # A's run of x is journalled before B's, behind three other A events; C shares nothing.
    outbox = await Outbox.open(tmp_path)
    journalled = [
        *(_run("A", f"a{number}") for number in range(3)),
        _run("C", "c0"),
        _run("A", "x"),
        _run("B", "x"),
        _run("C", "c1"),
    ]
    for event in journalled:
        await outbox.append(event)
    held = [outbox.holds(event) for event in (_run("E", "x"), _run("E", "y"), _run("E", "a0"))]
    applied = _Applied()

    await outbox.drain(applied, sessions=4, batch=1)
    await outbox.aclose()

    assert held == [True, False, True]
    assert applied.events.index(journalled[4]) < applied.events.index(
        journalled[5]
    )  # A's x, then B's
    assert applied.peak == 2  # A and B in one group, C beside it
    assert sorted(map(repr, applied.events)) == sorted(map(repr, journalled))
    assert not outbox.holds(_run("B", "x"))


async def test_a_refused_event_that_cannot_be_kept_leaves_the_replay_going(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / REFUSED_FILE).mkdir()  # neither read nor appended to
    outbox = await Outbox.open(tmp_path)

    with caplog.at_level(logging.ERROR):
        await outbox.refuse(_event(0), "refused")
    refused = outbox.refused
    await outbox.aclose()

    assert refused == 0
    assert any("is in the log only" in record.getMessage() for record in caplog.records)
