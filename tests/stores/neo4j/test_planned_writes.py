"""An event is a constant number of Cypher statements, retried whole, ordered by the server.

Statements are counted at the driver (every ``run`` of a managed or explicit transaction and of
an auto-commit session), with the change feed appended as in the gateway (``PublishingStore``).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, LiteralString

import pytest
from neo4j.exceptions import Neo4jError, ServiceUnavailable

from bench.writes import counting_statements as statements
from gateway.live.bus import EventBus
from gateway.live.publishing import PublishingStore
from gateway.stores.neo4j import plans
from gateway.stores.neo4j.planned import PlannedTransaction
from gateway.stores.neo4j.store import _Neo4jTransaction
from resolvers.errors import (
    KeyOwnedByOtherSessionError,
    StoreUnavailableError,
    StoreWriteError,
)
from resolvers.plan import ReadPlan
from resolvers.records import Direction, EdgeRecord, EdgeType, Label
from tests.resolvers import builders as b
from tests.stores.neo4j.conftest import cached_plans, make_node, open_store

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from gateway.stores.neo4j import Neo4jStore
    from resolvers.records import NodeRecord
    from resolvers.store import GraphTransaction

PREFETCH_AND_APPLY = 2


@pytest.fixture
def published(neo4j_store: Neo4jStore) -> PublishingStore:
    return PublishingStore(neo4j_store, EventBus())


async def test_an_execution_is_two_statements_whatever_its_size(
    published: PublishingStore,
) -> None:
    await b.goal(published)
    await b.upload(published, "data.csv")
    counts = []

    for index, products in enumerate((1, 6)):
        artifacts = [(f"fig{index}-{n}", 1) for n in range(products)]
        with statements() as count:
            await b.execution(
                published, f"e{index}", 10 + index, produces=artifacts, reads_files=["data.csv"]
            )
        counts.append(count[0])

    assert counts == [PREFETCH_AND_APPLY, PREFETCH_AND_APPLY]


async def test_every_observe_kind_is_two_statements(published: PublishingStore) -> None:
    counts: dict[str, int] = {}

    with statements() as count:
        await b.upload(published, "data.csv")
    counts["upload"] = count[0]
    with statements() as count:
        await b.goal(published)
    counts["goal after an upload"] = count[0]
    with statements() as count:
        await b.subagent(published, "sub1", 5)
    counts["subagent"] = count[0]
    with statements() as count:
        await b.execution(published, "e1", 7, scope="sub1", produces=[("fig", 1)])
    counts["execution in a scope"] = count[0]
    with statements() as count:
        await b.execution(published, "e0", 6, produces=[("fig", 2)], reads=[("fig", 1)])
    counts["execution, a version before its older one, read before it exists"] = count[0]
    for papers in (1, 8):
        links = [f"https://doi.org/10.1/p{n}" for n in range(papers)]
        with statements() as count:
            await b.search(published, f"q{papers}", 8 + papers, links)
        counts[f"search of {papers}"] = count[0]

    assert counts == dict.fromkeys(counts, PREFETCH_AND_APPLY)


async def test_a_resent_event_only_reads(published: PublishingStore) -> None:
    await b.goal(published)
    await b.execution(published, "e1", 10, produces=[("fig", 1)])

    with statements() as count:
        await b.execution(published, "e1", 10, produces=[("fig", 1)])

    assert count[0] == 1


async def test_declares_are_a_constant_few_statements(published: PublishingStore) -> None:
    await b.goal(published)
    await b.search(published, "q1", 10, ["https://doi.org/10.1/x"])
    await b.execution(published, "e1", 11, produces=[("report", 1)])

    with statements() as evidence:
        evidence_id = await b.evidence(published, "TP53 is mutated", link="https://doi.org/10.1/x")
    with statements() as claim:
        await b.claim(published, "TP53 drives it", evidence_ids=[evidence_id], report=("report", 1))

    assert evidence[0] == PREFETCH_AND_APPLY
    assert claim[0] == PREFETCH_AND_APPLY


# As the driver builds it from the server's failure message (a bare constructor sets no code).
DEADLOCK = Neo4jError._hydrate_neo4j(
    code="Neo.TransientError.Transaction.DeadlockDetected", message="test"
)


async def test_a_retried_transaction_runs_the_work_again_and_commits_once(
    neo4j_store: Neo4jStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await b.goal(neo4j_store)
    original = PlannedTransaction.flush
    failures = [1]

    async def flaky(self: PlannedTransaction, feed: Any = None) -> dict[str, int]:
        if failures[0]:
            failures[0] -= 1
            raise DEADLOCK
        return await original(self, feed)

    monkeypatch.setattr(PlannedTransaction, "flush", flaky)

    await b.execution(neo4j_store, "e1", 10)

    calls = await neo4j_store.list_nodes(labels=[Label.TOOL_CALL], session_id=b.S1, limit=10)
    assert failures == [0]
    assert [call.seq for call in calls.items] == [1]  # the failed run's seq was rolled back


async def test_a_write_too_large_for_the_servers_memory_is_refused_not_unreachable(
    neo4j_store: Neo4jStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Answered unreachable, an observe would be journalled and fail at every replay.
    original = PlannedTransaction.flush

    async def too_large(self: PlannedTransaction, feed: Any = None) -> dict[str, int]:
        if self._session == "big":
            raise Neo4jError._hydrate_neo4j(
                code="Neo.TransientError.General.MemoryPoolOutOfMemoryError", message="test"
            )
        return await original(self, feed)

    monkeypatch.setattr(PlannedTransaction, "flush", too_large)

    with pytest.raises(StoreWriteError):
        await b.execution(neo4j_store, "e-big", 10, session="big")
    await b.execution(neo4j_store, "e-1", 10, session="s")

    assert await neo4j_store.session_node_ids("big") == []
    assert len(await neo4j_store.session_node_ids("s")) > 0


async def test_two_stores_writing_one_session_keep_one_order(
    neo4j_store: Neo4jStore, connection: dict[str, str]
) -> None:
    other = await open_store(connection)  # another process: its own driver, no shared lock
    try:
        await b.goal(neo4j_store)
        writers = [neo4j_store, other]
        await asyncio.gather(
            *(b.execution(writers[n % 2], f"e{n}", 100 - n % 7) for n in range(10))
        )
    finally:
        await other.aclose()

    members = await neo4j_store.chain_members(b.S1, None)
    assert sorted(step.seq for step in members) == list(range(1, 11))
    walked = [b.goal_id()]
    while edges := await neo4j_store.expand([walked[-1]], EdgeType.NEXT, Direction.OUT):
        assert len(edges) == 1
        walked.append(edges[0].target)
    assert walked[1:] == [step.id for step in members]


async def test_a_node_another_session_creates_meanwhile_refuses_the_whole_write(
    neo4j_store: Neo4jStore, connection: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    other = await open_store(connection)
    original = PlannedTransaction.flush

    async def after_a_rival(self: PlannedTransaction, feed: Any = None) -> dict[str, int]:
        if self._session == "s1":  # between this write's snapshot and its changes
            await b.execution(other, "e1", 10, session="s2")
        return await original(self, feed)

    monkeypatch.setattr(PlannedTransaction, "flush", after_a_rival)
    try:
        with pytest.raises(KeyOwnedByOtherSessionError) as refused:
            await b.execution(neo4j_store, "e1", 10, session="s1")
    finally:
        await other.aclose()

    assert refused.value.owner_session_id == "s2"
    assert await neo4j_store.session_node_ids("s1") == []
    assert len(await neo4j_store.session_node_ids("s2")) == 2


async def _prefetch_profile(
    store: Neo4jStore, monkeypatch: pytest.MonkeyPatch, write: Callable[[], Awaitable[object]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The profile of ``write``'s prefetch, run again under ``PROFILE`` (rolled back), and its
    rows."""
    seen: list[dict[str, Any]] = []
    original = _Neo4jTransaction._fetch

    async def keep(self: _Neo4jTransaction, query: LiteralString, **params: Any) -> Any:
        if query == plans.PREFETCH:
            seen.append(params)
        return await original(self, query, **params)

    with monkeypatch.context() as patched:
        patched.setattr(_Neo4jTransaction, "_fetch", keep)
        await write()
    (params,) = seen
    async with store._driver.session() as session:
        tx = await session.begin_transaction()
        summary = await (await tx.run("PROFILE " + plans.PREFETCH, params)).consume()
        await tx.rollback()
    assert summary.profile is not None
    return summary.profile, params["rows"]


