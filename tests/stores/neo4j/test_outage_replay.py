"""Writes journalled during a Neo4j outage, through two replicas at once (SPEC §6, §3.1-§3.2).

Two gateways (``science-memory serve``) on the test Neo4j; a session's events (executions
reading the previous version of one artifact, searches returning Papers in several spellings,
subagent scopes) are sent by 16 clients through both replicas, a few before the outage and the
rest while Neo4j is away, each of those twice (the control plane retries). Neo4j is away in one
of two ways: stopped and restarted (``run.sh stop --keep-data``, ``run.sh start --same-port``: a
cold JVM and an empty plan cache), or cut off for ``CUT_SECONDS`` by a relay the gateways
connect through (``bench.outage.Link``: a network outage, Neo4j itself running on). After the
replay, the graph on both replicas must be the one SPEC gives for the same events sent one by
one (``scenario.Session``).

A replayed batch holding an event already written (the retry) once lost that event's
``input`` and ``produces`` edges. How long a new write waits after Neo4j is back is measured
(printed), not asserted: ``bench/README.md`` records it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
import uuid
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from bench.neo4j import Connection
from bench.outage import Link, check_same_server, server, wait_settled
from bench.server import running_gateway
from tests.stores.neo4j.scenario import SUBGRAPH, Session, check_subgraph, post, send, send_all

if TYPE_CHECKING:
    from pathlib import Path

CLIENTS = 16
SETTLE_SECONDS = 600.0
CUT_SECONDS = 15.0


Answer = tuple[str, dict[str, Any], dict[str, Any]]


def both_answers_ok(bad: list[Answer]) -> list[Answer]:
    return [
        row
        for row in bad
        if not (row[2]["__typename"] == "MemoryGraphUnreachable" and row[2].get("queued"))
    ]


async def outage_run(
    connection: dict[str, str], tmp_path: Path, replicas: int, *, restart: bool = True
) -> tuple[Session, list[Any], float | None]:
    """The session, what differs from the model, and how long after Neo4j answered again the
    first new write was acknowledged by every replica."""
    uri, link = connection["uri"], None
    async with contextlib.AsyncExitStack() as stack:
        if restart:
            check_same_server(uri, os.environ)
        else:
            host, port = uri.rsplit("/", 1)[-1].rsplit(":", 1)
            link = await stack.enter_async_context(Link(host, int(port)))
            uri = f"bolt://127.0.0.1:{link.port}"
        neo = Connection(uri, connection["user"], connection["password"])
        return await _outage(neo, tmp_path, replicas, link)


async def _outage(
    neo: Connection, tmp_path: Path, replicas: int, link: Link | None
) -> tuple[Session, list[Any], float | None]:
    model = Session(f"outage-{uuid.uuid4().hex[:8]}", executions=40, tool_calls=12)
    events = list(model.events)
    random.Random(7).shuffle(events)
    before, during = events[:10], events[10:]
    problems: list[Any] = []
    first_ack: float | None = None
    async with contextlib.AsyncExitStack() as stack:
        gateways = [
            await stack.enter_async_context(running_gateway(tmp_path / name, neo.settings()))
            for name in "ab"[:replicas]
        ]
        client = await stack.enter_async_context(httpx.AsyncClient(timeout=60.0))
        urls = [g.url for g in gateways]
        problems += await send_all(urls, before, CLIENTS, seed=1)
        cut = time.monotonic()
        if link is None:
            await server("stop", "--keep-data")
        else:
            await link.cut()
        try:
            problems += both_answers_ok(
                await send_all(urls, during + during, CLIENTS, seed=2, accept=("Observed",))
            )
        finally:
            if link is None:
                await server("start", "--same-port")
            else:
                await asyncio.sleep(max(0.0, cut + CUT_SECONDS - time.monotonic()))
                await link.restore()
        back = time.monotonic()
        # one more (new, idempotent) write per replica: how long until one is acknowledged?
        probe = dict(during[0][1])
        while time.monotonic() - back < 120.0:
            answers = [await send(client, url, during[0][0], probe) for url in urls]
            if all(x["__typename"] == "Observed" for x in answers):
                first_ack = time.monotonic() - back
                break
            await asyncio.sleep(0.5)
        deadline = time.monotonic() + SETTLE_SECONDS
        for url in urls:
            assert await wait_settled(client, url, deadline) is not None, "never settled"
        for url in urls:
            problems += [
                (url, p)
                for p in check_subgraph(model, await post(client, url, SUBGRAPH, s=model.sid))
            ]
    return model, problems, first_ack


@pytest.mark.slow
async def test_writes_queued_during_an_outage_through_two_replicas_replay_to_the_model(
    connection: dict[str, str], tmp_path: Path
) -> None:
    _, problems, first_ack = await outage_run(connection, tmp_path, replicas=2)

    print(f"first write acknowledged by every replica {first_ack} s after Neo4j was started")
    assert problems == []


@pytest.mark.slow
async def test_writes_queued_while_neo4j_is_cut_off_replay_to_the_model(
    connection: dict[str, str], tmp_path: Path
) -> None:
    _, problems, first_ack = await outage_run(connection, tmp_path, replicas=2, restart=False)

    print(f"first write acknowledged by every replica {first_ack} s after the link was restored")
    assert problems == []
