"""Hostile arguments get typed answers, and a bad value already stored never fails a read.

Times must lie in 1970-01-01 .. 2999-12-31 UTC (``resolvers.validate``); ids, artifact version
suffixes and cursors of any shape answer ``NodeNotFound`` or ``InvalidInput``, never
"Unexpected error.". A store written by older code may hold a time no parser accepts
(``999-06-01T…``): the typed field then answers ``null``, ``properties`` keeps the raw text.
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
from typing import TYPE_CHECKING, Any

import pytest

from resolvers.records import Label, node_id
from tests import builders as b

if TYPE_CHECKING:
    from resolvers.store import GraphStore
    from tests.conftest import GraphQLClient

OBSERVED = "__typename ... on InvalidInput { field } ... on Observed { written }"


def cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


async def observe_at(gql: GraphQLClient, finished: str, execution_id: str = "e1") -> Any:
    value = {
        "executionId": execution_id,
        "sessionId": "s1",
        "turnId": "t1",
        "tool": "run_python",
        "codeHash": "h1",
        "status": "succeeded",
        "startedAt": "1970-01-01T00:00:00Z",  # the earliest time: any finish is not before it
        "finishedAt": finished,
    }
    return await b.mutate(gql, "observeExecution", "ObserveExecutionInput", value, OBSERVED)


# --- times at the edge ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "finished",
    [
        "0999-06-01T00:00:00Z",
        "1969-12-31T23:59:59.999999Z",
        "3000-01-01T00:00:00Z",
        "2999-12-31T23:59:59-05:00",  # 3000-01-01 in UTC
        "9999-12-31T23:59:59-14:00",  # beyond datetime's own range once in UTC
        "0001-01-01T00:00:00+14:00",
    ],
)
async def test_a_time_outside_the_range_is_refused_naming_the_field(
    gql: GraphQLClient, finished: str
) -> None:
    await b.first_message(gql, "s1")

    answer = await observe_at(gql, finished)
    node = await gql.execute('{ node(nodeId: "subtask:e1") { __typename } }')

    assert answer == {"__typename": "InvalidInput", "field": "input.finishedAt"}
    assert node["node"]["__typename"] == "NodeNotFound"


@pytest.mark.parametrize("finished", ["1970-01-01T00:00:00Z", "2999-12-31T23:59:59.999999Z"])
async def test_the_ends_of_the_range_are_accepted(gql: GraphQLClient, finished: str) -> None:
    await b.first_message(gql, "s1")

    answer = await observe_at(gql, finished)

    assert answer["__typename"] == "Observed"


async def test_a_time_the_input_spells_differently_is_named_as_the_client_wrote_it(
    gql: GraphQLClient,
) -> None:
    await b.first_message(gql, "s1")

    answer = await b.subagent(gql, "s1", "sa1", createdAt="0999-06-01T00:00:00Z")

    assert answer["__typename"] == "InvalidInput"
    assert answer["field"] == "input.createdAt"


# --- ids, versions, cursors -----------------------------------------------------------------


@pytest.mark.parametrize(
    "ref",
    ["fig#v²", "fig#v" + "9" * 5000, "Artifact:fig#v" + "9" * 5000, "fig#v٣", "fig#v"],
)
async def test_odd_version_suffixes_name_no_node(gql: GraphQLClient, ref: str) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig", 1)])

    data = await gql.execute("query($r: ID!) { node(nodeId: $r) { __typename } }", r=ref)

    assert data["node"]["__typename"] == "NodeNotFound"


async def test_a_real_version_suffix_still_resolves(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig", 1)])

    data = await gql.execute('{ node(nodeId: "fig#v1") { __typename ... on Artifact { key } } }')

    assert data["node"] == {"__typename": "Artifact", "key": "fig#v1"}


@pytest.mark.parametrize("ref", ["fig#v2", "Artifact:fig#v2", "fig"])
async def test_a_version_asked_for_that_does_not_exist_is_not_found_however_named(
    gql: GraphQLClient, ref: str
) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig", 2)])  # only version 2

    data = await gql.execute(
        "query($r: ID!) {"
        " getChain(nodeId: $r, kind: VIEW_PRODUCING_CODE, version: 1) { __typename }"
        " chainExists(nodeId: $r, kinds: [VIEW_PRODUCING_CODE], version: 1) { __typename } }",
        r=ref,
    )

    assert data == {
        "getChain": {"__typename": "NodeNotFound"},
        "chainExists": {"__typename": "NodeNotFound"},
    }


async def test_an_artifact_id_ending_in_a_version_suffix_is_refused(gql: GraphQLClient) -> None:
    # ``fig#v2`` version 1 would be stored as ``fig#v2#v1``, and ``fig#v2`` read as version 2
    # of ``fig``.
    await b.first_message(gql, "s1")

    answer = await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig#v2", 1)])

    assert (answer["__typename"], answer["field"]) == (
        "InvalidInput",
        "input.producedArtifacts[0].artifactId",
    )
    assert b.node_ids(await b.subgraph(gql, "s1")) == {"ResearchGoal:goal:session:s1"}


KEY_FORMS = ["goal:session:s1", "goal:session:s2", "source_file:session:s2:a.csv"]


@pytest.mark.parametrize("key", KEY_FORMS)
@pytest.mark.parametrize("field", ["taskId", "executionId", "artifactId"])
async def test_a_new_nodes_key_of_the_form_of_a_goals_or_an_uploads_is_refused(
    gql: GraphQLClient, field: str, key: str
) -> None:
    # The lookup of that goal's or upload's key would find the new node.
    if field == "taskId":
        answer = await b.tool_call(gql, "s2", key, papers=[])
        path = "input.taskId"
    elif field == "executionId":
        answer = await b.execution(gql, "s2", key)
        path = "input.executionId"
    else:
        answer = await b.execution(gql, "s2", "e1", artifacts=[b.artifact(key)])
        path = "input.producedArtifacts[0].artifactId"

    assert (answer["__typename"], answer["field"]) == ("InvalidInput", path)
    assert (await b.subgraph(gql, "s2"))["nodes"] == []


@pytest.mark.parametrize(
    ("field", "key"),
    [
        ("taskId", "subtask:subagent:sa"),  # the subagent's scope
        ("taskId", "subtask:subagent:sa:exec:c1"),  # its step, named from parentSubagentId
        ("executionId", "subagent:sa:exec:c1"),  # its tool call would be that step
        ("executionId", "mcp:q1"),  # its tool call would be that MCP search's
        ("taskId", "e1"),  # a Code's key (executionId e1), not a tool call's
        ("taskId", "subtask:q#v1"),  # read as version 1 of an artifact q
        ("executionId", "fig#v1"),  # read as version 1 of fig
        ("executionId", "subtask:q1"),  # a tool call's key
        ("executionId", "Paper:s1|https://a.org"),  # read as that Paper's global id
        ("executionId", "Artifact:x"),
        ("artifactId", "Code:e1"),  # Artifact:Code:e1#v1 against Code:e1#v1's id
        ("subagentId", "sa:exec:e1"),  # its scope's key is step e1 of subagent sa
        ("parentSubagentId", "sa:exec:e1"),
        ("subagentId", "sb#v2"),
        ("artifactId", "subtask:a7"),  # a tool call's key
        ("goalId", "subtask:g3"),
        ("goalId", "source_file:session:s1:a"),  # an upload's
        ("fileId", "goal:session:s1"),  # a goal's
        ("fileId", "Code:x"),  # a global id's form
        ("executionId", "e1 "),  # a key is matched exactly: the space would hide it
        ("executionId", "\u00a0e1"),
        ("taskId", "subtask:q1\t"),
        ("sessionId", "s1 "),
    ],
)
async def test_a_step_key_of_another_kind_of_step_is_refused(
    gql: GraphQLClient, field: str, key: str
) -> None:
    # A subagent's child re-sent as a top-level step would leave the scope's chain behind it;
    # any of these keys would name two kinds of node, or a node no read finds.
    await b.subagent(gql, "s1", "sa")
    before = await b.subgraph(gql, "s1")
    if field == "taskId":
        answer = await b.tool_call(gql, "s1", key, papers=[])
    elif field == "artifactId":
        answer = await b.execution(gql, "s1", "e2", artifacts=[b.artifact(key)])
        field = "producedArtifacts[0].artifactId"
    elif field == "subagentId":
        answer = await b.subagent(gql, "s1", key)
    elif field == "parentSubagentId":
        answer = await b.execution(gql, "s1", "e3", parentSubagentId=key)
    elif field == "sessionId":
        answer = await b.execution(gql, key, "e4")
    elif field == "goalId":
        answer = await b.first_message(gql, "s1", goalId=key)
    elif field == "fileId":
        answer = await b.upload(gql, "s1", "a.csv", fileId=key)
    else:
        answer = await b.execution(gql, "s1", key)
    path = field if field == "sessionId" else f"input.{field}"

    assert (answer["__typename"], answer["field"]) == ("InvalidInput", path)
    assert await b.subgraph(gql, "s1") == before


@pytest.mark.parametrize("parent", [None, "sa"])
@pytest.mark.parametrize("execution_first", [True, False])
async def test_an_execution_and_a_tool_call_of_one_step_key_give_one_step_in_any_order(
    gql: GraphQLClient, parent: str | None, execution_first: bool
) -> None:
    # A subagent's steps share ``<scope>:exec:<ref>``; a taskId may be subtask:<executionId>.
    # The step is the higher-ranked observation's (the search, finished later) whichever came
    # first; the Code and the Paper are both its products, and nothing is refused.
    extra: dict[str, Any] = {"parentSubagentId": parent} if parent else {}
    step = f"ToolCall:subtask:subagent:{parent}:exec:e1" if parent else "ToolCall:subtask:e1"
    await b.subagent(gql, "s1", "sa")

    async def run() -> dict[str, Any]:
        return await b.execution(gql, "s1", "e1", 10, **extra)

    async def search() -> dict[str, Any]:
        task = "subtask:mcp:e1" if parent else "subtask:e1"
        return await b.tool_call(gql, "s1", task, 20, papers=[b.paper("https://a.org/p")], **extra)

    for send in (run, search) if execution_first else (search, run):
        assert (await send())["__typename"] == "Observed"

    graph = await b.subgraph(gql, "s1")
    assert b.props_of(graph, step)["tool_type"] == "search"
    assert b.props_of(graph, step)["finished_at"].startswith(b.at(20)[:19])
    assert b.edges_of(graph, "PRODUCES") == {
        (step, "Code:e1"),
        (step, "Paper:s1|https://a.org/p"),
    }


STEP_SHARED = "ToolCall:subtask:subagent:sa:exec:x"


@pytest.mark.parametrize("order", [(0, 1, 2), (0, 2, 1), (2, 0, 1)])
async def test_a_shared_step_holds_one_observation_whole_in_any_order(
    gql: GraphQLClient, order: tuple[int, ...]
) -> None:
    # The execution finished last holds the step: nothing of the search (its count, its
    # retrieval time, its source) stays beside it, whichever order they came in.
    await b.subagent(gql, "s1", "sa")
    sends = [
        lambda: b.execution(gql, "s1", "x", 5, parentSubagentId="sa"),
        lambda: b.execution(gql, "s1", "x", 9, parentSubagentId="sa"),
        lambda: b.mcp_search(gql, "s1", "x", 7, parentSubagentId="sa", records=[]),
    ]
    for index in order:
        assert (await sends[index]())["__typename"] == "Observed"

    props = b.props_of(await b.subgraph(gql, "s1"), STEP_SHARED)
    assert (props["tool_type"], props["tool_name"]) == ("execution", "run_python")
    assert {"result_count", "retrieved_at", "source"}.isdisjoint(props)


@pytest.mark.parametrize("search_first", [True, False])
async def test_an_untimed_search_on_an_executions_step_is_placed_when_it_arrived(
    gql: GraphQLClient, search_first: bool
) -> None:
    # Its time is its arrival (SPEC §4), later than the execution's in either order: it holds
    # the step both ways.
    await b.subagent(gql, "s1", "sa")
    sends = [
        lambda: b.execution(gql, "s1", "x", 5, parentSubagentId="sa"),
        lambda: b.mcp_search(
            gql, "s1", "x", parentSubagentId="sa", retrievedAt=None, records=[{"url": "x.org/p"}]
        ),
    ]
    for send in reversed(sends) if search_first else sends:
        assert (await send())["__typename"] == "Observed"

    props = b.props_of(await b.subgraph(gql, "s1"), STEP_SHARED)
    assert props["tool_type"] == "search"
    assert props["finished_at"] > b.at(5)


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
async def test_an_execution_moving_out_gives_its_step_back_to_the_tool_call(
    gql: GraphQLClient, order: tuple[int, ...]
) -> None:
    # Observed at the top level (finished at 5), the execution holds the step it shares with
    # the tool call (retrieved at 3); observed later in a subagent (finished at 7), it moves
    # there. The step is then the tool call's, at 3 in the chain, before step y (at 4), in
    # every order: as if the execution had never been at the top level.
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "y", 4)
    sends = [
        lambda: b.execution(gql, "s1", "x", 5),
        lambda: b.tool_call(gql, "s1", "subtask:x", 3, papers=[b.paper("https://a.org/p")]),
        lambda: b.execution(gql, "s1", "x", 7, parentSubagentId="sa"),
    ]
    for index in order:
        assert (await sends[index]())["__typename"] == "Observed"

    graph = await b.subgraph(gql, "s1")
    props = b.props_of(graph, "ToolCall:subtask:x")
    assert props["tool_type"] == "search"
    assert props["finished_at"].startswith(b.at(3)[:19])
    assert {"started_at", "call_observation"}.isdisjoint(props)
    assert b.edges_of(graph, "PRODUCES") >= {
        ("ToolCall:subtask:x", "Paper:s1|https://a.org/p"),
        ("ToolCall:subtask:subagent:sa:exec:x", "Code:x"),
    }
    assert ("ToolCall:subtask:x", "Code:x") not in b.edges_of(graph, "PRODUCES")
    chain = await b.session_chain(gql, "s1")
    assert chain.index("ToolCall:subtask:x") < chain.index("ToolCall:subtask:y")


async def test_a_node_id_is_matched_as_sent(gql: GraphQLClient, store: GraphStore) -> None:
    # A key an older write stored with a trailing space is found by exactly that id, and
    # only by it.
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1")
    (code,) = await store.get_nodes(["Code:e1"])
    assert code is not None
    async with store.transaction("s1") as tx:
        await tx.put_node(dataclasses.replace(code, id="Code:e2 ", key="e2 "))

    found = await b.node(gql, "Code:e2 ")
    by_key = await b.node(gql, "e2 ")
    padded = await b.node(gql, " Code:e1")

    assert (found["__typename"], by_key["__typename"]) == ("Code", "Code")
    assert padded["__typename"] == "NodeNotFound"


async def test_a_version_asked_for_names_an_artifact_or_nothing(gql: GraphQLClient) -> None:
    # A Code of the same key as the artifact is not what ``fig`` at version 5 names.
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "fig", artifacts=[b.artifact("fig", 1)])

    data = await gql.execute(
        "query($v: Int!) {"
        ' getChain(nodeId: "fig", kind: VIEW_PRODUCING_CODE, version: $v) {'
        " __typename ... on Chain { nodes { id } } } }",
        v=5,
    )
    found = await gql.execute(
        "query($v: Int!) {"
        ' getChain(nodeId: "fig", kind: VIEW_PRODUCING_CODE, version: $v) {'
        " __typename ... on Chain { nodes { id } } } }",
        v=1,
    )

    assert data["getChain"] == {"__typename": "NodeNotFound"}
    assert {node["id"] for node in found["getChain"]["nodes"]} == {"Artifact:fig#v1", "Code:fig"}


BAD_CURSORS = [
    cursor(f"offset:{2**63}"),
    cursor("offset:" + "9" * 4301),
    cursor("offset:²"),
    cursor("offset:-1"),
    "%%%garbage",
    "",
]
LISTINGS = [
    '{ searchNodes(query: "paper", after: $c) { __typename ... on InvalidInput { field } } }',
    "{ nodesByType(labels: [TOOL_CALL], after: $c) { __typename ... on InvalidInput { field } } }",
    "{ edgesByType(types: [NEXT], after: $c) { __typename ... on InvalidInput { field } } }",
]


@pytest.mark.parametrize("after", BAD_CURSORS)
@pytest.mark.parametrize("listing", LISTINGS)
async def test_a_cursor_not_issued_by_the_api_is_invalid_input(
    gql: GraphQLClient, listing: str, after: str
) -> None:
    await b.first_message(gql, "s1")

    data = await gql.execute("query($c: String) " + listing, c=after)

    assert next(iter(data.values())) == {"__typename": "InvalidInput", "field": "after"}


# --- what is already stored ----------------------------------------------------------------

OLD_TIME = "999-06-01T00:00:00.000000Z"  # what the old code wrote for 0999-06-01


async def store_old_time(store: GraphStore) -> str:
    """Rewrite the step of execution e1 as the old code stored a year-999 finish."""
    step_id = node_id(Label.TOOL_CALL, "subtask:e1")
    (step,) = await store.get_nodes([step_id])
    assert step is not None
    async with store.transaction("s1") as tx:
        await tx.put_node(dataclasses.replace(step, props={**step.props, "finished_at": OLD_TIME}))
    return step_id


READS = {
    "node": '{ node(nodeId: "ToolCall:subtask:e1") { ... on ToolCall { finishedAt properties } } }',
    "subgraph": '{ subgraph(sessionId: "s1") { ... on Subgraph { nodes { id createdAt '
    "... on ToolCall { finishedAt } } } } }",
    "trace": '{ traceProvenance(nodeId: "fig#v1") { __typename ... on ProvenanceTrace { broken '
    "chain { node { id ... on ToolCall { finishedAt } } } } } }",
    "chain": '{ session(sessionId: "s1") { ... on Session { chain { id '
    "... on ToolCall { finishedAt startedAt } } } } }",
    "export": '{ exportSession(sessionId: "s1", format: PROV_JSON) { __typename } }',
    "edges": '{ edgesByType(types: [NEXT, PRODUCES], sessionId: "s1") { ... on EdgeList { '
    "nodes { id ... on ToolCall { finishedAt } } } } }",
    "types": "{ nodesByType(labels: [TOOL_CALL]) { ... on NodeList { nodes { "
    "... on ToolCall { finishedAt } } } } }",
}


@pytest.mark.parametrize("read", list(READS))
async def test_a_stored_time_no_parser_accepts_does_not_fail_a_read(
    gql: GraphQLClient, store: GraphStore, read: str
) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig", 1)])
    await store_old_time(store)

    result = await gql.raw(READS[read])

    assert result.errors is None, result.errors
    assert OLD_TIME not in str(result.data) or read == "node"


async def test_a_bad_stored_time_reads_as_null_with_the_raw_text_in_properties(
    gql: GraphQLClient, store: GraphStore
) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1")
    await store_old_time(store)

    data = await gql.execute(READS["node"])

    assert data["node"]["finishedAt"] is None
    assert data["node"]["properties"]["finished_at"] == OLD_TIME


# A property its typed field cannot hold (an imported graph, a Neo4j another tool wrote to):
# the field answers what the type can hold of it, else null; ``properties`` the raw value.
MISTYPED = {
    "tool": ["a", "b"],  # a list where text is expected
    "status": {"a": 1},  # an object
    "language": 7.5,  # a number: written out as text, as String does
    "exit_code": "zero",  # text where a whole number is expected
    "started_at": 12,  # a number where a time is expected
    "code_hash": 2**40,  # a number: written out as text
    "stdout_hash": True,  # a truth value: as String writes it
}
TYPED = {
    "tool": None,
    "status": None,
    "language": "7.5",
    "exitCode": None,
    "startedAt": None,
    "codeHash": "1099511627776",
    "stdoutHash": "true",
}
CODE = "... on Code { tool status language exitCode startedAt codeHash stdoutHash }"
MISTYPED_READS = {
    "node": f'{{ node(nodeId: "Code:e1") {{ ... on GraphNode {{ excerpt }} {CODE} }} }}',
    "subgraph": f'{{ subgraph(sessionId: "s1", fold: false) {{ ... on Subgraph {{ nodes {{ id '
    f"{CODE} }} }} }} }}",
    "types": f"{{ nodesByType(labels: [CODE]) {{ ... on NodeList {{ nodes {{ {CODE} }} }} }} }}",
}


@pytest.mark.parametrize("read", list(MISTYPED_READS))
async def test_a_stored_property_its_field_cannot_hold_answers_null_not_an_error(
    gql: GraphQLClient, store: GraphStore, read: str
) -> None:
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1")
    (code,) = await store.get_nodes([node_id(Label.CODE, "e1")])
    assert code is not None
    async with store.transaction("s1") as tx:
        await tx.put_node(dataclasses.replace(code, props={**code.props, **MISTYPED}))

    result = await gql.raw(MISTYPED_READS[read])

    assert result.errors is None, result.errors
    (answered,) = [n for n in _listed(result.data) if n.get("tool", 0) != 0]
    assert {name: answered[name] for name in TYPED} == TYPED


def _listed(data: Any) -> list[dict[str, Any]]:
    value: dict[str, Any] = next(iter(data.values()))
    listed: list[dict[str, Any]] = value.get("nodes", [value])
    return listed


async def test_a_session_id_holding_the_paper_id_separator_is_refused(gql: GraphQLClient) -> None:
    answer = await b.first_message(gql, "p|urn:q")
    listed = await gql.execute(
        "{ nodesByType(labels: [RESEARCH_GOAL]) { ... on NodeList { total } } }"
    )

    assert (answer["__typename"], answer["field"]) == ("InvalidInput", "sessionId")
    assert listed["nodesByType"]["total"] == 0


async def test_a_c1_control_character_is_refused_like_a_c0_one(gql: GraphQLClient) -> None:
    answer = await b.first_message(gql, "s1", objective="next\x85line")

    assert (answer["__typename"], answer["field"]) == ("InvalidInput", "input.coreObjective")


@pytest.mark.parametrize(
    ("field", "document", "value"),
    [
        (
            "sessionId",
            "edgesByType(types: [NEXT], sessionId: $v) { __typename ...ERR }",
            "x\udc00y",
        ),
        (
            "artifactId",
            "artifactProvenance(artifactId: $v, version: 1) { __typename ...ERR }",
            "x\udc00y",
        ),
        ("nodeId", "node(nodeId: $v) { __typename ...ERR }", "Code:" + "e" * 9_000),
        ("sessionId", 'searchNodes(query: "x", sessionId: $v) { __typename ...ERR }', "s" * 9_000),
    ],
)
async def test_a_text_argument_no_read_can_answer_is_invalid_input(
    gql: GraphQLClient, field: str, document: str, value: str
) -> None:
    # A lone surrogate no store can encode, an id longer than any stored one: refused by
    # name, and the answer does not echo the value back.
    query = (
        "query($v: String!) { r: "
        + document.replace("...ERR", "... on InvalidInput { field message }")
        + " }"
    )
    if "nodeId" in document:
        query = query.replace("$v: String!", "$v: ID!")

    answer = (await gql.execute(query, v=value))["r"]

    assert (answer["__typename"], answer["field"]) == ("InvalidInput", field)
    assert len(answer["message"]) < 200
