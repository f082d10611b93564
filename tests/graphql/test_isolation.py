"""Isolation (SPEC §8): the cost limit, hostile documents, and reads that yield while they run.

Cost is computed before anything runs (``gateway.schema.cost``): list sizes times selections times
aliases, with a lower limit for the read token. Large lists are serialised in steps
(``gateway.schema.pacing``), so other work runs while a heavy read is answered.
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import graphql
import strawberry.schema.schema

from gateway.schema import build_schema
from gateway.schema import pacing as schema_pacing
from gateway.schema.cost import heavy_fields, root_costs
from gateway.schema.limits import MAX_FRAGMENT_NESTING, MAX_REPEATED_FIELD, Limits
from resolvers.records import Backend
from resolvers.store import SessionPageReader
from tests import builders as b
from tests.conftest import GraphQLClient
from tests.timing import once_within

if TYPE_CHECKING:
    import pytest

    from gateway.runtime.state import Runtime
    from resolvers.store import GraphStore

LIMIT = "QUERY_LIMIT_EXCEEDED"


def client(runtime: Runtime, **limits: Any) -> GraphQLClient:
    return GraphQLClient(build_schema(Limits(**limits)), runtime)


def codes(result: Any) -> list[str | None]:
    return [(error.extensions or {}).get("code") for error in result.errors or ()]


def aliases_of_subgraph(count: int, first: int) -> str:
    selection = "{ ... on Subgraph { nodes { id } } }"
    fields = " ".join(
        f'a{i}: subgraph(sessionId: "s1", first: {first}) {selection}' for i in range(count)
    )
    return "{ " + fields + " }"


def spread_chain(depth: int) -> str:
    fragments = " ".join(f"fragment F{i} on Query {{ ...F{i + 1} }}" for i in range(depth))
    return f"{{ ...F0 }} {fragments} fragment F{depth} on Query {{ __typename }}"


# --- cost ----------------------------------------------------------------------------------


async def test_thirty_aliases_of_a_large_subgraph_are_refused_before_anything_runs(
    gql: GraphQLClient,
) -> None:
    result = await gql.raw(aliases_of_subgraph(30, 5000))

    assert result.data is None
    assert codes(result) == [LIMIT]


async def test_thirty_aliases_of_a_trace_are_refused_since_its_path_grows_with_the_chain(
    gql: GraphQLClient,
) -> None:
    step = "{ node { id excerpt properties } }"
    selection = f"{{ ... on ProvenanceTrace {{ path {step} chain {step} }} }}"
    fields = " ".join(f'a{i}: traceProvenance(nodeId: "fig") {selection}' for i in range(30))

    result = await gql.raw("{ " + fields + " }")

    assert result.data is None
    assert codes(result) == [LIMIT]


async def test_one_default_subgraph_is_within_the_cost_limit(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")

    result = await gql.raw(aliases_of_subgraph(1, 500))

    assert result.errors is None


async def test_the_read_token_has_the_lower_cost_limit(runtime: Runtime) -> None:
    gql = client(runtime, max_cost=1000, max_cost_read=100)
    document = aliases_of_subgraph(1, 200)  # 1 + 200 nodes * (1 + id) = 401

    as_writer = await gql.raw(document)
    as_reader = await gql.raw(document, can_write=False)

    assert codes(as_writer) == []
    assert codes(as_reader) == [LIMIT]


async def test_a_page_size_given_as_a_variable_counts(runtime: Runtime) -> None:
    gql = client(runtime, max_cost=1000)
    document = (
        'query($n: Int) { subgraph(sessionId: "s1", first: $n) '
        "{ ... on Subgraph { nodes { id } } } }"
    )

    small = await gql.raw(document, n=10)
    large = await gql.raw(document, n=5000)

    assert codes(small) == []
    assert codes(large) == [LIMIT]


HEAVY_COST = Limits().heavy_cost
SEARCH = "searchNodes(query: $q, sessionId: $s, first: 1) { ... on NodeList { nodes { id } } }"


def costs_of(document: str, **variables: Any) -> dict[str, int]:
    return root_costs(build_schema()._schema, graphql.parse(document), None, variables)


RECALL = (
    '{ recall(topic: "tp53"%s) { ... on Recall { groups { type total records { id tags } } } } }'
)


def test_recall_costs_its_records_per_type_its_default_included() -> None:
    # 4 groups * (1 + type + total + records * (1 + id + tags * 1)), tags unsized (50).
    def expected(per_type: int) -> int:
        return 1 + 4 * (1 + 1 + 1 + per_type * (1 + 1 + 50))

    assert costs_of(RECALL % "") == {"recall": expected(10)}  # limitPerType: Int = 10
    assert costs_of(RECALL % ", limitPerType: 100") == {"recall": expected(100)}


async def test_an_ordinary_recall_is_within_the_read_tokens_cost_limit(runtime: Runtime) -> None:
    result = await client(runtime).raw(RECALL % "", can_write=False)

    assert codes(result) == []


def test_a_search_in_one_session_costs_its_page_and_one_over_every_session_is_heavy() -> None:
    document = f"query($q: String!, $s: String) {{ {SEARCH} }}"

    in_session = costs_of(document, q="tp53", s="s1")["searchNodes"]
    everywhere = costs_of(document, q="tp53", s=None)["searchNodes"]
    literal = costs_of('{ searchNodes(query: "tp53", sessionId: "s1", first: 1) { __typename } }')

    assert in_session < 10
    assert literal["searchNodes"] < 10
    assert everywhere > HEAVY_COST


def test_edges_over_every_session_are_heavy_and_of_one_session_cost_their_page() -> None:
    selection = "{ ... on EdgeList { edges { type } } }"

    everywhere = costs_of(f"{{ edgesByType(types: [NEXT], first: 1) {selection} }}")
    in_session = costs_of(
        f'{{ edgesByType(types: [NEXT], sessionId: "s1", first: 1) {selection} }}'
    )

    assert everywhere["edgesByType"] > HEAVY_COST
    assert in_session["edgesByType"] < 10


def test_each_root_field_has_its_own_cost_fragments_on_the_root_included() -> None:
    document = """{ health { status } ...Big } fragment Big on Query {
      big: subgraph(sessionId: "s1", first: 10) { ... on Subgraph { nodes { id } } } }"""

    costs = costs_of(document)

    assert costs == {"health": 1 + 1, "big": 1 + 10 * (1 + 1)}


def test_the_cheapest_root_fields_up_to_the_heavy_cost_run_without_a_slot() -> None:
    assert heavy_fields({"a": 400, "b": 300, "c": 500}, 1000) == {"c"}
    assert heavy_fields({"health": 2, "big": 1001}, 1000) == {"big"}
    assert heavy_fields({"a": 400, "b": 600}, 1000) == frozenset()
    assert heavy_fields({"a": 1001, "b": 1001}, 1000) == {"a", "b"}


# --- hostile documents ----------------------------------------------------------------------


async def test_a_deep_chain_of_fragment_spreads_is_a_limit_not_a_recursion_error(
    gql: GraphQLClient,
) -> None:
    result = await gql.raw(spread_chain(250))

    assert LIMIT in codes(result)
    assert not any("recursion" in error.message for error in result.errors or ())


async def test_fragment_spreads_at_the_nesting_limit_run(gql: GraphQLClient) -> None:
    result = await gql.raw(spread_chain(MAX_FRAGMENT_NESTING - 1))

    assert result.errors is None
    assert result.data == {"__typename": "Query"}


async def test_a_fragment_cycle_is_a_validation_error(gql: GraphQLClient) -> None:
    result = await gql.raw("{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }")

    assert result.errors
    assert any("Cannot spread fragment" in error.message for error in result.errors)


async def test_two_operations_without_an_operation_name_are_refused(gql: GraphQLClient) -> None:
    document = "query A { __typename } query B { health { status } }"

    unnamed = await gql.raw(document)
    named = await gql.schema.execute(
        document, operation_name="B", context_value=(await _context(gql))
    )

    assert unnamed.data is None
    assert unnamed.errors
    assert "operation name" in unnamed.errors[0].message
    assert named.errors is None
    assert named.data is not None
    assert "health" in named.data


async def _context(gql: GraphQLClient) -> Any:
    from gateway.schema.context import GraphContext

    return GraphContext(runtime=gql.runtime)


# --- reads that yield -----------------------------------------------------------------------


async def test_a_large_read_lets_other_work_run_while_it_is_serialised(
    gql: GraphQLClient, store: GraphStore
) -> None:
    await b.first_message(gql, "small")
    await b.execution(gql, "small", "small-e0", 1)
    await b.first_message(gql, "s1")
    for step in range(100):  # several PACE-sized steps of nodes, not one or two
        await b.execution(gql, "s1", f"e{step}", step + 1)

    # A wait for a reader thread gives the loop turns too, more when the machine is busy: the
    # fewest of several small reads is their floor.
    small_ticks = min([(await _ticks_while_reading(gql, "small"))[0] for _ in range(5)])
    ticks, nodes = await _ticks_while_reading(gql, "s1")

    assert nodes > 200
    # At least one turn of the loop per PACE nodes converted and per PACE nodes serialised.
    paced = 2 * (nodes // schema_pacing.PACE)
    assert ticks >= paced
    if store.backend is not Backend.NEO4J:
        # An embedded store's reads give the loop a few turns whatever the size (a network
        # wait gives it any number): the pacing shows beyond those of a small read.
        assert ticks - small_ticks >= paced - 2


async def _ticks_while_reading(gql: GraphQLClient, session_id: str) -> tuple[int, int]:
    """How often other work ran while a subgraph of the session was read; its node count."""
    document = (
        f'{{ subgraph(sessionId: "{session_id}") {{ ... on Subgraph {{ '
        "nodes { id key label properties } edges { type source target } } } }"
    )
    ticks = 0
    read = asyncio.ensure_future(gql.execute(document))
    while not read.done():
        ticks += 1
        await asyncio.sleep(0)
    data = await read
    return ticks, len(data["subgraph"]["nodes"])


async def test_the_time_budget_is_checked_at_every_step_of_a_large_read(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    gql = client(runtime, query_timeout_seconds=10.0)
    await b.first_message(gql, "s1")
    for step in range(20):
        await b.execution(gql, "s1", f"e{step}", step + 1)
    monkeypatch.setattr(schema_pacing, "PACE", 1)
    real_breathe = schema_pacing.breathe
    calls = 0

    async def late_breathe() -> None:
        nonlocal calls
        calls += 1
        if calls > 30:  # well into the read: the budget runs out here
            schema_pacing.DEADLINE.set(0.0)
        await real_breathe()

    monkeypatch.setattr(schema_pacing, "breathe", late_breathe)

    result = await gql.raw('{ subgraph(sessionId: "s1") { __typename } }')

    assert result.data == {"subgraph": {"__typename": "QueryLimitExceeded"}}


# --- the reader pool ------------------------------------------------------------------------

HEAVY = '{ subgraph(sessionId: "s1") { ... on Subgraph { nodes { id } } } }'  # ~1,000
HEAVY_TYPENAME = '{ subgraph(sessionId: "s1") { __typename ... on Subgraph { nodes { id } } } }'


async def test_heavy_reads_wait_for_the_pool_while_writes_and_light_reads_do_not(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    gql = client(runtime, heavy_readers=1, heavy_cost=100, query_timeout_seconds=5.0)
    await b.first_message(gql, "s1")
    release = asyncio.Event()
    store = runtime.graph_store  # what the resolvers are given
    # The read a subgraph makes first: a whole page, or the node listing.
    read = "session_page" if isinstance(store, SessionPageReader) else "list_nodes"
    real_read = getattr(store, read)
    entered = 0

    async def held_read(*args: Any, **kwargs: Any) -> Any:
        nonlocal entered
        entered += 1
        await release.wait()
        return await real_read(*args, **kwargs)

    monkeypatch.setattr(store, read, held_read)
    # A store's consistent view reads on its own connection: read through the store here.
    monkeypatch.setattr(store, "consistent_view", lambda: nullcontext(store), raising=False)

    holder = asyncio.ensure_future(gql.raw(HEAVY))  # takes the only slot and is held there
    await asyncio.sleep(0.05)
    light = await gql.raw("{ health { status } }")
    written = await b.execution(gql, "s1", "e1", 1)
    waiting = asyncio.ensure_future(gql.raw(HEAVY))
    await asyncio.sleep(0.1)
    entered_while_held = entered
    holder_still_running = not holder.done()
    release.set()
    answers = await asyncio.gather(holder, waiting)

    assert light.errors is None
    assert written["__typename"] == "Observed"
    assert holder_still_running
    assert entered_while_held == 1  # the second heavy read waited for the slot
    assert all(answer.errors is None for answer in answers)


async def test_fragments_that_double_at_every_level_are_refused_at_once(runtime: Runtime) -> None:
    gql = client(runtime, max_depth=40)
    # F0 spreads F1 twice, F1 spreads F2 twice, …: 2**24 spreads once expanded.
    fragments = " ".join(f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}" for i in range(24))
    document = f"{{ ...F0 }} {fragments} fragment F24 on Query {{ health {{ status }} }}"

    result = await once_within(10, gql.raw(document))

    assert codes(result) == [LIMIT]


def spy_on_validation(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The documents graphql-core validates from now on (past strawberry's validation cache)."""
    validated: list[object] = []
    validate = graphql.validate  # what strawberry.schema.schema calls

    def recording(schema: Any, document: Any, *args: Any, **kwargs: Any) -> Any:
        validated.append(document)
        return validate(schema, document, *args, **kwargs)

    monkeypatch.setattr(strawberry.schema.schema, "validate", recording)
    return validated


