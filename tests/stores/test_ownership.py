"""The port's ownership rule (SPEC §3.8), on every backend: ``put_node`` never replaces a node
of another session, also when both sessions create it at the same time."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from resolvers.errors import KeyOwnedByOtherSessionError
from resolvers.records import Label, NodeRecord, node_id, utc_now

if TYPE_CHECKING:
    from resolvers.store import GraphStore


def _code(session: str) -> NodeRecord:
    key = "exec-1"
    props = {"code_id": key, "tool": f"tool-{session}"}
    return NodeRecord(node_id(Label.CODE, key), Label.CODE, key, session, utc_now(), props)


async def test_a_concurrent_creator_from_another_session_is_refused(store: GraphStore) -> None:
    async def create_in_b() -> None:
        async with store.transaction("B") as tx:
            (seen,) = await tx.get_nodes([_code("B").id])
            assert seen is None or seen.session_id == "A"
            await tx.put_node(_code("B"))

    async with store.transaction("A") as tx:
        await tx.put_node(_code("A"))
        second = asyncio.create_task(create_in_b())
        await asyncio.sleep(0.2)  # B is now waiting for A's commit (lock or constraint)

    with pytest.raises(KeyOwnedByOtherSessionError) as refused:
        await second
    assert (refused.value.owner_session_id, refused.value.key) == ("A", "exec-1")
    (stored,) = await store.get_nodes([_code("A").id])
    assert stored is not None
    assert (stored.session_id, stored.get("tool")) == ("A", "tool-A")


async def test_the_owner_may_replace_its_node(store: GraphStore) -> None:
    async with store.transaction("A") as tx:
        await tx.put_node(_code("A"))

    async with store.transaction("A") as tx:
        await tx.put_node(_code("A").with_props(tool="other"))

    (stored,) = await store.get_nodes([_code("A").id])
    assert stored is not None
    assert stored.get("tool") == "other"
