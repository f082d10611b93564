"""Request limits (SPEC §8), each at its boundary: the limit passes, one more is refused.

Document limits (depth, aliases, tokens) are refused before anything runs, as a top-level error
with ``extensions.code = "QUERY_LIMIT_EXCEEDED"``; argument limits (page sizes, ``maxHops``, list
and text lengths) answer ``InvalidInput`` naming the argument; the time budget answers
``QueryLimitExceeded``. The HTTP body limit is tested in ``tests/http/test_limits.py``.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import TYPE_CHECKING, Any

import pytest
import strawberry.schema.schema
from graphql import parse, validate

from gateway.schema import build_schema
from gateway.schema import limits as schema_limits
from gateway.schema.inputs import MCP_TASK_PREFIX
from gateway.schema.limits import Limits
from resolvers import resolve, subgraph
from resolvers.memory.records import MAX_TAGS
from resolvers.validate import MAX_ID_LENGTH, MAX_LIST_LENGTH, MAX_TEXT_LENGTH
from tests import builders as b
from tests.conftest import GraphQLClient

if TYPE_CHECKING:
    from gateway.runtime.state import Runtime

LIMIT = "QUERY_LIMIT_EXCEEDED"
PING_BUDGET_SECONDS = 2.0
TYPENAME = "__typename ... on InvalidInput { field }"


def client(runtime: Runtime, **limits: Any) -> GraphQLClient:
    return GraphQLClient(build_schema(Limits(**limits)), runtime)


async def codes(gql: GraphQLClient, document: str, **variables: Any) -> list[str | None]:
    """The ``extensions.code`` of every top-level error (empty: the document ran)."""
    result = await gql.raw(document, **variables)
    return [(error.extensions or {}).get("code") for error in result.errors or ()]


def of_depth(depth: int) -> str:
    """``node`` (depth 1) → ``supersedes`` (2) → … → ``supersedes`` (``depth``)."""
    inner = "id"
    for _ in range(depth - 1):
        inner = f"supersedes {{ ... on Artifact {{ {inner} }} }}"
    return f'{{ node(nodeId: "x") {{ ... on Artifact {{ {inner} }} }} }}'


def with_aliases(count: int) -> str:
    return (
        "{ " + " ".join(f"a{i}: health {{ status }}" for i in range(count)) + " health { status } }"
    )


def of_tokens(repeats: int) -> str:
    """``{``, then ``repeats`` times ``health { status }`` (4 tokens each), then ``}``."""
    return "{ " + " ".join(["health { status }"] * repeats) + " }"


# --- document limits: refused before anything runs --------------------------------------------


async def test_depth_at_the_limit_runs_and_one_deeper_is_refused(runtime: Runtime) -> None:
    gql = client(runtime, max_depth=4)

    at_limit = await codes(gql, of_depth(4))
    over = await codes(gql, of_depth(5))

    assert at_limit == []
    assert over == [LIMIT]


async def test_aliases_at_the_limit_run_and_one_more_is_refused(runtime: Runtime) -> None:
    gql = client(runtime, max_aliases=3)

    at_limit = await codes(gql, with_aliases(3))
    over = await codes(gql, with_aliases(4))

    assert at_limit == []
    assert over == [LIMIT]


async def test_tokens_at_the_limit_run_and_one_more_is_refused(runtime: Runtime) -> None:
    gql = client(runtime, max_tokens=2 + 4 * 3)

    at_limit = await codes(gql, of_tokens(3))
    over = await client(runtime, max_tokens=2 + 4 * 3 - 1).raw(of_tokens(3))

    assert at_limit == []
    assert [error.extensions for error in over.errors or ()] == [{"code": LIMIT}]
    assert over.data is None


async def test_a_plain_syntax_error_is_not_a_limit(runtime: Runtime) -> None:
    assert await codes(client(runtime), "{ health { status }") == ["GRAPHQL_PARSE_FAILED"]


@pytest.mark.parametrize(
    ("document", "variables", "code"),
    [
        ("{ nope }", {}, "GRAPHQL_VALIDATION_FAILED"),
        ("{ health(x: 1) { status } }", {}, "GRAPHQL_VALIDATION_FAILED"),
        (
            '{ searchNodes(query: "a", first: "ten") { __typename } }',
            {},
            "GRAPHQL_VALIDATION_FAILED",
        ),
        ("query A { __typename } query B { __typename }", {}, "GRAPHQL_VALIDATION_FAILED"),
        ("{ health { ...Nope } }", {}, "GRAPHQL_VALIDATION_FAILED"),
        ("{ health { ...A } } fragment A on Health { ...Nope }", {}, "GRAPHQL_VALIDATION_FAILED"),
        (
            'query($n: Int) { searchNodes(query: "a", first: $n) { __typename } }',
            {"n": "ten"},
            "BAD_USER_INPUT",
        ),
        ("query($q: String!) { searchNodes(query: $q) { __typename } }", {}, "BAD_USER_INPUT"),
    ],
)
async def test_a_document_or_variables_the_schema_refuses_are_coded(
    runtime: Runtime, document: str, variables: dict[str, Any], code: str
) -> None:
    # The codes a federation router and typed clients tell apart: the caller's mistake, not ours.
    assert await codes(client(runtime), document, **variables) == [code]


async def test_the_default_limits_let_the_playground_query_through(gql: GraphQLClient) -> None:
    from gateway.http.playground import DEFAULT_QUERY

    assert await codes(gql, DEFAULT_QUERY, sessionId="s1") == []


# --- introspection ----------------------------------------------------------------------------

INTROSPECTION = "{ __schema { queryType { name } } }"


async def test_introspection_is_on_by_default(gql: GraphQLClient) -> None:
    data = await gql.execute(INTROSPECTION)

    assert data == {"__schema": {"queryType": {"name": "Query"}}}


async def test_introspection_can_be_switched_off_but_typename_still_answers(
    runtime: Runtime,
) -> None:
    gql = client(runtime, introspection=False)

    refused = await gql.raw(INTROSPECTION)
    typename = await gql.execute("{ __typename }")

    assert refused.data is None
    assert "introspection has been disabled" in refused.errors[0].message
    assert typename == {"__typename": "Query"}


# --- parser and validation caches -------------------------------------------------------------


async def test_a_repeated_document_is_parsed_and_validated_once(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = {"parse": 0, "validate": 0}

    def counted(name: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(schema_limits, "parse", counted("parse", parse))
    monkeypatch.setattr(strawberry.schema.schema, "validate", counted("validate", validate))
    gql = client(runtime)
    document = f"# {uuid.uuid4().hex}\n{{ health {{ status }} }}"

    for _ in range(3):
        await gql.execute(document)

    assert calls == {"parse": 1, "validate": 1}


# --- argument limits --------------------------------------------------------------------------

PAGED = {
    "searchNodes": ('searchNodes(query: "tp53", first: $n)', 500, "first"),
    "nodesByType": ("nodesByType(labels: [CODE], first: $n)", 500, "first"),
    "edgesByType": ("edgesByType(types: [NEXT], first: $n)", 500, "first"),
    "subgraph": ('subgraph(sessionId: "s1", first: $n)', 5000, "first"),
    "traceProvenance": ('traceProvenance(nodeId: "Code:e1", maxHops: $n)', 32, "maxHops"),
    "recall": ('recall(topic: "tp53", limitPerType: $n)', 100, "limitPerType"),
    "lessons": ("lessons(limit: $n)", 200, "limit"),
}


@pytest.mark.parametrize("name", PAGED)
async def test_a_count_argument_accepts_1_to_its_maximum_only(
    gql: GraphQLClient, name: str
) -> None:
    field, maximum, argument = PAGED[name]
    document = f"query($n: Int) {{ {field} {{ {TYPENAME} }} }}"
    await b.execution(gql, "s1", "e1", 10)

    answers = [(await gql.execute(document, n=n))[name] for n in (0, 1, maximum, maximum + 1)]

    refused = {"__typename": "InvalidInput", "field": argument}
    assert [answer == refused for answer in answers] == [True, False, False, True]


async def test_a_nested_page_size_over_its_maximum_is_a_coded_top_level_error(
    gql: GraphQLClient,
) -> None:
    document = """query($n: Int) { session(sessionId: "s1") {
      ... on Session { nodes(first: $n) { total } } } }"""
    await b.execution(gql, "s1", "e1", 10)

    at_limit = await codes(gql, document, n=500)
    over = await gql.raw(document, n=501)

    assert at_limit == []
    assert [error.extensions for error in over.errors or ()] == [
        {"code": "INVALID_INPUT", "field": "first"}
    ]


def goal_input(**overrides: Any) -> dict[str, Any]:
    return {"sessionId": "s1", "goalId": "goal:session:s1", "coreObjective": "TP53", **overrides}


@pytest.mark.parametrize(
    ("field", "at_limit", "over"),
    [
        ("topicScope", ["t"] * MAX_LIST_LENGTH, ["t"] * (MAX_LIST_LENGTH + 1)),
        ("coreObjective", "x" * MAX_TEXT_LENGTH, "x" * (MAX_TEXT_LENGTH + 1)),
        ("goalId", "g" * MAX_ID_LENGTH, "g" * (MAX_ID_LENGTH + 1)),
    ],
    ids=["list", "text", "id"],
)
async def test_an_input_at_its_length_limit_is_written_and_one_more_is_refused(
    gql: GraphQLClient, field: str, at_limit: Any, over: Any
) -> None:
    refused = await b.first_message(gql, "s1", **{field: over})
    written = await b.first_message(gql, "s1", **{field: at_limit})

    assert (refused["__typename"], refused["field"]) == ("InvalidInput", f"input.{field}")
    assert written["__typename"] == "Observed"


async def test_an_mcp_invocation_id_is_refused_by_its_own_name_past_its_task_ids_limit(
    gql: GraphQLClient,
) -> None:
    most = MAX_ID_LENGTH - len(MCP_TASK_PREFIX)  # it becomes the task id

    async def search(invocation_id: str) -> dict[str, Any]:
        value = {"invocationId": invocation_id, "sessionId": "s1", "turnId": "t1", "source": "x"}
        selection = "__typename ... on InvalidInput { field message } ... on Observed { nodeIds }"
        return await b.mutate(gql, "observeMcpSearch", "ObserveMcpSearchInput", value, selection)

    refused = [await search("q" * size) for size in (most + 1, MAX_ID_LENGTH, MAX_ID_LENGTH + 1)]
    written = await search("q" * most)

    assert refused == 3 * [
        {
            "__typename": "InvalidInput",
            "field": "input.invocationId",
            "message": f"input.invocationId: at most {most} characters (the task id "
            f"`subtask:mcp:<invocationId>` at most {MAX_ID_LENGTH})",
        }
    ]
    assert written["nodeIds"] == [f"ToolCall:subtask:mcp:{'q' * most}"]


async def test_memory_tags_at_their_limit_are_kept_and_one_more_is_refused(
    gql: GraphQLClient,
) -> None:
    document = """mutation($tags: [String!]!) { recordMemory(input: {pitfall: {
      project: "p", tags: $tags, context: "c", issue: "i", fix: "f"}}) { __typename
      ... on InvalidInput { field } } }"""

    over = await gql.execute(document, tags=[f"t{i}" for i in range(MAX_TAGS + 1)])
    at_limit = await gql.execute(document, tags=[f"t{i}" for i in range(MAX_TAGS)])

    assert over["recordMemory"]["__typename"] == "InvalidInput"
    assert at_limit["recordMemory"] == {"__typename": "MemoryRecorded"}


# --- the time budget --------------------------------------------------------------------------


async def never_answers(*args: object, **kwargs: object) -> None:
    await asyncio.Event().wait()


async def test_a_query_over_its_time_budget_answers_query_limit_exceeded(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(subgraph, "session_subgraph", never_answers)
    gql = client(runtime, query_timeout_seconds=0.01)

    data = await gql.execute(
        '{ subgraph(sessionId: "s1") { __typename ... on Error { code message } } }'
    )

    answer = data["subgraph"]
    assert (answer["__typename"], answer["code"]) == ("QueryLimitExceeded", LIMIT)
    assert "time budget" in answer["message"]


async def test_other_root_fields_of_the_query_still_answer(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(subgraph, "session_subgraph", never_answers)
    # ``health`` pings the store (a Neo4j round trip): the budget must fit one on a busy
    # machine, while ``subgraph`` outlasts any budget.
    gql = client(runtime, query_timeout_seconds=PING_BUDGET_SECONDS)

    data = await gql.execute('{ health { __typename } subgraph(sessionId: "s1") { __typename } }')

    assert data == {
        "health": {"__typename": "Health"},
        "subgraph": {"__typename": "QueryLimitExceeded"},
    }


async def test_a_node_over_its_time_budget_answers_query_limit_exceeded(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resolve, "resolve_node", never_answers)
    gql = client(runtime, query_timeout_seconds=0.01)

    result = await gql.raw('{ node(nodeId: "x") { __typename ... on Error { code } } }')

    assert result.errors is None
    assert result.data == {"node": {"__typename": "QueryLimitExceeded", "code": LIMIT}}


async def test_a_field_without_the_member_gets_a_coded_top_level_error(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime, "health", never_answers)
    gql = client(runtime, query_timeout_seconds=0.01)

    result = await gql.raw("{ health { status } }")

    assert result.data is None
    assert [error.extensions for error in result.errors or ()] == [{"code": LIMIT}]


async def test_a_mutation_is_never_cut_short_by_the_budget(runtime: Runtime) -> None:
    # Any suspension outlasts this budget, and a durable write always suspends.
    gql = client(runtime, query_timeout_seconds=1e-9)

    written = await b.first_message(gql, "s1")

    assert written["__typename"] == "Observed"
    assert await runtime.graph_store.count_nodes() == 1


async def test_a_long_document_is_parsed_and_validated_afresh_beside_the_event_loop(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past CACHED_DOCUMENT_CHARS (a long comment here): answered as any other, its coded
    # errors the same, but kept by neither cache, and parsed on the parser's own thread.
    threads: list[str] = []

    def recorded(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return parse(*args, **kwargs)

    monkeypatch.setattr(schema_limits, "parse", recorded)
    gql = client(runtime)
    padding = "x" * schema_limits.CACHED_DOCUMENT_CHARS
    document = f'# {padding}\n{{ health {{ status }} node(nodeId: "Code:e1") {{ __typename }} }}'
    cached_before = schema_limits._cached_parse.cache_info().currsize

    first = await gql.execute(document)
    again = await gql.execute(document)
    broken = await gql.raw(document[:-1])

    assert first == again
    assert first["node"]["__typename"] == "NodeNotFound"
    assert threads[:2] == ["parse_0", "parse_0"]
    assert schema_limits._cached_parse.cache_info().currsize == cached_before
    assert broken.errors is not None
    assert broken.errors[0].extensions == {"code": "GRAPHQL_PARSE_FAILED"}


async def test_a_document_over_its_length_limit_is_refused_unparsed(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[int] = []
    monkeypatch.setattr(schema_limits, "parse", lambda query, **_: parsed.append(len(query)))
    document = "{ health { status } } " + "x " * 600_000

    result = await client(runtime).raw(document)

    assert result.errors is not None
    assert result.errors[0].extensions == {"code": "QUERY_LIMIT_EXCEEDED"}
    assert "variables" in result.errors[0].message
    assert parsed == []