def _hits(operator: dict[str, Any], detail: str) -> int:
    """The database hits of the operators whose details name ``detail``."""
    own = int(operator.get("dbHits", 0)) if detail in str(operator.get("args", {})) else 0
    return own + sum(_hits(child, detail) for child in operator.get("children", []))


async def test_a_prefetch_block_seeks_once_per_row_of_its_own(
    neo4j_store: Neo4jStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await b.goal(neo4j_store)
    await b.upload(neo4j_store, "data.csv")

    profile, rows = await _prefetch_profile(
        neo4j_store,
        monkeypatch,
        lambda: b.execution(neo4j_store, "e1", 10, produces=[("fig", 1)], reads_files=["data.csv"]),
    )

    versions = sum(1 for row in rows if row["k"] == "art")
    assert versions == 1
    assert len(rows) > 4
    # The versions block looks the artifact up for its one row, not for every row of the event.
    assert 0 < _hits(profile, "Artifact(artifact_id)") <= 2 * versions


SCANS = ("AllNodesScan", "NodeByLabelScan", "AllRelationshipsScan", "RelationshipTypeScan")


def _operators(operator: dict[str, Any]) -> list[tuple[str, str]]:
    """Every operator's name and details, the plan's root first."""
    own = (str(operator["operatorType"]).split("@")[0], str(operator["args"].get("Details", "")))
    return [own] + [found for child in operator.get("children", []) for found in _operators(child)]


def _every_block(kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    values: dict[str, Any] = {
        "id": "Task:x",
        "step": "Task:x",
        "label": "Task",
        "key": "x",
        "type": "next",
    }
    values |= {"dir": "out", "scope": "", "at": "", "i": 0, "sess": "s", "props": {"a": 1}}
    values |= {"o": 0, "s": "Task:x", "t": "Task:y", "w": "Task:z", "session": "s"}
    return [{"k": kind, **values, "changes": "[]"} for kind in kinds]


@pytest.mark.parametrize(
    ("statement", "params"),
    [
        pytest.param(
            plans.PREFETCH,
            {"rows": _every_block(("step", "chain", "node", "adj", "art", "key", "list"))},
            id="prefetch",
        ),
        pytest.param(
            plans.APPLY,
            {
                "rows": _every_block(("node", "del", "edge", "park", "unpark", "feed")),
                "spread": 0,
                "span": 1,
            },
            id="apply",
        ),
    ],
)
async def test_a_pinned_write_plan_seeks_and_expands_from_bound_nodes(
    neo4j_store: Neo4jStore, statement: LiteralString, params: dict[str, Any]
) -> None:
    # Kept once made (``plans.PINNED``): a plan that scanned would scan for the server's life.
    # The planner's choices depend on the statistics; the plans made on an empty store scan
    # nothing either (checked by hand: no test may empty the shared database). Between two
    # bound nodes an edge of no static type is ``Expand(Into)``, ~1 ms a row on 5.26.
    assert statement.startswith(plans.PINNED)
    async with neo4j_store._driver.session() as session:
        tx = await session.begin_transaction()
        summary = await (
            await tx.run("EXPLAIN " + statement, {"args": plans.arguments("s"), **params})
        ).consume()
        await tx.rollback()
    assert summary.plan is not None
    operators = _operators(summary.plan)
    names = [name for name, _ in operators]
    assert "NodeIndexSeek" in names or "NodeUniqueIndexSeek(Locking)" in names
    assert [name for name in names if any(name.endswith(scan) for scan in SCANS)] == []
    untyped = [
        details
        for name, details in operators
        if "Expand(Into)" in name and not re.search(r"\[\w*:\w+\]", details)
    ]
    assert untyped == []


async def test_two_sessions_writing_one_edge_at_once_store_it_once(
    neo4j_store: Neo4jStore, connection: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Writers of one session queue on its counter; writers of two sessions do not. What orders
    # them is the lookup of the edge's ends by their unique ids in a writing statement (a
    # locking seek, held to the commit): the second looks for the edge once the first is stored.
    source = make_node(Label.ARTIFACT, "data#v1", "s1", artifact_id="data", version=1)
    target = make_node(Label.CODE, "c1", "s2")
    edge = EdgeRecord(EdgeType.INPUT, source.id, target.id, {"since": "v1"})
    other = await open_store(connection)
    for node in (source, target):
        await _put(neo4j_store, node)
    original = PlannedTransaction.flush
    rival: list[asyncio.Task[None]] = []

    async def then_a_rival(self: PlannedTransaction, feed: Any = None) -> dict[str, int]:
        writes = bool(self._pending_edges)
        applied = await original(self, feed)
        if self._session == "s1" and writes:  # the edge written, not committed yet
            rival.append(asyncio.create_task(_connect(other, "s2", edge)))
            await asyncio.sleep(0.5)  # time for the rival to look for the edge
        return applied

    monkeypatch.setattr(PlannedTransaction, "flush", then_a_rival)
    try:
        await _connect(neo4j_store, "s1", edge)
        await rival[0]
    finally:
        await other.aclose()

    assert await neo4j_store.expand([source.id], EdgeType.INPUT, Direction.OUT) == [edge]


async def _put(store: Neo4jStore, node: NodeRecord) -> None:
    async def work(tx: GraphTransaction) -> None:
        await tx.prefetch(ReadPlan(node.session_id, nodes=(node.id,)))
        await tx.put_node(node)

    await store.write(node.session_id, work)


async def _connect(store: Neo4jStore, session_id: str, edge: EdgeRecord) -> None:
    async def work(tx: GraphTransaction) -> None:
        await tx.prefetch(ReadPlan(session_id, nodes=(edge.source, edge.target)))
        await tx.put_edge(edge)

    await store.write(session_id, work)


async def test_the_plans_made_at_connect_serve_any_session_and_any_common_event(
    neo4j_store: Neo4jStore,
) -> None:
    # Neo4j keys a cached plan by the length bucket of each top-level string and list
    # parameter; the write statements take their strings in one map (``plans.arguments``)
    # and their rows padded to one bucket (``plans.padded``), so the warm-up's plans, made for
    # the session "" and no rows, serve every session and event, and a first write plans
    # nothing. The server counts every client's plans: a statement of another test's process
    # landing in between adds some, so the check is made again (at most three times) before it
    # fails; planning per session or per event fails every time.
    counted = []
    for attempt in range(3):
        await cached_plans(neo4j_store)
        await neo4j_store._warm_plans()
        warmed = await cached_plans(neo4j_store)
        await neo4j_store._warm_plans()
        links = [f"https://doi.org/10.1/p{attempt}-{n}" for n in range(8)]

        for session in ("s", "a" * 36, "b" * 150):
            with statements() as count:
                await b.execution(neo4j_store, f"e-{attempt}-{len(session)}", 10, session=session)
            assert count == [PREFETCH_AND_APPLY]
        await b.upload(neo4j_store, f"data-{attempt}.csv")  # a handful of rows
        await b.search(neo4j_store, f"q{attempt}", 20, links)  # a few dozen
        counted.append((warmed, await cached_plans(neo4j_store)))
        if counted[-1][0] == counted[-1][1]:
            break

    assert counted[-1][0] == counted[-1][1], counted


async def test_after_the_server_was_unreachable_the_next_write_waits_for_every_write_plan(
    neo4j_store: Neo4jStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server back from an outage may have restarted, with no plans: the first write after
    # a ping that found it unreachable waits for the warm-up, which plans every write statement
    # side by side; the replayed journal's transactions would plan them one after another.
    async def refused(*args: Any, **kwargs: Any) -> None:
        raise StoreUnavailableError("neo4j", detail="connection refused")

    with monkeypatch.context() as patch:
        patch.setattr(neo4j_store, "_auto_commit", refused)
        with pytest.raises(StoreUnavailableError):
            await neo4j_store.ping()
    await neo4j_store.ping()
    await cached_plans(neo4j_store)  # as after a restart
    await b.execution(neo4j_store, "e-1", 10, session="s")
    after_outage = await cached_plans(neo4j_store)
    await b.execution(neo4j_store, "e-2", 10, session="s")
    one_event = await cached_plans(neo4j_store)  # its prefetch and its apply

    # and the prefetch after changes (a batch's next event) with the change before it
    assert after_outage >= one_event + 2


async def test_a_warm_up_that_found_the_server_unreachable_is_made_again_by_the_next_write(
    neo4j_store: Neo4jStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server went away during the warm-up and came back (perhaps restarted, with no plans)
    # without a ping or a write failing in between: the next write still waits for a warm-up.
    def refused(*args: Any, **kwargs: Any) -> None:
        raise ServiceUnavailable("connection refused")

    neo4j_store._unreachable()
    with monkeypatch.context() as patch:
        patch.setattr(neo4j_store._driver, "session", refused)
        await neo4j_store._writes_planned()
    await cached_plans(neo4j_store)  # as after a restart
    await b.execution(neo4j_store, "e-1", 10, session="s")
    after_outage = await cached_plans(neo4j_store)
    await b.execution(neo4j_store, "e-2", 10, session="s")
    one_event = await cached_plans(neo4j_store)

    assert after_outage >= one_event + 2


async def test_a_warm_up_that_fails_does_not_fail_the_writes_after_it(
    neo4j_store: Neo4jStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken() -> None:
        raise RuntimeError("the warm-up broke")

    monkeypatch.setattr(neo4j_store, "_warm_writes", broken)
    neo4j_store._unreachable()

    for n in range(2):  # the failed warm-up is not waited for again and again
        await b.execution(neo4j_store, f"e-{n}", 3, session="s")

    assert len(await neo4j_store.session_node_ids("s")) > 0


async def test_a_planned_node_keeps_its_time_native_and_its_search_tokens_current(
    neo4j_store: Neo4jStore,
) -> None:
    created = make_node(Label.PAPER, "https://doi.org/10.1/x", title="TP53 in tumours", year=1)
    created = replace(created, created_at=created.created_at + timedelta(microseconds=123456))

    async def put(node: NodeRecord) -> None:
        async def work(tx: GraphTransaction) -> None:
            await tx.prefetch(ReadPlan(node.session_id, nodes=(node.id,)))
            await tx.put_node(node)

        await neo4j_store.write(node.session_id, work)

    async def found(term: str) -> list[str]:
        return [hit.node.id for hit in await neo4j_store.search([term], session_id="s1")]

    await put(created)
    (stored,) = await neo4j_store.get_nodes([created.id])
    (kind,) = await neo4j_store._fetch(
        "MATCH (n:Paper {id: $id}) RETURN valueType(n.created_at) AS kind", id=created.id
    )
    await put(created.with_props(year=2))  # no searchable field changed
    after_year = await found("tp53")
    await put(created.with_props(year=2, title="BRCA1 in tumours"))

    assert stored == created
    assert kind["kind"] == "ZONED DATETIME NOT NULL"
    assert after_year == [created.id]
    assert await found("tp53") == []
    assert await found("brca1") == [created.id]
    (updated,) = await neo4j_store.get_nodes([created.id])
    assert updated == created.with_props(year=2, title="BRCA1 in tumours")
