"""``bench.load`` on the file store, and how its answers are judged.

The load runs a few clients for a few seconds by default; ``GATEWAY_LONG_TESTS=1`` runs the full
64 clients for 60 s. Its Neo4j outage variant lives in ``tests/stores/neo4j/``.
"""

from __future__ import annotations

import os

import pytest

from bench.load import BOUND, LoadPlan, run_load
from bench.outage import Outage, Timeline
from bench.tally import GRACE, Answer, Tally, report

LONG = os.environ.get("GATEWAY_LONG_TESTS") == "1"
PLAN = LoadPlan(seconds=60.0, clients=64) if LONG else LoadPlan(seconds=3.0, clients=4)
# An outage: the stop sent at 10 s, the gateway settled again at 20 s.
TIMELINE = Timeline(stop_sent=10.0, stopped=11.0, degraded=10.5, reachable=18.0, recovered=20.0)


@pytest.mark.slow
async def test_the_load_on_the_file_store_answers_everything_and_loses_nothing() -> None:
    result = await run_load(PLAN)

    summary = report(result)
    assert result.errors == 0, summary
    assert result.served > PLAN.clients, summary
    assert result.max_seconds <= BOUND, summary
    assert result.unreachable_reads == result.queued_writes == 0, summary
    assert (result.missing_live, result.missing_restarted) == (0, 0), summary


@pytest.mark.parametrize(
    ("sent", "answered", "allowed"),
    [
        (9.0, 9.5, False),  # before the stop
        (9.9, 10.2, True),  # sent before the stop, answered after it
        (15.0, 15.1, True),  # Neo4j away
        (20.0 + GRACE, 20.0 + GRACE + 0.1, True),  # the last moment of the grace
        (20.1 + GRACE, 20.2 + GRACE, False),  # the window has closed
    ],
)
def test_an_unreachable_read_is_an_error_only_outside_the_outage_window(
    sent: float, answered: float, allowed: bool
) -> None:
    tally = Tally(bound=BOUND)
    tally.answers.append(Answer("getChain", sent, answered, unreachable=True))

    tally.judge(TIMELINE)

    assert sum(tally.errors.values()) == (0 if allowed else 1)


def test_without_an_outage_every_unreachable_answer_is_an_error() -> None:
    tally = Tally(bound=BOUND)
    tally.answers.append(Answer("observeExecution", 1.0, 1.1, unreachable=True))

    tally.judge(None)

    assert tally.errors == {"observeExecution": 1}


def test_a_request_counts_as_one_error_however_many_ways_it_is_wrong() -> None:
    tally = Tally(bound=1.0)
    tally.answers += [
        Answer("subgraph", 12.0, 14.0, failure="HTTP 200: QueryLimitExceeded"),
        Answer("searchNodes", 0.0, 1.5, unreachable=True),
    ]

    tally.judge(None)

    assert tally.errors == {"subgraph": 1, "searchNodes": 1}
    assert tally.samples["subgraph"] == "HTTP 200: QueryLimitExceeded"
    assert tally.samples["searchNodes"] == "answered after 1.50 s > 1 s"


@pytest.mark.parametrize("text", ["20", "20:0", "-1:5", "a:b", "20:15:3"])
def test_an_outage_is_start_and_a_positive_duration(text: str) -> None:
    with pytest.raises(ValueError, match="START"):
        Outage.parse(text)


def test_an_outage_parses_start_and_duration() -> None:
    assert Outage.parse("20:15") == Outage(start=20.0, duration=15.0)
