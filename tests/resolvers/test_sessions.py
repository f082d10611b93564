"""A session exists while it holds a live node (SPEC §2: a scope, not a node)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from resolvers.cleanup import cleanup_project
from resolvers.errors import InvalidInputError, NodeNotFoundError
from resolvers.sessions import get_session
from tests.resolvers import builders as b

if TYPE_CHECKING:
    from resolvers.store import GraphStore


async def test_a_session_with_a_node_is_found(store: GraphStore) -> None:
    await b.upload(store, "data.csv")

    found = await get_session(store, b.S1)

    assert found == b.S1


async def test_a_session_without_nodes_is_not_found(store: GraphStore) -> None:
    await b.upload(store, "data.csv", session="other")

    with pytest.raises(NodeNotFoundError) as caught:
        await get_session(store, b.S1)

    assert caught.value.node_id == b.S1


async def test_a_deleted_session_is_not_found(store: GraphStore) -> None:
    await b.goal(store)
    await cleanup_project(store, "p", [b.S1])

    with pytest.raises(NodeNotFoundError):
        await get_session(store, b.S1)


async def test_a_blank_session_id_is_invalid_input(store: GraphStore) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await get_session(store, " ")

    assert caught.value.field == "sessionId"
