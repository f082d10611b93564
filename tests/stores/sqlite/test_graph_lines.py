"""The whole graph as JSON lines: ``export-graph`` writes it, ``import-graph`` builds the
SQLite engine's graph of an empty directory from it, record for record."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import re
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.cli import main as cli
from gateway.settings import Settings
from gateway.stores.embedded import capture_embedded, export_graph, import_graph
from gateway.stores.file.store import FileStore
from gateway.stores.sqlite.migrate import build_database
from gateway.stores.sqlite.store import SqliteStore
from resolvers.cleanup import cleanup_session
from resolvers.records import EdgeRecord, EdgeType
from tests.model.streams import apply, streams
from tests.profiles import profile
from tests.stores.sqlite.test_migrate_log import normalised, write_log_store

if TYPE_CHECKING:
    from pathlib import Path

    from tests.model.streams import Op

ROUND_TRIP = profile("graph_lines", examples=15, long_examples=300)


async def test_an_exported_graph_imports_record_for_record(tmp_path: Path) -> None:
    expected = await write_log_store(tmp_path / "old")
    store = await SqliteStore.open(tmp_path / "old")  # migrated on open
    lines = tmp_path / "graph.jsonl"
    written = await export_graph(store, lines)
    await store.aclose()

    imported = await import_graph(tmp_path / "new", lines)
    fresh = await SqliteStore.open(tmp_path / "new")
    found = await capture_embedded(fresh)
    await fresh.aclose()

    assert written == imported == expected.record_count()
    assert normalised(found) == normalised(expected)


@ROUND_TRIP
@given(ops=streams(), cleanup=st.booleans())
async def test_every_graph_the_use_cases_write_imports_as_it_was(
    tmp_path_factory: pytest.TempPathFactory, ops: tuple[Op, ...], cleanup: bool
) -> None:
    """The checks of a line refuse nothing the use cases write: the generated sessions of the
    model suite (late, repeated and reordered events; scopes mirrored late or never), one of
    them cleaned up or not, export and import record for record."""
    directory = tmp_path_factory.mktemp("lines")
    store = await SqliteStore.open(directory / "old", fsync=False)
    try:
        applied = await apply(store, ops)
        if cleanup and applied.sessions:
            await cleanup_session(store, min(applied.sessions))
        lines = directory / "graph.jsonl"
        written = await export_graph(store, lines)
        expected = await capture_embedded(store)
    finally:
        await store.aclose()

    imported = await import_graph(directory / "new", lines, fsync=False)
    fresh = await SqliteStore.open(directory / "new", fsync=False)
    found = await capture_embedded(fresh)
    await fresh.aclose()

    assert written == imported
    assert normalised(found) == normalised(expected)


async def test_an_import_into_a_directory_holding_a_graph_is_refused(tmp_path: Path) -> None:
    await write_log_store(tmp_path / "graph")
    lines = tmp_path / "graph.jsonl"
    lines.write_text("")

    with pytest.raises(FileExistsError, match="already holds a graph"):
        await import_graph(tmp_path / "graph", lines)


async def test_a_bad_line_is_named_and_nothing_is_built(tmp_path: Path) -> None:
    lines = tmp_path / "graph.jsonl"
    lines.write_text('{"op": "q", "session": "s1", "value": 1}\n{"op": "zz"}\n')

    with pytest.raises(ValueError, match="line 2"):
        await import_graph(tmp_path / "graph", lines)

    assert not (tmp_path / "graph" / "graph.sqlite3").exists()


CREATED = "2026-01-01T00:00:00+00:00"


def node_line(
    node_id: str, *, created: str = CREATED, seq: Any = 0, props: Any = None, session: str = "s1"
) -> str:
    label, key = node_id.split(":", 1)
    record = {"op": "n", "id": node_id, "label": label, "key": key, "session": session}
    return json.dumps({**record, "created": created, "props": props or {}, "seq": seq})


def paper_line(session: str, link: str, props: dict[str, Any]) -> str:
    record = {"op": "n", "id": f"Paper:{session}|{link}", "label": "Paper", "key": link}
    return json.dumps({**record, "session": session, "created": CREATED, "props": props, "seq": 0})


STEP = {"chain_at": "2026-01-01T10:00:05.000000Z"}
SCOPE = "subtask:subagent:sa1"
SUBAGENT = {**STEP, "task_type": "subagent"}
CHILD = {**STEP, "parent_subtask_id": SCOPE}
TASK: dict[str, Any] = {}


@pytest.mark.parametrize(
    ("lines", "refusal"),
    [
        # Values a read would fail on: a GraphQL Int is 32-bit, a time compares with an offset.
        ([node_line("Artifact:a#v1", props={"artifact_id": "a", "version": 2**40})], "line 1"),
        ([node_line("Code:c"), node_line("ToolCall:subtask:c", seq=2**62)], "line 2: .*'seq'"),
        ([node_line("Code:c", seq=-1)], "line 1: .*'seq'"),
        ([node_line("Code:c", props={"sizes": [1, 2**31]})], "line 1: .*props.sizes"),
        (['{"op": "q", "session": "s1", "value": 4611686018427387904}'], "line 1: .*'value'"),
        ([node_line("Code:c", created="2026-01-01T00:00:00")], "line 1: .*no UTC offset"),
        ([node_line("Code:c", props={"tool": "\ud800"})], "line 1: props.tool: .*surrogate"),
        (
            [
                '{"op": "n", "id": "Code:c", "label": "Code", "key": "c", "session": "s1", '
                f'"created": "{CREATED}", "seq": 0, "props": {{"x": {"[" * 40 + "]" * 40}}}}}'
            ],
            "line 1: .*nested",
        ),
        (['{"op": "n", "props": ' + "[" * 5000 + "]" * 5000 + "}"], "line 1: .*Recursion"),
        # A node no id would find: its id is not its label's and key's.
        (
            [node_line("Code:c").replace('"key": "c"', '"key": "other"')],
            "line 1: .*'id' 'Code:c' is not 'Code:other'",
        ),
        ([node_line("Paper:https://x")], r"line 1: .*'id' 'Paper:https://x' is not 'Paper:s1\|"),
        # An artifact whose id and version name another version than its key.
        (
            [node_line("Artifact:chart#v1", props={"artifact_id": "zzz", "version": 1})],
            "line 1: .*'artifact_id' 'zzz' and 'version' 1 name 'zzz#v1', not its key 'chart#v1'",
        ),
        (
            [node_line("Artifact:chart#v1", props={"artifact_id": "chart", "version": 2})],
            "line 1: .*name 'chart#v2', not its key 'chart#v1'",
        ),
        (
            [node_line("Artifact:chart#v1", props={"artifact_id": "chart", "version": "1"})],
            r"line 1: .*'version' \(an integer\)",
        ),
        # Properties that say something else than the key: two reads would disagree.
        ([node_line("Artifact:chart#v1")], "line 1: .*an Artifact needs 'artifact_id'"),
        ([node_line("Code:e1", props={"code_id": "e999"})], "line 1: .*'code_id' 'e999'"),
        ([node_line("Task:subtask:subagent:a", props=TASK)], "line 1: .*'task_type' None"),
        ([node_line("Code:e1", seq=4)], "line 1: .*a Code is no step"),
        (
            [node_line("ToolCall:subtask:e2", seq=2, props={"chain_at": "not-a-date"})],
            "line 1: .*'chain_at' 'not-a-date' is not a time",
        ),
        ([node_line("ToolCall:subtask:e2", seq=2)], "line 1: .*'chain_at' None"),
        (
            [node_line("ToolCall:subtask:e1", seq=1, props={**STEP, "parent_subtask_id": SCOPE})],
            "line 1: .*'parent_subtask_id' 'subtask:subagent:sa1' is not the scope its key",
        ),
        (
            [
                node_line(
                    "ToolCall:subtask:subagent:sa1:exec:c1",
                    seq=1,
                    props={**STEP, "parent_subtask_id": "subtask:subagent:zzz"},
                )
            ],
            "line 1: .*'parent_subtask_id' 'subtask:subagent:zzz' is not the scope",
        ),
        (
            [node_line("Task:" + SCOPE, seq=1, props={**SUBAGENT, "parent_subtask_id": SCOPE})],
            "line 1: .*a subagent's scope has no 'parent_subtask_id'",
        ),
        # Keys the API refuses as ids: a lookup by key would read them as another node's.
        (
            [node_line("Artifact:fig#v2#v1", props={"artifact_id": "fig#v2", "version": 1})],
            r"line 1: 'artifact_id' 'fig#v2': must not end in #v<digits>",
        ),
        ([node_line("Code:goal:session:s1")], "line 1: the key 'goal:session:s1': .*goal's"),
        ([node_line("Code:mcp:q1")], "line 1: the key 'mcp:q1': must not begin with subagent:"),
        (
            [node_line("ToolCall:source_file:session:s1:a.csv")],
            "line 1: the key 'source_file:session:s1:a.csv': .*an upload's key",
        ),
        (
            [node_line("ToolCall:subtask:subagent:sa1:exec:c1", seq=1, props=STEP)],
            "line 1: the key 'subtask:subagent:sa1:exec:c1': .*a subagent's key",
        ),
        (
            [node_line("Task:sa1", props=SUBAGENT)],
            "line 1: .*a subagent's scope's key is subtask:subagent:<id>, not 'sa1'",
        ),
        (
            [node_line("Task:subtask:subagent:", props=SUBAGENT)],
            "line 1: .*the key 'subtask:subagent:' holds an empty id",
        ),
        (
            [node_line("Task:subtask:subagent: ", props=SUBAGENT)],
            "line 1: .*the key 'subtask:subagent: ' holds an empty id",
        ),
        (
            [node_line("Task:subtask:subagent:a\x01", props=SUBAGENT)],
            "line 1: .*the key 'subtask:subagent:a.x01'.*control",
        ),
        (
            [node_line(f"ToolCall:{SCOPE}:exec: ", props=CHILD)],
            "line 1: .*holds an empty id",
        ),
        # Whatever its seq, a tool call with a scope is a step of the scope its key names.
        *(
            (
                [node_line(f"ToolCall:{key}", props={**STEP, "parent_subtask_id": parent})],
                f"line 1: .*'parent_subtask_id' {parent!r} is not the scope its key",
            )
            for key, parent in [
                ("goal:session:s1", ""),
                ("subtask:subagent:x", SCOPE),
                ("subtask:subagent:sa1", "subtask:subagent:sa"),
                ("subtask:subagent:x:exec:c1", 123),
            ]
        ),
        # Edges between labels their type does not join, a chain's edge across sessions.
        (
            [
                node_line("ToolCall:subtask:e1", seq=1, props=STEP),
                node_line("Code:e1"),
                '{"op": "e", "type": "supersedes", "source": "ToolCall:subtask:e1", '
                '"target": "Code:e1"}',
            ],
            "line 3: the 'supersedes' edge does not go from ToolCall to Code",
        ),
        (
            [
                node_line("ToolCall:subtask:e1", seq=1, props=STEP),
                node_line("ToolCall:subtask:e2", seq=2, props=STEP, session="other"),
                '{"op": "e", "type": "next", "source": "ToolCall:subtask:e1", '
                '"target": "ToolCall:subtask:e2"}',
            ],
            "line 3: the 'next' edge joins two sessions",
        ),
        (
            [
                node_line("ToolCall:subtask:e1", seq=1, props=STEP),
                node_line("ToolCall:subtask:e2", seq=2, props=STEP),
                '{"op": "e", "type": "next", "source": "ToolCall:subtask:e2", '
                '"target": "ToolCall:subtask:e1"}',
            ],
            "line 3: the 'next' edge from 'ToolCall:subtask:e2' goes to 'ToolCall:subtask:e1', "
            "where its chain's order .* puts None",
        ),
        (
            [
                node_line("ToolCall:subtask:e1", seq=1, props=STEP),
                node_line(
                    "ToolCall:subtask:subagent:sa1:exec:c1",
                    seq=2,
                    props={**STEP, "parent_subtask_id": SCOPE},
                ),
                '{"op": "e", "type": "next", "source": "ToolCall:subtask:e1", '
                '"target": "ToolCall:subtask:subagent:sa1:exec:c1"}',
            ],
            "line 3: the 'next' edge from 'ToolCall:subtask:e1' goes to .*c1', where .* puts None",
        ),
        (  # forward, but past a step: the chain's edges and its order disagree
            [
                *(node_line(f"ToolCall:subtask:e{n}", seq=n, props=STEP) for n in (1, 2, 3)),
                '{"op": "e", "type": "next", "source": "ToolCall:subtask:e1", '
                '"target": "ToolCall:subtask:e3"}',
            ],
            "line 4: .*goes to 'ToolCall:subtask:e3', where .* puts 'ToolCall:subtask:e2'",
        ),
        (
            [
                node_line("Task:" + SCOPE, seq=1, props=SUBAGENT),
                *(node_line(f"ToolCall:{SCOPE}:exec:c{n}", seq=n + 1, props=CHILD) for n in (1, 2)),
                '{"op": "e", "type": "contains", "source": "Task:subtask:subagent:sa1", '
                '"target": "ToolCall:subtask:subagent:sa1:exec:c2"}',
            ],
            "line 4: the 'contains' edge .* puts 'ToolCall:subtask:subagent:sa1:exec:c1'",
        ),
        (
            [
                paper_line("s2", "https://x", {"link": "https://x"}),
                node_line("Evidence:ev1"),
                '{"op": "e", "type": "extracts", "source": "Paper:s2|https://x", '
                '"target": "Evidence:ev1"}',
            ],
            "line 3: the 'extracts' edge joins two sessions",
        ),
        (
            [node_line("SourceFile:source_file:session:s2:a.csv")],
            "line 1: .*names another session than 's1'",
        ),
        ([paper_line("s1", "https://x", {"link": "https://y"})], "line 1: .*'link' 'https://y'"),
        (
            [
                node_line("ToolCall:subtask:e1", seq=1, props=STEP),
                node_line("Code:e2"),
                '{"op": "e", "type": "produces", "source": "ToolCall:subtask:e1", '
                '"target": "Code:e2"}',
            ],
            "line 3: the step 'subtask:e1' does not run the code 'e2'",
        ),
        (
            [
                node_line("Artifact:a#v1", props={"artifact_id": "a", "version": 1}),
                node_line("Artifact:a#v2", props={"artifact_id": "a", "version": 2}),
                '{"op": "e", "type": "supersedes", "source": "Artifact:a#v1", '
                '"target": "Artifact:a#v2"}',
            ],
            "line 3: 'a#v1' does not supersede 'a#v2'",
        ),
        # An edge whose end no line defines, in either order.
        (
            [
                node_line("Code:c"),
                '{"op": "e", "type": "produces", "source": "Code:c", "target": "Artifact:x#v1"}',
            ],
            "line 2: an edge to 'Artifact:x#v1'",
        ),
    ],
)
async def test_a_record_no_read_could_take_is_named_and_nothing_is_built(
    tmp_path: Path, lines: list[str], refusal: str
) -> None:
    source = tmp_path / "graph.jsonl"
    source.write_text("\n".join(lines) + "\n")

    with pytest.raises(ValueError, match=refusal) as refused:
        await import_graph(tmp_path / "graph", source)

    assert not (tmp_path / "graph").exists()  # made for the import: nothing of it stays
    # A check's refusal in its own words; only what cannot be read at all is "not a record".
    assert ("not a graph record" in str(refused.value)) == ("Recursion" in refusal)


# Keys an older version wrote, of forms the API refuses in new ids since.
OLD_KEYS = [
    node_line("ToolCall:e0", seq=1, props=STEP),  # a taskId not beginning subtask:
    node_line("Code:fig#v1"),  # an executionId ending in a version suffix
    node_line("Code:Paper:x"),  # an executionId of a global id's form
    node_line("Task:subtask:subagent:sa:exec:e1", seq=2, props=SUBAGENT),
]


@pytest.mark.parametrize("line", OLD_KEYS)
async def test_a_key_an_older_version_wrote_is_kept_when_asked_for(
    tmp_path: Path, line: str
) -> None:
    # Refused by default, saying how to keep it; kept as written with ``old_key_forms``.
    source = tmp_path / "graph.jsonl"
    source.write_text(line + "\n")
    record = json.loads(line)

    with pytest.raises(ValueError, match=r"line 1: .*--old-key-forms"):
        await import_graph(tmp_path / "graph", source)
    await import_graph(tmp_path / "graph", source, old_key_forms=True)
    store = await SqliteStore.open(tmp_path / "graph")
    (node,) = await store.get_nodes([record["id"]])
    await store.aclose()

    assert node is not None
    assert (node.key, node.seq) == (record["key"], record["seq"])


def test_the_import_command_keeps_old_key_forms_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(data_dir=tmp_path, file_engine="sqlite")
    monkeypatch.setattr(cli, "load_settings", lambda: settings)
    source = tmp_path / "graph.jsonl"
    source.write_text("\n".join(OLD_KEYS) + "\n")

    refused = cli.main(["import-graph", str(source)])
    message = capsys.readouterr().err
    kept = cli.main(["import-graph", "--old-key-forms", str(source)])

    assert (refused, kept) == (1, 0)
    assert "line 1: the key 'e0': must begin with subtask:" in message
    assert "imported" in capsys.readouterr().out
    assert (tmp_path / "graph" / "graph.sqlite3").exists()


async def test_an_import_keeps_the_edges_in_line_order_and_counts_on_past_every_step(
    tmp_path: Path,
) -> None:
    steps = [node_line(f"ToolCall:subtask:e{n}", seq=n, props=STEP) for n in (1, 2, 3)]
    codes = [node_line(f"Code:e{n}") for n in (1, 2, 3)]
    edges = [
        ("produces", "ToolCall:subtask:e2", "Code:e2"),
        ("next", "ToolCall:subtask:e1", "ToolCall:subtask:e2"),
        ("produces", "ToolCall:subtask:e1", "Code:e1"),
        ("next", "ToolCall:subtask:e2", "ToolCall:subtask:e3"),
        ("produces", "ToolCall:subtask:e3", "Code:e3"),
    ]
    edge_lines = [
        json.dumps({"op": "e", "type": kind, "source": a, "target": b, "props": {}})
        for kind, a, b in edges
    ]
    source = tmp_path / "graph.jsonl"
    source.write_text("\n".join([*steps, *codes, *edge_lines]) + "\n")  # no counter line

    await import_graph(tmp_path / "graph", source)
    store = await SqliteStore.open(tmp_path / "graph")
    found = await capture_embedded(store)
    await store.aclose()

    assert [(e.type.value, e.source, e.target) for e in found.edges] == edges
    assert found.seq == {"s1": 3}


async def test_a_database_build_that_fails_leaves_no_partial_file(tmp_path: Path) -> None:
    captured = await write_log_store(tmp_path / "old")
    dangling = EdgeRecord(EdgeType.PRODUCES, "Code:nowhere", "Artifact:nowhere#v1", {})
    broken = dataclasses.replace(captured, edges=[*captured.edges, dangling])
    (tmp_path / "new").mkdir()

    with pytest.raises(KeyError):
        build_database(tmp_path / "new", broken, fsync=False, origin="test")

    assert list((tmp_path / "new").iterdir()) == []


async def test_the_commands_round_trip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = await write_log_store(tmp_path / "a" / "graph")
    settings = Settings(data_dir=tmp_path / "a", file_engine="sqlite")
    monkeypatch.setattr(cli, "load_settings", lambda: settings)
    lines = tmp_path / "graph.jsonl"

    exported = await asyncio.to_thread(cli.main, ["export-graph", "--output", str(lines)])
    settings = dataclasses.replace(settings, data_dir=tmp_path / "b")
    imported = await asyncio.to_thread(cli.main, ["import-graph", str(lines)])
    again = await asyncio.to_thread(cli.main, ["import-graph", str(lines)])
    store = await SqliteStore.open(tmp_path / "b" / "graph")
    found = await capture_embedded(store)
    await store.aclose()

    assert (exported, imported, again) == (0, 0, 1)
    assert "already holds a graph" in capsys.readouterr().err
    assert normalised(found) == normalised(expected)


def strict(text: str) -> Any:
    """``json.loads`` refusing the bare ``NaN``/``Infinity`` tokens, as ``JSON.parse`` does."""

    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


async def test_a_stored_non_finite_value_is_exported_as_null(tmp_path: Path) -> None:
    await write_log_store(tmp_path / "old")
    store = await FileStore.open(tmp_path / "old")
    goal_id = "ResearchGoal:goal:session:s1"
    (goal,) = await store.get_nodes([goal_id])
    assert goal is not None
    odd = {"score": math.nan, "range": [1.5, -math.inf]}
    async with store.transaction("s1") as tx:
        await tx.put_node(dataclasses.replace(goal, props={**goal.props, **odd}))
    lines = tmp_path / "graph.jsonl"

    await export_graph(store, lines)
    await store.aclose()
    imported = await import_graph(tmp_path / "new", lines)
    fresh = await SqliteStore.open(tmp_path / "new")
    (found,) = await fresh.get_nodes([goal_id])
    await fresh.aclose()

    records = [strict(line) for line in lines.read_text().splitlines()]
    (written,) = [record for record in records if record.get("id") == goal_id]
    assert {name: written["props"][name] for name in odd} == {"score": None, "range": [1.5, None]}
    assert imported == len(records)
    assert found is not None
    assert (found.get("score"), found.get("range")) == (None, [1.5, None])


GOAL_LINE = (
    '{"op": "n", "id": "ResearchGoal:goal:session:s1", "label": "ResearchGoal", '
    '"key": "goal:session:s1", "session": "s1", "created": "2026-01-01T00:00:00+00:00", '
    '"props": %s, "seq": 0}'
)


@pytest.mark.parametrize(
    ("props", "field"),
    [
        ('{"score": NaN}', "props.score"),
        ('{"range": [1.5, -Infinity]}', "props.range[1]"),
        ('{"m": {"deep": [1e400]}}', "props.m.deep[0]"),
    ],
)
async def test_an_import_holding_a_non_finite_number_names_line_and_field(
    tmp_path: Path, props: str, field: str
) -> None:
    lines = tmp_path / "graph.jsonl"
    lines.write_text('{"op": "q", "session": "s1", "value": 1}\n' + GOAL_LINE % props + "\n")

    with pytest.raises(ValueError, match=rf"line 2: {re.escape(field)}: must be a finite number"):
        await import_graph(tmp_path / "graph", lines)

    assert not (tmp_path / "graph" / "graph.sqlite3").exists()


def test_the_import_command_says_which_line_holds_a_non_finite_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = tmp_path / "graph.jsonl"
    lines.write_text(GOAL_LINE % '{"score": Infinity}' + "\n")
    settings = Settings(data_dir=tmp_path / "data", file_engine="sqlite")
    monkeypatch.setattr(cli, "load_settings", lambda: settings)

    code = cli.main(["import-graph", str(lines)])

    assert code == 1
    assert "line 1: props.score: must be a finite number" in capsys.readouterr().err
    assert not (tmp_path / "data" / "graph" / "graph.sqlite3").exists()
