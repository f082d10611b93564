"""What a load reads back: each line checked as strictly as it is written, every value as it was
written, and repeated strings held once."""

from __future__ import annotations

import math
import zlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from gateway.stores.file.framing import decode_line
from gateway.stores.file.store import FileStore
from resolvers.records import EdgeRecord, EdgeType, Label, NodeRecord

if TYPE_CHECKING:
    from pathlib import Path

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PAYLOAD = '{"op":"n","title":"Über 研究"}'.encode()
CRC = f"{zlib.crc32(PAYLOAD):08x}".encode()
NOT_UTF8 = b"\xff"


def code(name: str, **props: object) -> NodeRecord:
    return NodeRecord(f"Code:{name}", Label.CODE, name, "s1", T0, props)


async def reopened_after(tmp_path: Path, *, snapshot: bool, write: list[NodeRecord]) -> FileStore:
    store = await FileStore.open(tmp_path)
    async with store.transaction("s1") as tx:
        for node in write:
            await tx.put_node(node)
        await tx.put_edge(EdgeRecord(EdgeType.FEEDS, write[0].id, write[1].id))
    if snapshot:
        await store.snapshot()
    await store.aclose()
    return await FileStore.open(tmp_path)


def test_a_line_reads_back_as_its_payload() -> None:
    assert decode_line(CRC + b" " + PAYLOAD + b"\n") == PAYLOAD


@pytest.mark.parametrize(
    "line",
    [
        CRC.upper() + b" " + PAYLOAD + b"\n",  # the checksum is written in lower case
        CRC[1:] + b"  " + PAYLOAD + b"\n",
        CRC + b"\t" + PAYLOAD + b"\n",
        CRC + b" " + PAYLOAD,  # torn: no newline
        CRC + b" " + PAYLOAD[:-1] + b"\n",
        b"",
        b"\n",
        f"{zlib.crc32(NOT_UTF8):08x} ".encode() + NOT_UTF8 + b"\n",  # right checksum, not UTF-8
    ],
    ids=[
        "upper-case",
        "short-checksum",
        "tab",
        "torn",
        "wrong-checksum",
        "empty",
        "newline",
        "not-utf8",
    ],
)
def test_a_line_that_would_not_have_been_written_so_is_refused(line: bytes) -> None:
    assert decode_line(line) is None


@pytest.mark.parametrize("snapshot", [False, True], ids=["log", "snapshot"])
async def test_values_read_back_exactly_as_they_were_written(
    tmp_path: Path, snapshot: bool
) -> None:
    # Integers past 64 bits and the non-finite floats the standard encoder writes.
    unusual = code("a", huge=2**70, tiny=-(2**70), infinite=math.inf, text="Über 研究 😀")
    plain = code("b", title="x")

    store = await reopened_after(tmp_path, snapshot=snapshot, write=[unusual, plain])
    nodes = await store.get_nodes([unusual.id, plain.id])
    await store.aclose()

    assert nodes == [unusual, plain]
    assert nodes[0] is not None
    assert type(nodes[0].props["huge"]) is int


async def test_a_load_holds_repeated_strings_once(tmp_path: Path) -> None:
    first, second = code("a", status="succeeded"), code("b", status="succeeded")

    store = await reopened_after(tmp_path, snapshot=True, write=[first, second])
    a, b = await store.get_nodes([first.id, second.id])
    [edge] = await store.edges_among([first.id, second.id])
    await store.aclose()

    assert a is not None
    assert b is not None
    assert a.props["status"] is b.props["status"]
    assert a.session_id is b.session_id
    assert (edge.source, edge.target) == (a.id, b.id)
    assert edge.source is a.id
    assert edge.target is b.id
