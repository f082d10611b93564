"""Each root field answers for its own work (SPEC §6, §8): when the time budget runs out while
a root field waits for a heavy-reader slot, or anywhere in its selection (a relationship field
of a node in a list, a non-null list inside a node), that root field answers its
``QueryLimitExceeded`` member and the other root fields of the document keep their answers.

The store is slowed where a test needs it: its reads of one kind block until the test ends.
"""

from __future__ import annotations

import asyncio
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from gateway.observability.metrics import Metrics
from gateway.schema import build_schema
from gateway.schema.limits import Limits
from gateway.schema.observability import Observer
from resolvers.errors import QueryLimitExceededError
from resolvers.records import Backend, Direction, EdgeType
from resolvers.store import SessionPageReader
from tests import builders as b
from tests.conftest import GraphQLClient
from tests.timing import once_within

if TYPE_CHECKING:
    from collections.abc import Callable

    import pytest

    from gateway.runtime.state import Runtime

LIMIT = "QUERY_LIMIT_EXCEEDED"
# Seconds: the blocked reads outlast it; the others fit in it (Neo4j's round trips in 3 s, an
# embedded store's reads in 1.5 s: each test waits its budget out once).
NEO4J_BUDGET = 3.0
EMBEDDED_BUDGET = 1.5
HANG = 20  # seconds: a document still running after this never stopped at its budget
TYPED = "__typename ... on Error { code message }"
EXCEEDED = {"__typename": "QueryLimitExceeded", "code": LIMIT}


def client(runtime: Runtime, **limits: Any) -> GraphQLClient:
    return GraphQLClient(build_schema(Limits(**limits)), runtime)


class Held:
    """Reads of the store that match ``blocks`` wait until ``release``; the others pass.

    ``uninterruptible``: a blocked read goes on when its query is cancelled, as a read in a
    worker thread does, so its query holds a heavy-reader slot past its own budget."""

    def __init__(
        self,
        runtime: Runtime,
        monkeypatch: pytest.MonkeyPatch,
        name: str,
        blocks: Callable[..., bool],
        *,
        uninterruptible: bool = False,
    ) -> None:
        self.entered = asyncio.Event()
        self._released = asyncio.Event()
        store = runtime.graph_store  # what the resolvers are given
        real = getattr(store, name)

        async def held(*args: Any, **kwargs: Any) -> Any:
            if blocks(*args, **kwargs):
                self.entered.set()
                while not self._released.is_set():
                    try:
                        await self._released.wait()
                    except asyncio.CancelledError:
                        if not uninterruptible:
                            raise
            return await real(*args, **kwargs)

        monkeypatch.setattr(store, name, held)
        # A store's consistent view reads on its own connection: read through the store here.
        monkeypatch.setattr(store, "consistent_view", lambda: nullcontext(store), raising=False)

    def release(self) -> None:
        self._released.set()


def expanding(edge_type: EdgeType, direction: Direction) -> Callable[..., bool]:
    """Whether a call of ``expand(ids, edge_type, direction)`` is that walk."""
    return lambda _ids, walked, towards, *rest, **kwargs: (
        (walked, towards)
        == (
            edge_type,
            direction,
        )
    )


