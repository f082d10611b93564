"""Damaged files stop the start with a message naming the file, the byte offset and the fix;
the snapshot cadence survives restarts.

Records are written here with their own checksum (valid framing, bad content), built without
the code under test, so only the content check can refuse them.
"""

from __future__ import annotations

import json
import logging
import re
import zlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
from starlette.testclient import TestClient

from gateway.http.app import create_app
from gateway.runtime.state import Runtime, StateFileError
from gateway.settings import FILE_ENGINES, Settings
from gateway.stores.file.framing import CorruptLogError
from gateway.stores.file.store import FileStore
from resolvers.records import Label, NodeRecord
from tests.http.live import LOCAL_URL

if TYPE_CHECKING:
    from pathlib import Path

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NODE = {
    "op": "n",
    "id": "Code:c1",
    "label": "Code",
    "key": "c1",
    "session": "s1",
    "created": T0.isoformat(),
    "props": {},
    "seq": 0,
}


def line(payload: bytes) -> bytes:
    return f"{zlib.crc32(payload):08x} ".encode() + payload + b"\n"


def record(*ops: dict[str, object]) -> bytes:
    return line(json.dumps({"at": T0.isoformat(), "ops": list(ops)}).encode())


def node(name: str) -> NodeRecord:
    return NodeRecord(f"Code:{name}", Label.CODE, name, "s1", T0, {})


def snapshot_names(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.glob("snapshot.*.jsonl"))


async def write_nodes(store: FileStore, *names: str) -> None:
    for name in names:
        async with store.transaction("s1") as tx:
            await tx.put_node(node(name))


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (line(b"not json"), "JSONDecodeError"),
        (line(b'{"at": "2026-01-01"}'), "the field 'ops' is missing"),
        (record({**NODE, "label": "Bogus"}), "unknown label 'Bogus'"),
        (record({k: v for k, v in NODE.items() if k != "key"}), "the field 'key' is missing"),
        (record({**NODE, "created": "yesterday"}), "ValueError"),
        (record({**NODE, "props": ["not", "an", "object"]}), "props"),
        (record({"op": "zz"}), "unknown op 'zz'"),
    ],
    ids=["not-json", "no-ops", "bad-label", "no-key", "bad-date", "bad-props", "bad-op"],
)
async def test_a_log_record_with_a_valid_checksum_but_bad_content_names_file_offset_and_fix(
    tmp_path: Path, bad: bytes, problem: str
) -> None:
    good = record(NODE)
    content = good + bad + record({**NODE, "id": "Code:c2"})
    (tmp_path / "log.00000000.jsonl").write_bytes(content)

    with pytest.raises(CorruptLogError) as raised:
        await FileStore.open(tmp_path)

    message = str(raised.value)
    assert f"{tmp_path / 'log.00000000.jsonl'} at byte offset {len(good)} " in message
    assert problem in message
    assert f"truncate -s {len(good)} " in message
    assert (tmp_path / "log.00000000.jsonl").read_bytes() == content  # nothing was cut


async def test_a_snapshot_line_with_bad_content_names_the_snapshot_and_its_offset(
    tmp_path: Path,
) -> None:
    good = line(json.dumps(NODE).encode())
    bad = line(json.dumps({**NODE, "label": 7}).encode())
    trailer = line(b'{"snapshot_end": 2}')
    (tmp_path / "snapshot.00000000.jsonl").write_bytes(good + bad + trailer)

    with pytest.raises(CorruptLogError) as raised:
        await FileStore.open(tmp_path)

    message = str(raised.value)
    assert f"{tmp_path / 'snapshot.00000000.jsonl'} holds a record at byte offset {len(good)}" in (
        message
    )
    assert "restore it from a backup" in message


async def test_a_store_that_failed_to_open_can_be_opened_again_once_repaired(
    tmp_path: Path,
) -> None:
    good = record(NODE)
    path = tmp_path / "log.00000000.jsonl"
    path.write_bytes(good + line(b"not json"))
    with pytest.raises(CorruptLogError):
        await FileStore.open(tmp_path)

    path.write_bytes(good)  # what the message says: cut the file at the offset
    store = await FileStore.open(tmp_path)
    nodes = await store.get_nodes(["Code:c1"])
    await store.aclose()

    assert [n.id for n in nodes if n is not None] == ["Code:c1"]


