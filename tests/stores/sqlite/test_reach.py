"""SqliteStore walks to the nearest target (``ReachReader``): one statement, the same chains.

Every comparison runs the same use case twice on the same SQLite data: on the store (which
offers ``ReachReader``, so a variable hop reads all its levels in one statement) and on the
store with ``reach`` hidden (so the use case asks ``expand`` and ``get_nodes`` per level).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from gateway.live.bus import EventBus
from gateway.live.publishing import PublishingStore
from gateway.stores.file.store import FileStore
from resolvers.chains import ChainKind, chain_exists, get_chain
from resolvers.records import Direction, EdgeRecord, EdgeType, Label, NodeRecord, node_id
from resolvers.store import ReachReader
from tests.stores.neo4j.test_walks import live_nodes, provenance_graph, scopes

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from gateway.stores.sqlite.store import SqliteStore
    from resolvers.store import GraphReader

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class _Primitives:
    """A store without ``reach``: the use cases walk level by level over its primitives."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name == "reach":
            raise AttributeError(name)
        return getattr(self._store, name)


def primitives(store: SqliteStore) -> GraphReader:
    walker = cast("GraphReader", _Primitives(store))
    assert isinstance(store, ReachReader)
    assert not isinstance(walker, ReachReader)
    return walker


def make_node(
    label: Label, key: str, session: str = "s1", *, seq: int = 0, **props: Any
) -> NodeRecord:
    return NodeRecord(node_id(label, key, session), label, key, session, T0, props, seq)


async def test_every_chain_kind_walks_as_the_primitives_do(sqlite_store: SqliteStore) -> None:
    await provenance_graph(sqlite_store)  # type: ignore[arg-type]
    graph = await live_nodes(sqlite_store)  # type: ignore[arg-type]
    walker = primitives(sqlite_store)
    reached: set[ChainKind] = set()

    for kind in ChainKind:
        for node in graph:
            for session_id in scopes(node):
                native = await get_chain(sqlite_store, node.id, kind, session_id=session_id)
                generic = await get_chain(walker, node.id, kind, session_id=session_id)

                assert native == generic, (kind, node.id, session_id)
                exists = await chain_exists(sqlite_store, node.id, [kind], session_id=session_id)
                assert exists == {kind: bool(generic.nodes)}, (kind, node.id, session_id)
                if native.nodes:
                    reached.add(kind)

    assert reached == set(ChainKind)


async def test_walks_agree_on_edges_the_write_path_never_builds(
    sqlite_store: SqliteStore,
) -> None:
    goal = make_node(Label.RESEARCH_GOAL, "goal:session:s1")
    other_goal = make_node(Label.RESEARCH_GOAL, "goal:other")
    elsewhere = make_node(Label.RESEARCH_GOAL, "goal:s2", "s2")
    first = make_node(Label.TOOL_CALL, "subtask:1", seq=1)
    deleted = make_node(Label.TOOL_CALL, "subtask:2", seq=2, deleted_session="s1")
    last = make_node(Label.TOOL_CALL, "subtask:3", seq=3)
    branch = make_node(Label.TOOL_CALL, "subtask:4", seq=4)
    made = make_node(Label.CODE, "c")
    figure = make_node(Label.ARTIFACT, "fig#v1", artifact_id="fig", version=1)
    # Two ways to the goal from ``end``: the walk keeps the one through the edge stored first.
    end, left, right, top = (make_node(Label.TOOL_CALL, f"d:{n}", seq=9 + n) for n in range(4))
    nodes = [goal, other_goal, elsewhere, first, deleted, last, branch, made, figure]
    nodes += [end, left, right, top]
    edges = [
        (goal, EdgeType.NEXT, first),
        (first, EdgeType.NEXT, deleted),
        (deleted, EdgeType.NEXT, last),
        (last, EdgeType.PRODUCES, made),
        (made, EdgeType.PRODUCES, figure),
        (other_goal, EdgeType.NEXT, made),  # a way back through a node an earlier hop reached
        (made, EdgeType.NEXT, last),
        (made, EdgeType.PRODUCES, last),
        (elsewhere, EdgeType.NEXT, branch),  # the nearest goal is another session's
        (first, EdgeType.NEXT, branch),
        (branch, EdgeType.NEXT, first),  # a cycle
        (last, EdgeType.NEXT, branch),
        (left, EdgeType.NEXT, end),
        (right, EdgeType.NEXT, end),
        (top, EdgeType.NEXT, right),
        (top, EdgeType.NEXT, left),
        (goal, EdgeType.NEXT, top),
    ]
    async with sqlite_store.transaction() as tx:
        for node in nodes:
            await tx.put_node(node)
        for source, edge_type, target in edges:
            await tx.put_edge(EdgeRecord(edge_type, source.id, target.id))
    walker = primitives(sqlite_store)
    walked = 0

    for node in nodes:
        if node.deleted:
            continue
        for kind in ChainKind:
            for session_id in (None, node.session_id):
                native = await get_chain(sqlite_store, node.id, kind, session_id=session_id)
                generic = await get_chain(walker, node.id, kind, session_id=session_id)

                assert native == generic, (kind, node.id, session_id)
                exists = await chain_exists(sqlite_store, node.id, [kind], session_id=session_id)
                assert exists == {kind: bool(generic.nodes)}, (kind, node.id, session_id)
                walked += bool(native.nodes) and kind is ChainKind.VIEW_GOAL

    assert walked >= 5
    diamond = await get_chain(sqlite_store, end.id, ChainKind.VIEW_GOAL)
    assert {node.id for node in diamond.nodes} == {end.id, left.id, top.id, goal.id}
    assert (await get_chain(sqlite_store, figure.id, ChainKind.VIEW_RELATED_TASK)).nodes == []


