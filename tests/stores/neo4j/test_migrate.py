"""``migrate --to neo4j`` copies a file store into Neo4j, idempotently."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from gateway.cli.main import main
from gateway.stores.file.store import FileStore
from gateway.stores.migrate import migrate_to_neo4j
from resolvers import chains
from resolvers.chains import ChainKind
from resolvers.events import (
    Event,
    ExecutionObserved,
    FirstMessageObserved,
    PaperProduct,
    ProducedArtifact,
    SubagentObserved,
    ToolCallObserved,
)
from resolvers.observe import APPLY
from resolvers.subgraph import session_subgraph
from tests.stores.neo4j.conftest import open_store

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from gateway.stores.neo4j import Neo4jStore
    from resolvers.store import GraphStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _events() -> list[Event]:
    def execution(number: int, parent: str | None = None) -> ExecutionObserved:
        finished = T0 + timedelta(seconds=10 * number)
        return ExecutionObserved(
            session_id="m1",
            execution_id=f"m-exec-{number}",
            turn_id="t",
            tool="run_python",
            code_hash=f"h{number}",
            status="succeeded",
            started_at=finished,
            finished_at=finished,
            produced_artifacts=(ProducedArtifact("m-fig", number),),
            parent_subagent_id=parent,
        )

    return [
        FirstMessageObserved(session_id="m1", goal_id="goal:session:m1", core_objective="m"),
        execution(1),
        execution(2),
        SubagentObserved(
            session_id="m1",
            subagent_id="m-sub",
            turn_id="t",
            objective="o",
            started_at=T0 + timedelta(seconds=25),
            status="running",
        ),
        execution(3, parent="m-sub"),
        ToolCallObserved(
            session_id="m1",
            task_id="subtask:mcp:m-search",
            turn_id="t",
            tool_name="search",
            tool_type="search",
            retrieved_at=T0 + timedelta(seconds=40),
            products=(PaperProduct("doi:10.1/M", title="M"),),
        ),
    ]


async def _shape(store: GraphStore) -> tuple[set[tuple[str, str, int]], set[tuple[str, str, str]]]:
    graph = await session_subgraph(store, "m1", first=5000, fold=False)
    keys = {node.id: node.key for node in graph.nodes}
    nodes = {(node.label.value, node.key, node.seq) for node in graph.nodes}
    edges = {(edge.type.value, keys[edge.source], keys[edge.target]) for edge in graph.edges}
    return nodes, edges


async def _file_store(tmp_path: Path) -> FileStore:
    store = await FileStore.open(tmp_path / "graph")
    for event in _events():
        await APPLY[type(event)](store, event)
    return store


async def test_a_migrated_store_answers_like_the_file_store(
    neo4j_store: Neo4jStore, tmp_path: Path
) -> None:
    source = await _file_store(tmp_path)

    report = await migrate_to_neo4j(source.capture(), neo4j_store, batch=3)
    expected, got = await _shape(source), await _shape(neo4j_store)
    chain_file = await chains.get_chain(source, "m-fig", ChainKind.VIEW_RELATED_TASK)
    chain_neo4j = await chains.get_chain(neo4j_store, "m-fig", ChainKind.VIEW_RELATED_TASK)
    await source.aclose()

    assert report.nodes_after == report.nodes > 0
    assert got == expected
    assert {n.id for n in chain_neo4j.nodes} == {n.id for n in chain_file.nodes}


async def test_a_second_migration_changes_nothing_and_seq_continues(
    neo4j_store: Neo4jStore, tmp_path: Path
) -> None:
    source = await _file_store(tmp_path)
    await migrate_to_neo4j(source.capture(), neo4j_store)
    first = await _shape(neo4j_store)

    second = await migrate_to_neo4j(source.capture(), neo4j_store)
    again = await _shape(neo4j_store)
    await source.aclose()
    async with neo4j_store.transaction("m1") as tx:
        next_seq = await tx.next_seq("m1")
    highest = max(seq for _, _, seq in first[0])

    assert second.nodes_before == second.nodes_after
    assert again == first
    assert next_seq > highest


async def _prepare(tmp_path: Path, connection: dict[str, str]) -> None:
    source = await _file_store(tmp_path)
    await source.aclose()
    target = await open_store(connection)
    await target.wipe()
    await target.aclose()


def test_the_command_reports_what_it_copied(
    connection: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    asyncio.run(_prepare(tmp_path, connection))
    monkeypatch.setenv("SCIENCE_AGENT_MEMORY_GRAPH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SCIENCE_AGENT_MEMORY_GRAPH_NEO4J_PASSWORD", connection["password"])

    code = main(
        ["migrate", "--to", "neo4j", "--uri", connection["uri"], "--user", connection["user"]]
    )
    output = capsys.readouterr()

    assert code == 0
    assert "copied" in output.out
    assert "100%" in output.err
