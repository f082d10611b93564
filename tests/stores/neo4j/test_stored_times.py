"""A node's ``created_at`` reads back as it was written, whatever its offset or zone.

Reads project a time with a fixed offset as ISO text (``cypher.NODE``) and parse it; any other
time (a named zone, none at all) comes through the driver's types as before. Both paths are
checked against the value written: the same instant, the same offset, and ``UTC`` itself for
a zero offset (as ``records.to_node`` gives it).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING

from hypothesis import given
from hypothesis import strategies as st

from resolvers.records import Label
from tests.profiles import profile
from tests.stores.neo4j.conftest import make_node

if TYPE_CHECKING:
    from gateway.stores.neo4j import Neo4jStore

SETTINGS = profile("neo4j-stored-times", 25, 300)

# Offsets in whole minutes (Neo4j reads no seconds in an offset), times whose UTC instant
# stays within the years both Python and the driver hold.
OFFSETS = st.integers(-14 * 60, 14 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))
FIXED = st.builds(
    lambda at, offset: at.replace(tzinfo=UTC).astimezone(offset),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.one_of(st.just(UTC), OFFSETS),
)


async def _round_trip(store: Neo4jStore, at: datetime) -> datetime:
    node = replace(make_node(Label.PAPER, "https://doi.org/10.1/t", title="A time"), created_at=at)
    async with store.transaction(node.session_id) as tx:
        await tx.put_node(node)
    (stored,) = await store.get_nodes([node.id])
    assert stored is not None
    page = await store.list_nodes(session_id=node.session_id, limit=10)
    assert [found.created_at for found in page.items] == [stored.created_at]
    return stored.created_at


def _same(read: datetime, written: datetime) -> bool:
    return read == written and read.utcoffset() == written.utcoffset()


@SETTINGS
@given(at=FIXED)
async def test_a_time_with_a_fixed_offset_reads_back_with_its_offset(
    neo4j_store: Neo4jStore, at: datetime
) -> None:
    read = await _round_trip(neo4j_store, at)

    assert _same(read, at), (read, at)
    if at.utcoffset() == timedelta(0):
        assert read.tzinfo is UTC


async def test_a_time_without_an_offset_reads_back(neo4j_store: Neo4jStore) -> None:
    naive = datetime(2026, 6, 1, 9, 30, 15, 250000)

    read = await _round_trip(neo4j_store, naive)

    assert read == naive
    assert read.tzinfo is None


async def test_a_time_stored_in_a_named_zone_reads_back_in_that_zone(
    neo4j_store: Neo4jStore,
) -> None:
    # Written by Cypher: the gateway makes no such time, and the driver is not trusted with one
    # (its conversion of a ``zoneinfo`` time crashed the process in a run of this file).
    await _round_trip(neo4j_store, datetime(2026, 1, 1, tzinfo=UTC))
    await neo4j_store._write(
        "MATCH (n:Paper) SET n.created_at = datetime({year: 2026, month: 6, day: 1, hour: 9, "
        "minute: 30, timezone: 'Europe/Berlin'})",
        10.0,
    )

    (node,) = (await neo4j_store.list_nodes(session_id="s1", limit=10)).items
    read = node.created_at

    assert read == datetime(2026, 6, 1, 7, 30, tzinfo=UTC)
    assert read.utcoffset() == timedelta(hours=2)
    assert "Berlin" in str(read.tzinfo)