def typed(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer without its message (checked on its own where it matters)."""
    return {name: value for name, value in answer.items() if name != "message"}


async def session_with_code(gql: GraphQLClient) -> None:
    written = [await b.first_message(gql, "s1"), await b.execution(gql, "s1", "e1", 1)]
    assert [answer["__typename"] for answer in written] == ["Observed", "Observed"]


async def run_held(held: Held, document: str, gql: GraphQLClient) -> Any:
    try:
        return await once_within(HANG, gql.raw(document))
    finally:
        held.release()


# --- the heavy-reader pool ------------------------------------------------------------------


def holding(*args: Any, **kwargs: Any) -> bool:
    """Whether a subgraph's first read (``page_read``) is the slot holder's
    (``hold_every_slot``)."""
    return kwargs.get("session_id", args[0] if args else None) == "held"


def budget(runtime: Runtime) -> float:
    return NEO4J_BUDGET if runtime.graph_store.backend is Backend.NEO4J else EMBEDDED_BUDGET


def page_read(runtime: Runtime) -> str:
    """The read a subgraph makes first: a whole page (``SessionPageReader``), or the listing."""
    return "session_page" if isinstance(runtime.graph_store, SessionPageReader) else "list_nodes"


async def hold_every_slot(gql: GraphQLClient, held: Held) -> asyncio.Future[Any]:
    """A heavy query holding the pool's only slot, its read blocked by ``held``."""
    holder = asyncio.ensure_future(
        gql.raw('{ subgraph(sessionId: "held") { ... on Subgraph { nodes { id } } } }')
    )
    await once_within(HANG, held.entered.wait())
    return holder


async def test_a_heavy_root_field_that_waits_out_its_budget_answers_and_its_siblings_too(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    gql = client(runtime, heavy_readers=1, heavy_cost=100, query_timeout_seconds=budget(runtime))
    await session_with_code(gql)
    held = Held(runtime, monkeypatch, page_read(runtime), holding, uninterruptible=True)
    document = f"""{{ health {{ __typename }}
      node(nodeId: "Code:e1") {{ __typename ... on Code {{ id }} }}
      big: subgraph(sessionId: "s1") {{ {TYPED} ... on Subgraph {{ nodes {{ id }} }} }} }}"""

    holder = await hold_every_slot(gql, held)
    result = await run_held(held, document, gql)
    await holder

    assert result.errors is None
    assert result.data["health"] == {"__typename": "Health"}
    assert result.data["node"] == {"__typename": "Code", "id": "Code:e1"}
    assert typed(result.data["big"]) == EXCEEDED
    assert "large queries" in result.data["big"]["message"]


async def test_an_in_session_search_answers_while_every_heavy_slot_is_held(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    gql = client(runtime, heavy_readers=1, query_timeout_seconds=budget(runtime))
    await session_with_code(gql)
    held = Held(runtime, monkeypatch, page_read(runtime), holding, uninterruptible=True)
    document = f"""{{
      inSession: searchNodes(query: "python", sessionId: "s1", labels: [CODE], first: 1) {{
        {TYPED} ... on NodeList {{ total nodes {{ id }} }} }}
      everywhere: searchNodes(query: "python", first: 1) {{ {TYPED} }} }}"""

    holder = await hold_every_slot(gql, held)
    result = await run_held(held, document, gql)
    await holder

    assert result.errors is None
    assert result.data["inSession"] == {
        "__typename": "NodeList",
        "total": 1,
        "nodes": [{"id": "Code:e1"}],
    }
    # A search over every session still reads every session's index: it waits for a slot.
    assert typed(result.data["everywhere"]) == EXCEEDED


# --- the budget runs out below a root field ---------------------------------------------------


async def test_a_relationship_field_of_a_search_result_that_runs_out_answers_at_the_root(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    gql = client(runtime, query_timeout_seconds=budget(runtime))
    await session_with_code(gql)
    held = Held(runtime, monkeypatch, "expand", expanding(EdgeType.PRODUCES, Direction.IN))
    document = f"""{{ health {{ __typename }}
      found: searchNodes(query: "python", sessionId: "s1", labels: [CODE]) {{ {TYPED}
        ... on NodeList {{ nodes {{ id ... on Code {{ producedBy {{ id }} }} }} }} }} }}"""

    result = await run_held(held, document, gql)

    assert result.errors is None
    assert result.data["health"] == {"__typename": "Health"}
    assert typed(result.data["found"]) == EXCEEDED
    assert "time budget" in result.data["found"]["message"]


async def test_a_non_null_list_inside_a_subgraph_node_that_runs_out_answers_at_the_root(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    gql = client(runtime, query_timeout_seconds=budget(runtime))
    await session_with_code(gql)
    held = Held(runtime, monkeypatch, "expand", expanding(EdgeType.INPUT, Direction.IN))
    document = f"""{{ node(nodeId: "Code:e1") {{ __typename ... on Code {{ id }} }}
      subgraph(sessionId: "s1") {{ {TYPED}
        ... on Subgraph {{ nodes {{ id ... on Code {{ inputs {{ id }} }} }} }} }} }}"""

    result = await run_held(held, document, gql)

    assert result.errors is None
    assert result.data["node"] == {"__typename": "Code", "id": "Code:e1"}
    assert typed(result.data["subgraph"]) == EXCEEDED


async def test_a_node_whose_relationship_runs_out_answers_query_limit_exceeded(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    gql = client(runtime, query_timeout_seconds=budget(runtime))
    await session_with_code(gql)
    held = Held(runtime, monkeypatch, "expand", expanding(EdgeType.PRODUCES, Direction.IN))
    document = f"""{{ session(sessionId: "s1") {{ __typename }}
      node(nodeId: "Code:e1") {{ {TYPED} ... on Code {{ producedBy {{ id }} }} }} }}"""

    result = await run_held(held, document, gql)

    assert result.errors is None
    assert result.data["session"] == {"__typename": "Session"}
    assert typed(result.data["node"]) == EXCEEDED


async def test_a_nested_field_over_a_store_limit_answers_at_the_root_not_as_null(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    gql = client(runtime, query_timeout_seconds=budget(runtime))
    await session_with_code(gql)
    store = runtime.graph_store
    real_expand = store.expand

    async def slow_statement(ids: Any, edge_type: EdgeType, direction: Direction) -> Any:
        if (edge_type, direction) == (EdgeType.PRODUCES, Direction.IN):
            raise QueryLimitExceededError("The Neo4j query took too long.")
        return await real_expand(ids, edge_type, direction)

    monkeypatch.setattr(store, "expand", slow_statement)
    document = f"""{{ health {{ __typename }}
      found: nodesByType(labels: [CODE], sessionId: "s1") {{ {TYPED}
        ... on NodeList {{ nodes {{ id ... on Code {{ producedBy {{ id }} }} }} }} }} }}"""

    result = await once_within(HANG, gql.raw(document))

    # ``producedBy`` is nullable: a null there would read as "no producing step".
    assert result.errors is None
    assert result.data["health"] == {"__typename": "Health"}
    assert result.data["found"] == {**EXCEEDED, "message": "The Neo4j query took too long."}


async def test_an_answer_made_below_the_resolver_is_counted_as_query_limit_exceeded(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    metrics = Metrics()
    schema = build_schema(Limits(query_timeout_seconds=budget(runtime)), Observer(metrics=metrics))
    gql = GraphQLClient(schema, runtime)
    await session_with_code(gql)
    held = Held(runtime, monkeypatch, "expand", expanding(EdgeType.PRODUCES, Direction.IN))
    document = """query Late { node(nodeId: "Code:e1") {
      __typename ... on Code { producedBy { id } } } }"""

    result = await run_held(held, document, gql)

    assert result.data == {"node": {"__typename": "QueryLimitExceeded"}}
    labels = {"operation_type": "query", "operation_name": "Late"}
    counted = metrics.registry.get_sample_value(
        "science_memory_graphql_requests_total", {**labels, "outcome": "QueryLimitExceeded"}
    )
    assert counted == 1


async def test_the_same_document_within_its_budget_answers_in_full(
    runtime: Runtime,
) -> None:
    gql = client(runtime, query_timeout_seconds=10.0)
    await session_with_code(gql)
    links = "... on Code { producedBy { id } inputs { id } }"
    document = f"""{{ found: searchNodes(query: "python", sessionId: "s1", labels: [CODE]) {{
        {TYPED} ... on NodeList {{ nodes {{ id {links} }} }} }} }}"""

    result = await gql.raw(document)

    assert result.errors is None
    assert result.data["found"] == {
        "__typename": "NodeList",
        "nodes": [{"id": "Code:e1", "producedBy": {"id": "ToolCall:subtask:e1"}, "inputs": []}],
    }
