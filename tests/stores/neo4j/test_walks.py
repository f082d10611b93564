"""Neo4jStore whole walks: one statement each, and exactly the use cases' primitive walks.

Every comparison runs the same use case twice on the same Neo4j data: on the store (which
offers ``WalkReader``, so the walk is one Cypher statement) and on the store with its walks
hidden (so the use case walks over the primitives, as on every other backend).
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.writes import counting_statements
from gateway.live.bus import EventBus
from gateway.live.publishing import PublishingStore
from gateway.stores.file.store import FileStore
from gateway.stores.neo4j import traces
from resolvers import chains, observe
from resolvers.chains import ChainKind, chain_exists, get_chain
from resolvers.cleanup import cleanup_session
from resolvers.errors import NodeNotFoundError
from resolvers.events import FirstMessageObserved
from resolvers.provenance import trace_provenance
from resolvers.records import EdgeRecord, EdgeType, Label
from resolvers.store import SessionReader, TraceReader, WalkReader, one_state
from tests.model.graph import dump
from tests.model.streams import apply, streams
from tests.profiles import LONG, profile
from tests.resolvers.builders import (
    PDF,
    call,
    claim,
    evidence,
    execution,
    goal,
    search,
    subagent,
    upload,
)
from tests.stores.neo4j.conftest import cached_plans, make_node

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Iterator
    from pathlib import Path

    from gateway.stores.neo4j import Neo4jStore
    from resolvers.records import NodeRecord
    from resolvers.store import GraphReader
    from tests.model.streams import Op

TRACES = profile("native-traces", examples=10, long_examples=300)
RAW = profile("native-raw-graphs", examples=5, long_examples=200)
GENERATED_NODES = 3  # nodes traced per generated session (every node when long)

A = "https://example.org/a"
B = "https://example.org/b"


_LOCKS = "MERGE (c:SessionCounter {session_id: sc})"
"""What a statement that takes its session's lock (``gateway.stores.neo4j.sources``) holds."""

_WALKS = ("walk_chain", "walk_chain_from", "upstream_walk", "upstream_hop", "run_lines")


class _Primitives:
    """A store without its walks: the use cases walk over its primitives instead, its session
    views' too."""

    def __init__(self, store: GraphReader) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name in _WALKS:
            raise AttributeError(name)
        return getattr(self._store, name)

    @asynccontextmanager
    async def session_view(self, session_id: str) -> AsyncIterator[GraphReader]:
        async with one_state(self._store, session_id) as view:
            yield cast("GraphReader", _Primitives(view))


def primitives(store: Neo4jStore) -> GraphReader:
    walker = cast("GraphReader", _Primitives(store))
    assert isinstance(store, WalkReader)
    assert isinstance(store, TraceReader)
    assert not isinstance(walker, WalkReader)
    assert not isinstance(walker, TraceReader)
    assert isinstance(walker, SessionReader)
    return walker


