"""The chain index primitive the trace's runs use: ``chain_before`` (resolvers.store)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from resolvers.provenance import position
from resolvers.records import Label
from tests.resolvers.builders import S1, execution, scope_id, subagent

if TYPE_CHECKING:
    from resolvers.store import GraphStore


async def test_members_before_a_position_come_nearest_first_by_label(store: GraphStore) -> None:
    await execution(store, "e1", 10)
    await subagent(store, "sub", 20)
    await execution(store, "e2", 30)
    await execution(store, "e3", 40)
    (last,) = await store.get_nodes(["ToolCall:subtask:e3"])
    (first,) = await store.get_nodes(["ToolCall:subtask:e1"])
    assert last is not None
    assert first is not None

    every = await store.chain_before(S1, None, position(last))
    tasks = await store.chain_before(S1, None, position(last), label=Label.TASK)
    nearest = await store.chain_before(S1, None, position(last), limit=1)
    between = await store.chain_before(S1, None, position(last), after=position(first))
    none = await store.chain_before(S1, None, position(last), label=Label.CODE)

    assert [n.id for n in every] == ["ToolCall:subtask:e2", scope_id("sub"), "ToolCall:subtask:e1"]
    assert [n.id for n in tasks] == [scope_id("sub")]
    assert [n.id for n in nearest] == ["ToolCall:subtask:e2"]
    assert [n.id for n in between] == ["ToolCall:subtask:e2", scope_id("sub")]
    assert none == []


async def test_a_scope_chain_is_its_own_index(store: GraphStore) -> None:
    await execution(store, "main", 5)
    await execution(store, "c1", 11, scope="sub")
    await execution(store, "c2", 12, scope="sub")
    (child,) = await store.get_nodes(["ToolCall:subtask:subagent:sub:exec:c2"])
    assert child is not None

    found = await store.chain_before(S1, "subtask:subagent:sub", position(child))

    assert [n.id for n in found] == ["ToolCall:subtask:subagent:sub:exec:c1"]
