"""Rows to records: ``node_of`` and ``edge_of`` build the records the constructors build, and a
row read again unchanged is not decoded again (``Decoded``)."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime
from typing import Any

import pytest

from gateway.stores.sqlite.schema import (
    Decoded,
    decoded_node,
    edge_from,
    edge_of,
    node_of,
    node_values,
    props_text,
)
from resolvers.records import EdgeRecord, EdgeType, Label, NodeRecord


def test_a_node_row_reads_back_as_the_record_written() -> None:
    written = NodeRecord(
        "Task:t1",
        Label.TASK,
        "t1",
        "s1",
        datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        {"objective": "ünïcode", "n": 2**70, "x": 0.1, "nested": {"a": [1, None]}},
        7,
    )
    values = node_values(written)

    read = node_of((1, *values[:7]))  # the columns NODE_COLUMNS reads, after ``rid``

    assert read == written
    assert [getattr(read, f.name) for f in dataclasses.fields(NodeRecord)] == [
        getattr(written, f.name) for f in dataclasses.fields(NodeRecord)
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.seq = 8  # type: ignore[misc]


def test_an_edge_row_reads_back_as_the_record_written() -> None:
    plain = EdgeRecord(EdgeType.NEXT, "Task:a", "Task:b")
    valued = EdgeRecord(EdgeType.PRODUCES, "Task:a", "Code:c", {"nan": math.inf, "k": "v"})

    for written in (plain, valued):
        columns = (written.type.value, written.source, written.target, props_text(written.props))
        read = edge_of((1, *columns))  # the columns EDGE_COLUMNS reads, after ``rid``

        assert read == written
        assert type(read) is EdgeRecord
        assert edge_from(*columns) == written
        assert edge_of((1, *columns)) is read  # the same row again: the same record


def _row(rid: int, content: str) -> tuple[Any, ...]:
    written = NodeRecord("Claim:c", Label.CLAIM, "c", "s1", datetime(2026, 1, 1, tzinfo=UTC))
    return (rid, *node_values(written.with_props(content=content))[:7])


def _text(row: tuple[Any, ...]) -> int:
    return len(row[6])


def test_a_row_read_again_unchanged_is_not_decoded_again() -> None:
    decoded = Decoded(4, decoded_node, _text, 10**6)
    row = _row(1, "alpha")

    first = decoded.record_of(row)
    again = decoded.record_of(tuple(list(row)))  # an equal row, as a new read gives it

    assert again is first


def test_a_changed_row_under_the_same_rid_is_decoded_afresh() -> None:
    decoded = Decoded(4, decoded_node, _text, 10**6)
    decoded.record_of(_row(1, "alpha"))

    changed = decoded.record_of(_row(1, "beta"))
    back = decoded.record_of(_row(1, "alpha"))

    assert changed.props == {"content": "beta"}
    assert back.props == {"content": "alpha"}


def test_the_oldest_rows_go_past_the_capacity() -> None:
    decoded = Decoded(2, decoded_node, _text, 10**6)
    first, second, third = (decoded.record_of(_row(rid, f"n{rid}")) for rid in (1, 2, 3))

    assert decoded.record_of(_row(3, "n3")) is third
    assert decoded.record_of(_row(2, "n2")) is second
    assert decoded.record_of(_row(1, "n1")) is not first  # dropped: decoded again
    assert decoded.record_of(_row(1, "n1")) == first


def test_the_oldest_rows_go_past_the_weight_of_their_text() -> None:
    # Three rows of long text weigh more than the bound: the oldest goes, however few.
    decoded = Decoded(100, decoded_node, _text, 2_500)
    first, second, third = (decoded.record_of(_row(rid, "x" * 1_000)) for rid in (1, 2, 3))

    assert decoded.record_of(_row(3, "x" * 1_000)) is third
    assert decoded.record_of(_row(2, "x" * 1_000)) is second
    assert decoded.record_of(_row(1, "x" * 1_000)) is not first
