"""The bounded load of ``bench.load`` on Neo4j, with the test server stopped and restarted.

Reads may degrade to ``MemoryGraphUnreachable`` and observes must be queued while Neo4j is
away — nowhere else — no answer may take longer than the gateway's query time budget, and
every acknowledged or queued write must be in the graph afterwards, before and after a gateway
restart. Like ``test_outage.py``, it stops and restarts the server
``tools/neo4j-test-server/run.sh`` manages (keeping its data and port); it never wipes it, as
the load writes only its own ``load-<run>-…`` sessions.

The default run is small: its time goes to the server's stop and start (20-60 s on a busy
2-core machine) and to the replay of the queued writes, one after the other at a few per
second, while every client queues several writes per second as long as Neo4j is away. 8 clients
for 6 s with a 2 s outage 3 s in take 70-90 s. ``GATEWAY_LONG_TESTS=1`` runs the full 64
clients for 60 s with a 15 s outage 20 s in (bench/README.md, "Load").
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from bench.load import BOUND, LoadPlan, run_load
from bench.neo4j import Connection
from bench.outage import Outage
from bench.tally import report

LONG = os.environ.get("GATEWAY_LONG_TESTS") == "1"
# The outage starts once a write was acknowledged (3 s in at the earliest): 10 s of load leave
# time for reads and writes against the stopped server even on a slow machine.
SHORT_PLAN = LoadPlan(
    seconds=10.0, clients=8, outage=Outage(start=3.0, duration=2.0), drain_seconds=300.0
)
LONG_PLAN = LoadPlan(seconds=60.0, clients=64, outage=Outage(start=20.0, duration=15.0))


@pytest.mark.slow
async def test_the_load_survives_a_neo4j_outage_without_losing_a_write(
    connection: dict[str, str],
) -> None:
    plan = LONG_PLAN if LONG else SHORT_PLAN
    neo4j = Connection(connection["uri"], connection["user"], connection["password"])

    result = await run_load(replace(plan, neo4j=neo4j))

    summary = report(result)
    assert result.errors == 0, summary
    assert result.timeline is not None
    assert result.timeline.recovered is not None, summary
    assert result.acknowledged_steps >= 1, summary
    assert result.queued_writes >= 1, summary
    assert result.unreachable_reads >= 1, summary
    assert result.max_seconds <= BOUND, summary
    assert (result.missing_live, result.missing_restarted) == (0, 0), summary
