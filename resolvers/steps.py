"""Incremental upkeep of the step chains (SPEC §3.3).

A session's main chain (goal → top-level tool calls and subagent scopes) and each scope's chain
(scope -contains-> first child -next-> …) are ordered by ``(chain_at, seq)``. Inserting a step
touches only its two neighbours, found by the store's chain index in O(log n): the edge between
them is replaced by two edges through the new step. A goal or scope that arrives after its
steps is attached to the current head.
"""

from __future__ import annotations

from resolvers.records import Direction, EdgeType, Label, NodeRecord, node_id
from resolvers.writes import CHAIN_START, Writer

MAIN_CHAIN = {"method": "temporal_chain", "inferred": True, "basis": "seq"}
SCOPE_CHAIN = {"method": "scope_chain", "inferred": True, "basis": "seq"}
IN, NEXT, CONTAINS = Direction.IN, EdgeType.NEXT, EdgeType.CONTAINS


# The start of a subagent's scope's key and of its steps' (SPEC §2).
SCOPE_PREFIX = "subtask:subagent:"
CHILD_SEPARATOR = ":exec:"  # a subagent's step: <its scope's key>:exec:<ref>


def scope_key(subagent_id: str) -> str:
    return SCOPE_PREFIX + subagent_id


def child_key(subagent_id: str, ref: str) -> str:
    return f"{scope_key(subagent_id)}{CHILD_SEPARATOR}{ref}"


def position(step: NodeRecord) -> tuple[str, int]:
    return str(step.get("chain_at")), step.seq


async def place_step(writer: Writer, step: NodeRecord, before: NodeRecord | None) -> None:
    """Link a step just merged into its chain: a new one (``before`` is ``None``) is inserted;
    a re-observed one whose position changed is unlinked from its old place (two edges: it has
    one predecessor and one successor) and inserted at the new one. O(log n) either way."""
    if before is None:
        await insert_step(writer, step)
    elif position(before) != position(step) and not await _stays(writer, step):
        await unlink_step(writer, step)
        await insert_step(writer, step)


async def _stays(writer: Writer, step: NodeRecord) -> bool:
    """Whether a re-observed step's new position is still between the steps it is linked to:
    then its edges stay as they are (unlinked and linked again, they would be new edges)."""
    scope = step.get("parent_subtask_id")
    before, after = await writer.tx.chain_neighbours(step.session_id, scope, position(step))
    goal = f"{Label.RESEARCH_GOAL.value}:"
    linked_before = [
        n
        for n in await writer.neighbours(step.id, EdgeType.NEXT, Direction.IN)
        if not n.startswith(goal)
    ]
    linked_after = await writer.neighbours(step.id, EdgeType.NEXT, Direction.OUT)
    return linked_before == ([before.id] if before else []) and linked_after == (
        [after.id] if after else []
    )


async def unlink_step(writer: Writer, step: NodeRecord) -> None:
    """Take a step out of its chain: its predecessor (a step, the goal, or its scope) then
    leads to its successor."""
    scope = step.get("parent_subtask_id")
    props = SCOPE_CHAIN if scope else MAIN_CHAIN
    after = await writer.neighbours(step.id, EdgeType.NEXT, Direction.OUT)
    before = [(EdgeType.NEXT, n) for n in await writer.neighbours(step.id, EdgeType.NEXT, IN)]
    if scope:
        before += [(EdgeType.CONTAINS, n) for n in await writer.neighbours(step.id, CONTAINS, IN)]
    for target in after:
        await writer.disconnect(EdgeType.NEXT, step.id, target)
    for edge_type, source in before:
        await writer.disconnect(edge_type, source, step.id)
        for target in after:
            await writer.connect(edge_type, source, target, props if edge_type is NEXT else None)


async def insert_step(writer: Writer, step: NodeRecord) -> None:
    """Link a newly created step between its chain neighbours."""
    scope = step.get("parent_subtask_id")
    before, after = await writer.tx.chain_neighbours(step.session_id, scope, position(step))
    props = SCOPE_CHAIN if scope else MAIN_CHAIN
    if before is not None and after is not None:
        await writer.disconnect(EdgeType.NEXT, before.id, after.id)
    if before is not None:
        await writer.connect(EdgeType.NEXT, before.id, step.id, props)
    else:
        await _move_head(writer, step, after)
    if after is not None:
        await writer.connect(EdgeType.NEXT, step.id, after.id, props)


async def _move_head(writer: Writer, head: NodeRecord, old_head: NodeRecord | None) -> None:
    scope = head.get("parent_subtask_id")
    owners = await _owners(writer, head.session_id, scope)
    edge_type = EdgeType.CONTAINS if scope else EdgeType.NEXT
    props = None if scope else MAIN_CHAIN
    for owner in owners:
        if old_head is not None:
            await writer.disconnect(edge_type, owner, old_head.id)
        await writer.connect(edge_type, owner, head.id, props)


async def _owners(writer: Writer, session_id: str, scope: str | None) -> list[str]:
    if scope is not None:
        scope_id = node_id(Label.TASK, scope)
        (node,) = await writer.tx.get_nodes([scope_id])
        # Another session's scope of the same subagent id never contains this session's steps.
        return [scope_id] if node is not None and node.session_id == session_id else []
    goals = await writer.tx.list_nodes(
        labels=[Label.RESEARCH_GOAL], session_id=session_id, limit=16
    )
    return [goal.id for goal in goals.items]


async def attach_main_head(writer: Writer, goal: NodeRecord) -> None:
    """A goal that arrives after the session's steps points at the current head."""
    _, head = await writer.tx.chain_neighbours(goal.session_id, None, CHAIN_START)
    if head is not None:
        await writer.connect(EdgeType.NEXT, goal.id, head.id, MAIN_CHAIN)


async def attach_scope_head(writer: Writer, scope: NodeRecord) -> None:
    """A scope that arrives after its children contains the first of them."""
    _, head = await writer.tx.chain_neighbours(scope.session_id, scope.key, CHAIN_START)
    if head is not None:
        await writer.connect(EdgeType.CONTAINS, scope.id, head.id)