def layered_fragments(width: int, levels: int) -> str:
    """``levels`` levels of ``width`` small fragments, each spreading every fragment of the next."""
    definitions = []
    for level in range(levels):
        body = " ".join(f"...F{level + 1}_{j}" for j in range(width))
        if level == levels - 1:
            body = "health { status }"
        definitions += [f"fragment F{level}_{i} on Query {{ {body} }}" for i in range(width)]
    top = " ".join(f"...F0_{j}" for j in range(width))
    return f"{{ {top} }} " + " ".join(definitions)


async def test_many_small_fragments_spread_many_times_are_refused_before_validation(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    validated = spy_on_validation(monkeypatch)
    nested, wide = layered_fragments(3, 100), layered_fragments(10, 4)

    results = [await gql.raw(nested), await gql.raw(wide)]

    assert [codes(result) for result in results] == [[LIMIT], [LIMIT]]
    assert validated == []  # no validation rule ever walked the expansion


async def test_one_field_repeated_in_a_selection_set_is_refused_before_validation(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    validated = spy_on_validation(monkeypatch)
    name = f"query Q{uuid.uuid4().hex} "  # a document of its own: never a cached validation
    at_limit = name + "{ " + "health { status } " * MAX_REPEATED_FIELD + "}"
    over = name + "{ " + "health { status } " * 900 + "}"
    spread = name + "{ " + "...F " * 200 + "} fragment F on Query { health { status } }"

    refused = await gql.raw(over)
    answered = [await gql.raw(at_limit), await gql.raw(spread)]

    assert codes(refused) == [LIMIT]
    assert "health" in refused.errors[0].message
    assert len(validated) == 2  # only the documents within the limits were validated
    assert [result.data for result in answered] == [{"health": {"status": "HEALTHY"}}] * 2


async def test_one_fragment_spread_many_times_is_refused_by_what_it_expands_to(
    gql: GraphQLClient,
) -> None:
    fields = " ".join(f"a{i}: health {{ status }}" for i in range(100))
    document = "{ " + "...F " * 900 + "} fragment F on Query { " + fields + " }"

    result = await gql.raw(document)

    assert codes(result) == [LIMIT]
    assert "selections" in result.errors[0].message