async def test_the_snapshot_cadence_counts_the_ops_of_earlier_runs(tmp_path: Path) -> None:
    for run in range(4):  # 4 runs of 3 ops each; a snapshot is due after 10 ops
        store = await FileStore.open(tmp_path, snapshot_every=10)
        await write_nodes(store, *(f"r{run}n{i}" for i in range(3)))
        await store.aclose()

    assert snapshot_names(tmp_path) == ["snapshot.00000000.jsonl"]


async def test_no_snapshot_is_due_before_the_threshold_across_restarts(tmp_path: Path) -> None:
    for run in range(3):  # 9 ops in all, the threshold is 10
        store = await FileStore.open(tmp_path, snapshot_every=10)
        await write_nodes(store, *(f"r{run}n{i}" for i in range(3)))
        await store.aclose()

    assert snapshot_names(tmp_path) == []


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"enabled": fals', r"not valid JSON at byte offset 12 \(line 1, column 13"),
        ("[1, 2]", "must hold a JSON object, not list"),
        ('{"enabled": "yes"}', "'enabled' must be true or false, not str"),
        ('{"backend": "sqlite"}', "'backend' must be one of \\['file', 'neo4j'\\], not 'sqlite'"),
        ('{"neo4j_password": 5}', "'neo4j_password' must be a string or null, not int"),
        (b"\xff\xfe{}", "not UTF-8 text"),
    ],
    ids=["truncated", "not-object", "enabled", "backend", "password", "not-utf8"],
)
async def test_a_damaged_gateway_json_stops_the_start_naming_the_file_and_the_fix(
    tmp_path: Path, content: str | bytes, problem: str
) -> None:
    state = tmp_path / "gateway.json"
    if isinstance(content, bytes):
        state.write_bytes(content)
    else:
        state.write_text(content, encoding="utf-8")

    with pytest.raises(StateFileError) as raised:
        await Runtime.start(Settings(data_dir=tmp_path))

    message = str(raised.value)
    assert message.startswith(f"{state}")
    assert re.search(problem, message)
    assert "delete it to return to the settings of the environment" in message


@pytest.mark.parametrize("engine", FILE_ENGINES)
def test_the_server_logs_one_clear_line_when_it_cannot_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, engine: str
) -> None:
    """The log engine refuses the damaged log; SQLite (the default) refuses to migrate it."""
    good = record(NODE)
    (tmp_path / "graph").mkdir()
    (tmp_path / "graph" / "log.00000000.jsonl").write_bytes(good + line(b"{}"))
    app = create_app(Settings(data_dir=tmp_path, file_engine=engine))

    with pytest.raises(CorruptLogError), TestClient(base_url=LOCAL_URL, app=app):
        pass

    critical = [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]
    assert len(critical) == 1
    assert critical[0].startswith("cannot start: the record in ")
    assert f"log.00000000.jsonl at byte offset {len(good)}" in critical[0]


async def test_a_snapshot_with_a_bad_checksum_is_reported_with_what_to_restore(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = await FileStore.open(tmp_path)
    await write_nodes(store, "a")
    await store.snapshot()  # covers generation 0 and deletes its log
    await write_nodes(store, "b")
    await store.aclose()
    snapshot = tmp_path / "snapshot.00000000.jsonl"
    damaged = bytearray(snapshot.read_bytes())
    damaged[12] ^= 1
    snapshot.write_bytes(bytes(damaged))

    with pytest.raises(CorruptLogError) as raised:
        await FileStore.open(tmp_path)

    assert f"ignoring incomplete or corrupt snapshot {snapshot}" in caplog.text
    assert "log generation 00000000 is missing" in str(raised.value)
    assert "or the snapshot covering it if one was reported damaged, from a backup" in str(
        raised.value
    )