async def chain_of_steps(store: SqliteStore, count: int) -> tuple[NodeRecord, list[NodeRecord]]:
    """The goal and ``count`` steps after it, each joined to the one before by ``next``."""
    steps = [make_node(Label.TOOL_CALL, f"subtask:{n}", seq=n) for n in range(1, count + 1)]
    goal = make_node(Label.RESEARCH_GOAL, "goal:session:s1")
    async with store.transaction() as tx:
        for node in (goal, *steps):
            await tx.put_node(node)
        for before, after in zip((goal, *steps), steps, strict=False):
            await tx.put_edge(EdgeRecord(EdgeType.NEXT, before.id, after.id))
    return goal, steps


async def test_a_walk_to_the_goal_reads_one_statement(sqlite_store: SqliteStore) -> None:
    goal, steps = await chain_of_steps(sqlite_store, 40)
    statements: list[str] = []
    for worker in (sqlite_store._point, *sqlite_store._db.workers):
        worker.connection.set_trace_callback(statements.append)

    chain = await get_chain(sqlite_store, steps[-1].id, ChainKind.VIEW_GOAL)

    assert {node.id for node in chain.nodes} == {goal.id} | {step.id for step in steps}
    # The source, then the walk (not two per step), in one read transaction.
    reads = [s for s in statements if s not in ("BEGIN", "ROLLBACK")]
    assert len(reads) <= 2, statements
    assert len(statements) - len(reads) <= 2, statements


async def test_whether_a_walk_to_the_goal_leads_there_is_asked_without_reading_the_walk(
    sqlite_store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, steps = await chain_of_steps(sqlite_store, 40)

    async def unread(*args: object, **kwargs: object) -> None:
        raise AssertionError("the walk was read")

    monkeypatch.setattr(sqlite_store, "reach", unread)
    kinds = [ChainKind.VIEW_GOAL, ChainKind.VIEW_RELATED_TASK]

    found = await chain_exists(sqlite_store, steps[-1].id, kinds)
    async with sqlite_store.transaction() as tx:
        await tx.put_node(make_node(Label.TOOL_CALL, "subtask:20", seq=20, deleted_session="s1"))
    cut = await chain_exists(sqlite_store, steps[-1].id, kinds)

    assert found == {ChainKind.VIEW_GOAL: True, ChainKind.VIEW_RELATED_TASK: False}
    assert cut == {ChainKind.VIEW_GOAL: False, ChainKind.VIEW_RELATED_TASK: False}


async def test_the_gateway_wrapper_keeps_reach(sqlite_store: SqliteStore, tmp_path: Path) -> None:
    file_store = await FileStore.open(tmp_path / "file", fsync=False)
    try:
        assert isinstance(PublishingStore(sqlite_store, EventBus()), ReachReader)
        assert not isinstance(PublishingStore(file_store, EventBus()), ReachReader)
    finally:
        await file_store.aclose()


async def test_reach_walks_on_only_through_live_nodes_of_the_session(
    sqlite_store: SqliteStore,
) -> None:
    goal = make_node(Label.RESEARCH_GOAL, "goal:session:s1")
    start = make_node(Label.TOOL_CALL, "subtask:9", seq=9)
    deleted = make_node(Label.TOOL_CALL, "subtask:2", seq=2, deleted_session="s1")
    foreign = make_node(Label.TOOL_CALL, "subtask:3", "s2", seq=3)
    step = make_node(Label.TOOL_CALL, "subtask:1", seq=1)
    behind = make_node(Label.TOOL_CALL, "subtask:0", seq=1)
    unrelated = make_node(Label.TOOL_CALL, "subtask:7", seq=7)
    edges = [
        (deleted, start),
        (foreign, start),
        (step, start),
        (goal, step),
        (behind, deleted),
        (behind, foreign),
        (behind, goal),
        (unrelated, behind),
    ]
    async with sqlite_store.transaction() as tx:
        for node in (goal, start, deleted, foreign, step, behind, unrelated):
            await tx.put_node(node)
        for source, target in edges:
            await tx.put_edge(EdgeRecord(EdgeType.NEXT, source.id, target.id))
    stop = frozenset({Label.RESEARCH_GOAL})

    found, far = await sqlite_store.reach(
        [start.id], EdgeType.NEXT, Direction.IN, stop=stop, session_id="s1"
    )
    anywhere, _ = await sqlite_store.reach(
        [start.id], EdgeType.NEXT, Direction.IN, stop=stop, session_id=None
    )

    # Not on through the soft-deleted step, the other session's, nor past the goal.
    assert [(e.source, e.target) for e in found] == [
        (deleted.id, start.id),
        (foreign.id, start.id),
        (step.id, start.id),
        (goal.id, step.id),
    ]
    assert {node.id for node in far} == {deleted.id, foreign.id, step.id, goal.id}
    assert (behind.id, foreign.id) in [(e.source, e.target) for e in anywhere]
    assert (unrelated.id, behind.id) in [(e.source, e.target) for e in anywhere]