async def provenance_graph(store: Neo4jStore) -> None:
    """Three sessions with every label, edge type and walk shape.

    s1: uploads (one before its goal, one PDF), two goals, a late first step, subagent scopes
    whose first child reads what the scope's predecessor or the first step made, artifact
    versions reading earlier ones, a paper found by two searches, evidence from papers and the
    PDF, claims citing evidence, an artifact and a file, stated in two report versions;
    s2: no goal (broken traces), reads an artifact of s1 and one of a cleaned-up session.
    """
    await upload(store, "data.csv")
    await upload(store, "paper.pdf", media_type=PDF)
    await goal(store)
    await observe.observe_session_first_message(
        store,
        FirstMessageObserved(session_id="s1", goal_id="goal:s1:again", core_objective="Again"),
    )
    await execution(store, "e1", 10, produces=[("fig", 1), ("table", 1)], reads_files=["data.csv"])
    await search(store, "q1", 8, [A, B])
    await subagent(store, "sub", 20)
    await execution(store, "c1", 21, scope="sub", produces=[("fig", 2)], reads=[("fig", 1)])
    await search(store, "q2", 22, [A], scope="sub")
    await execution(
        store, "c3", 23, scope="sub", produces=[("table", 2)], reads=[("table", 1), ("fig", 2)]
    )
    await execution(store, "e2", 30, produces=[("report", 1)], reads=[("fig", 2), ("table", 2)])
    from_a = await evidence(store, "A says so", link=A)
    from_b = await evidence(store, "B says so", link=B)
    from_pdf = await evidence(store, "the PDF says so", source_file="paper.pdf")
    await claim(store, "A and B", evidence_ids=[from_a, from_b], report=("report", 1))
    await claim(
        store, "the figure", artifacts=[("fig", 2)], files=["data.csv"], report=("report", 1)
    )
    await subagent(store, "other", 35)
    await execution(store, "d1", 36, scope="other", produces=[("notes", 1)], reads=[("early", 1)])
    await execution(store, "e3", 40, produces=[("report", 2)], reads=[("report", 1)])
    await claim(store, "A alone", evidence_ids=[from_a], report=("report", 2))
    await claim(store, "A and B", evidence_ids=[from_a, from_b], report=("report", 2))
    await claim(store, "the PDF", evidence_ids=[from_pdf], artifacts=[("report", 1)])
    await execution(store, "e0", 5, produces=[("early", 1)])
    await execution(store, "o1", 60, produces=[("shared", 1)], session="old")
    await cleanup_session(store, "old")
    await execution(store, "x1", 70, produces=[("derived", 1)], reads=[("fig", 1)], session="s2")
    await execution(store, "x2", 80, produces=[("out", 1)], reads=[("shared", 1)], session="s2")


async def live_nodes(store: Neo4jStore) -> list[NodeRecord]:
    """Every node a walk can start from (soft-deleted ones are only there to be skipped)."""
    ids = [i for s in ("s1", "s2", "old") for i in await store.session_node_ids(s)]
    return [node for node in await store.get_nodes(ids) if node is not None and not node.deleted]


def scopes(node: NodeRecord) -> Iterator[str | None]:
    yield None
    yield node.session_id


@pytest.fixture
async def graph(neo4j_store: Neo4jStore) -> list[NodeRecord]:
    await provenance_graph(neo4j_store)
    return await live_nodes(neo4j_store)


async def test_every_chain_kind_walks_as_the_primitives_do(
    neo4j_store: Neo4jStore, graph: list[NodeRecord]
) -> None:
    walker = primitives(neo4j_store)
    reached: set[ChainKind] = set()

    for kind in ChainKind:
        for node in graph:
            for session_id in scopes(node):
                native = await get_chain(neo4j_store, node.id, kind, session_id=session_id)
                generic = await get_chain(walker, node.id, kind, session_id=session_id)

                assert native == generic, (kind, node.id, session_id)
                if native.nodes:
                    reached.add(kind)

    assert reached == set(ChainKind)


async def test_chain_exists_answers_as_the_primitives_do(
    neo4j_store: Neo4jStore, graph: list[NodeRecord]
) -> None:
    walker = primitives(neo4j_store)

    for node in graph:
        native = await chain_exists(neo4j_store, node.id, list(ChainKind))
        generic = await chain_exists(walker, node.id, list(ChainKind))

        assert native == generic, node.id


