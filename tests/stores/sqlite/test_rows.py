"""Rows to records: ``node_of`` and ``edge_of`` build the records the constructors build."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime

import pytest

from gateway.stores.sqlite.schema import edge_of, node_of, node_values, props_text
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
        read = edge_of(
            (written.type.value, written.source, written.target, props_text(written.props))
        )

        assert read == written
        assert type(read) is EdgeRecord