async def test_walks_agree_on_edges_the_write_path_never_builds(neo4j_store: Neo4jStore) -> None:
    goal_node = make_node(Label.RESEARCH_GOAL, "goal:session:s1")
    other_goal = make_node(Label.RESEARCH_GOAL, "goal:other")
    first = make_node(Label.TOOL_CALL, "subtask:1", seq=1)
    deleted = make_node(Label.TOOL_CALL, "subtask:2", seq=2, deleted_session="s1")
    last = make_node(Label.TOOL_CALL, "subtask:3", seq=3)
    made = make_node(Label.CODE, "c")
    figure = make_node(Label.ARTIFACT, "fig#v1", artifact_id="fig", version=1)
    nodes = (goal_node, other_goal, first, deleted, last, made, figure)
    edges = [
        (goal_node, EdgeType.NEXT, first),
        (first, EdgeType.NEXT, deleted),
        (deleted, EdgeType.NEXT, last),
        (last, EdgeType.PRODUCES, made),
        (made, EdgeType.PRODUCES, figure),
        (other_goal, EdgeType.NEXT, made),  # a way back through a node an earlier hop reached
        (made, EdgeType.NEXT, last),
        (made, EdgeType.PRODUCES, last),  # an edge no upstream move of a ToolCall follows
    ]
    async with neo4j_store.transaction() as tx:
        for node in nodes:
            await tx.put_node(node)
        for source, edge_type, target in edges:
            await tx.put_edge(EdgeRecord(edge_type, source.id, target.id))
    walker = primitives(neo4j_store)

    for node in nodes:
        if node.deleted:
            continue
        for kind in ChainKind:
            native = await get_chain(neo4j_store, node.id, kind)
            assert native == await get_chain(walker, node.id, kind), (kind, node.id)
        for label in (Label.RESEARCH_GOAL, Label.CODE):
            trace = await trace_provenance(neo4j_store, node.id, target_label=label)
            assert trace == await trace_provenance(walker, node.id, target_label=label)

    assert (await get_chain(neo4j_store, figure.id, ChainKind.VIEW_RELATED_TASK)).nodes == []


async def same_traces(store: Neo4jStore, node: NodeRecord) -> set[str]:
    """Every trace from ``node`` by the store's hops equals the primitive walk's, for every
    target label, at ``maxHops`` 32 and one hop before the exploration stops (the model
    suite, ``tests/model/test_reads.py``, tries more); what the traces concluded, to show
    that every verdict was compared."""
    walker = primitives(store)
    verdicts: set[str] = set()
    for target in Label:
        full = await trace_provenance(walker, node.id, target_label=target, max_hops=32)
        last = max((step.hop for step in full.chain), default=1)
        for max_hops in sorted({max(1, last - 1), 32}):
            expected = full
            if max_hops != 32:
                expected = await trace_provenance(
                    walker, node.id, target_label=target, max_hops=max_hops
                )

            native = await trace_provenance(store, node.id, target_label=target, max_hops=max_hops)

            assert native == expected, (node.id, target, max_hops)
            verdicts.add("broken" if native.broken else "truncated" if native.truncated else "")
            if native.path:
                verdicts.add("path")
            if any(step.node.label is Label.RESEARCH_GOAL for step in native.path):
                verdicts.add("goal")
    return verdicts


async def test_every_trace_walks_as_the_primitives_do(
    neo4j_store: Neo4jStore, graph: list[NodeRecord]
) -> None:
    verdicts: set[str] = set()

    for node in graph:
        verdicts |= await same_traces(neo4j_store, node)

    assert verdicts == {"broken", "truncated", "", "path", "goal"}


@TRACES
@given(ops=streams(), data=st.data())
async def test_traces_of_generated_sessions_walk_as_the_primitives_do(
    neo4j_store: Neo4jStore, ops: tuple[Op, ...], data: st.DataObject
) -> None:
    await neo4j_store.wipe()
    applied = await apply(neo4j_store, ops)
    graph = await dump(neo4j_store, applied.sessions)
    ids = sorted(graph.nodes)
    if not LONG and ids:  # the primitive walk costs a round trip per primitive
        ids = data.draw(st.lists(st.sampled_from(ids), max_size=GENERATED_NODES, unique=True))
    nodes = [node for node in await neo4j_store.get_nodes(ids) if node and not node.deleted]

    for node in nodes:
        await same_traces(neo4j_store, node)


_RAW_LABELS = (Label.RESEARCH_GOAL, Label.TASK, Label.TOOL_CALL, Label.CODE, Label.ARTIFACT)
_RAW_TARGETS = (Label.RESEARCH_GOAL, Label.TASK, Label.TOOL_CALL, Label.CODE)


@st.composite
def raw_graphs(draw: st.DrawFn) -> tuple[list[NodeRecord], list[EdgeRecord]]:
    """Nodes and edges no write path builds: steps of a main chain and one scope with gaps,
    several or no goals, ``next`` edges missing, doubled, backwards or into anything, edges
    of every type between any two nodes, soft-deleted nodes and nodes of a second session."""
    nodes: list[NodeRecord] = []
    for index in range(draw(st.integers(2, 9))):
        label = draw(st.sampled_from(_RAW_LABELS))
        session = draw(st.sampled_from(["s1", "s1", "s2"]))
        props: dict[str, Any] = {}
        if draw(st.integers(0, 4)) == 0:
            props["deleted_session"] = session
        seq = 0
        if label in (Label.TASK, Label.TOOL_CALL):
            seq = index + 1
            props["chain_at"] = f"2026-01-01T00:00:{draw(st.integers(0, 3)):02d}Z"
            if draw(st.booleans()):
                props["parent_subtask_id"] = "scope"
        if label is Label.ARTIFACT:
            props |= {"artifact_id": f"a{index % 2}", "version": index}
        nodes.append(make_node(label, f"k{index}", session, seq=seq, **props))
    pairs = st.tuples(
        st.sampled_from(nodes), st.sampled_from(list(EdgeType)), st.sampled_from(nodes)
    )
    picked = draw(st.lists(pairs, max_size=16, unique_by=lambda p: (p[0].id, p[1], p[2].id)))
    edges = [EdgeRecord(kind, source.id, target.id) for source, kind, target in picked]
    return nodes, edges


@RAW
@given(graph=raw_graphs(), data=st.data())
async def test_walks_of_random_graphs_agree_with_the_primitives(
    neo4j_store: Neo4jStore,
    graph: tuple[list[NodeRecord], list[EdgeRecord]],
    data: st.DataObject,
) -> None:
    await neo4j_store.wipe()
    nodes, edges = graph
    async with neo4j_store.transaction() as tx:
        for node in nodes:
            await tx.put_node(node)
        for edge in edges:
            await tx.put_edge(edge)
    walker = primitives(neo4j_store)

    for node in nodes:
        session = data.draw(st.sampled_from([None, node.session_id, "s2"]))
        target = data.draw(st.sampled_from(_RAW_TARGETS))
        max_hops = data.draw(st.sampled_from([1, 3, 32]))
        kind = data.draw(st.sampled_from(list(ChainKind)))
        for ref in (node.id, node.key):
            expected = await outcome(
                trace_provenance(
                    walker, ref, target_label=target, max_hops=max_hops, session_id=session
                )
            )
            native = await outcome(
                trace_provenance(
                    neo4j_store, ref, target_label=target, max_hops=max_hops, session_id=session
                )
            )
            assert native == expected, (ref, target, max_hops, session)
            chain = await outcome(get_chain(walker, ref, kind, session_id=session))
            assert chain == await outcome(get_chain(neo4j_store, ref, kind, session_id=session))


async def outcome(answer: Awaitable[object]) -> object:
    """The answer, or the domain error raised instead (a deleted start is not found)."""
    try:
        return await answer
    except NodeNotFoundError as exc:
        return str(exc)


async def test_traces_past_the_region_go_on_hop_by_hop(
    neo4j_store: Neo4jStore, graph: list[NodeRecord], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(traces, "REGION_LEVELS", 2)
    walker = primitives(neo4j_store)

    for node in graph:
        native = await trace_provenance(neo4j_store, node.id)

        assert native == await trace_provenance(walker, node.id), node.id


async def test_the_chain_cap_applies_to_native_walks(
    neo4j_store: Neo4jStore, graph: list[NodeRecord], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chains, "CHAIN_CAP", 3)
    walker = primitives(neo4j_store)
    latest = call("e3")

    native = await get_chain(neo4j_store, latest, ChainKind.VIEW_GOAL)
    generic = await get_chain(walker, latest, ChainKind.VIEW_GOAL)

    assert native == generic
    # A page keeps its source and both goals of the session (the anchors) plus one more step.
    assert (len(native.nodes), native.truncated) == (4, True)


async def test_the_publishing_store_offers_the_walks_of_the_store_it_wraps(
    neo4j_store: Neo4jStore, tmp_path: Path
) -> None:
    file_store = await FileStore.open(tmp_path / "graph")
    try:
        assert isinstance(PublishingStore(neo4j_store, EventBus()), WalkReader)
        assert isinstance(PublishingStore(neo4j_store, EventBus()), TraceReader)
        assert not isinstance(PublishingStore(file_store, EventBus()), WalkReader)
        assert not isinstance(PublishingStore(file_store, EventBus()), TraceReader)
    finally:
        await file_store.aclose()


@pytest.fixture
def sent() -> Iterator[list[str]]:
    """The statements the store sends from the first one a test sends on (clear it first to
    count from later), its transactions' included."""
    texts: list[str] = []
    with counting_statements(texts):
        yield texts


async def test_a_chain_is_one_statement(
    neo4j_store: Neo4jStore, graph: list[NodeRecord], sent: list[str]
) -> None:
    sent.clear()

    chain = await get_chain(neo4j_store, call("e3"), ChainKind.VIEW_GOAL)

    assert len(chain.nodes) > 5
    # Find the start, lock its session (as cypher.LOCK_SESSION does), walk: one statement.
    assert len(sent) == 1
    assert _LOCKS in sent[0]


async def test_a_trace_is_one_statement(
    neo4j_store: Neo4jStore, graph: list[NodeRecord], sent: list[str]
) -> None:
    sent.clear()

    trace = await trace_provenance(neo4j_store, call("c3", "sub"))

    hops = max(step.hop for step in trace.chain)
    assert (trace.reason, hops) == ("reached ResearchGoal", 3)
    # Find the start, lock its session, read every hop's answers and the witness's runs.
    assert len(sent) == 1
    assert _LOCKS in sent[0]


async def test_a_run_longer_than_the_region_reads_is_read_once_the_witness_is_known(
    neo4j_store: Neo4jStore,
    graph: list[NodeRecord],
    sent: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = await trace_provenance(neo4j_store, call("c3", "sub"))
    monkeypatch.setattr(traces, "BELOW", 0)
    sent.clear()

    trace = await trace_provenance(neo4j_store, call("c3", "sub"))

    # The region alone in auto-commit; then, as RUN_LINES cannot follow it under its lock,
    # the region again as a transaction's first statement, and the run's steps.
    assert len(sent) == 3
    assert sent[0] == sent[1]
    assert sent[2] == traces.RUN_LINES
    assert trace == whole
    assert len(trace.path) > 4


async def test_the_trace_statements_planned_at_connect_serve_any_start(
    neo4j_store: Neo4jStore, graph: list[NodeRecord], sent: list[str]
) -> None:
    # Planned ahead with an empty id (``Traces.trace_statements``), and their strings passed
    # in maps: Neo4j keys a plan by a top-level string's length, so a plan made for "" would
    # serve no start, and the first trace would plan for seconds with its session locked.
    starts = [
        node.id for node in graph if node.label in traces.REGION_PLANNED and node.session_id == "s1"
    ]
    await cached_plans(neo4j_store)
    await neo4j_store._warm_plans()
    warmed = await cached_plans(neo4j_store)
    await neo4j_store._warm_plans()
    sent.clear()

    reasons = {(await trace_provenance(neo4j_store, start)).reason for start in starts}

    planned = {text for trace in neo4j_store.trace_statements() for text, _ in trace}
    past_the_region = set(sent) - planned  # hop by hop: planned when first met
    assert len(starts) > 5
    assert reasons == {"reached ResearchGoal"}
    assert await cached_plans(neo4j_store) == warmed + len(past_the_region)


async def test_a_key_is_resolved_before_the_trace(
    neo4j_store: Neo4jStore, graph: list[NodeRecord], sent: list[str]
) -> None:
    sent.clear()

    trace = await trace_provenance(neo4j_store, "table")

    hops = max(step.hop for step in trace.chain)
    assert (trace.reason, hops) == ("reached ResearchGoal", 5)
    # The key's versions; the region (four levels) with the lock, alone in auto-commit; as
    # the walk goes past it, the walk again in a transaction: the region, the fifth hop, the
    # runs.
    assert len(sent) == 1 + 1 + 1 + (hops - traces.REGION_LEVELS) + 1
    assert _LOCKS not in sent[0]
    assert _LOCKS in sent[1]
    assert sent[2] == sent[1]
