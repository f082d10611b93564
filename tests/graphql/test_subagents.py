"""Subagent scopes, their children and the folded session view (reference §7.1 35-38, 58-64)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

SCOPE = "Task:subtask:subagent:sub-1"
EXEC_CHILD = "ToolCall:subtask:subagent:sub-1:exec:c1"
SEARCH_CHILD = "ToolCall:subtask:subagent:sub-1:exec:c2"
PAPER = "Paper:s1|https://doi.org/10.1/child"


async def child_execution(gql: GraphQLClient, name: str = "c1", finished: float = 10) -> None:
    await b.execution(
        gql,
        "s1",
        name,
        finished,
        parentSubagentId="sub-1",
        artifacts=[b.artifact(f"fig-{name}")],
    )


async def test_a_scope_groups_its_child_execution(gql: GraphQLClient) -> None:
    await b.subagent(gql, "s1", "sub-1", "running")
    await child_execution(gql)

    await b.subagent(gql, "s1", "sub-1", "completed", summary="found 3 partners")

    graph = await b.subgraph(gql, "s1")
    scope, child = b.props_of(graph, SCOPE), b.props_of(graph, EXEC_CHILD)
    assert (scope["task_type"], scope["subagent_type"], scope["status"]) == (
        "subagent",
        "literature",
        "completed",
    )
    assert (scope["objective"], scope["summary"]) == ("objective of sub-1", "found 3 partners")
    assert "parent_subtask_id" not in scope
    assert (child["tool_type"], child["tool_name"]) == ("execution", "run_python")
    assert child["parent_subtask_id"] == "subtask:subagent:sub-1"
    assert b.edges_of(graph, "CONTAINS") == {(SCOPE, EXEC_CHILD)}
    assert b.edges_of(graph, "PRODUCES") == {
        (EXEC_CHILD, "Code:c1"),
        ("Code:c1", "Artifact:fig-c1#v1"),
    }


async def test_a_resent_start_keeps_one_scope(gql: GraphQLClient) -> None:
    await b.subagent(gql, "s1", "sub-1")

    await b.subagent(gql, "s1", "sub-1")

    assert b.node_ids(await b.subgraph(gql, "s1")) == {SCOPE}


@pytest.mark.parametrize("top_level_first", [True, False])
async def test_an_execution_observed_in_two_scopes_has_one_step_where_the_later_put_it(
    gql: GraphQLClient, top_level_first: bool
) -> None:
    # Started before its subagent was known, finished inside it: one step, in the scope, in
    # either order (SPEC §3.9), not one in each chain producing the same Code.
    async def started() -> None:
        await b.execution(gql, "s1", "c1", 10, status="running")

    async def finished() -> None:
        await child_execution(gql, finished=20)

    await b.first_message(gql, "s1")
    await b.subagent(gql, "s1", "sub-1")
    for send in (started, finished) if top_level_first else (finished, started):
        await send()

    graph = await b.subgraph(gql, "s1")
    assert b.edges_of(graph, "PRODUCES") >= {(EXEC_CHILD, "Code:c1")}
    assert [s for s, t in b.edges_of(graph, "PRODUCES") if t == "Code:c1"] == [EXEC_CHILD]
    assert "ToolCall:subtask:c1" not in b.node_ids(graph)
    assert b.edges_of(graph, "CONTAINS") == {(SCOPE, EXEC_CHILD)}
    assert await b.session_chain(gql, "s1") == [SCOPE]
    assert b.props_of(graph, "Code:c1")["status"] == "completed"  # the later observation


@pytest.mark.parametrize(
    ("sent", "status", "reason"),
    [
        ("timed_out", "failed", "timed_out"),
        ("failed", "failed", "error"),
        ("cancelled", "cancelled", "aborted"),
        ("completed", "completed", None),
    ],
)
async def test_terminal_statuses_are_normalised(
    gql: GraphQLClient, sent: str, status: str, reason: str | None
) -> None:
    await b.subagent(gql, "s1", "sub-1", "running")

    await b.subagent(gql, "s1", "sub-1", sent, summary="s")

    props = (await b.node(gql, SCOPE))["properties"]
    assert (props["status"], props.get("failure_reason")) == (status, reason)


async def test_completed_without_summary_gets_a_fallback_summary(gql: GraphQLClient) -> None:
    await b.subagent(gql, "s1", "sub-1", "running")

    await b.subagent(gql, "s1", "sub-1", "completed", summary="  ")

    assert (await b.node(gql, SCOPE))["properties"]["summary"].strip()


async def folded_session(gql: GraphQLClient) -> None:
    """A scope with an execution child (one figure) and a search child (one paper)."""
    await b.subagent(gql, "s1", "sub-1", "running")
    await child_execution(gql)
    await b.tool_call(
        gql,
        "s1",
        "subtask:mcp:c2",
        20,
        papers=[b.paper("doi:10.1/child")],
        parentSubagentId="sub-1",
    )
    await b.subagent(gql, "s1", "sub-1", "completed", summary="文献综述 of TP53")


def surrogates(graph: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (e["source"], e["target"]): e["properties"]
        for e in graph["edges"]
        if e["properties"].get("surrogate")
    }


async def test_the_folded_view_has_one_surrogate_per_scope_product(gql: GraphQLClient) -> None:
    await folded_session(gql)

    graph = await b.subgraph(gql, "s1", fold=True)

    found = surrogates(graph)
    assert found == {
        (SCOPE, "Artifact:fig-c1#v1"): {"surrogate": True, "viaChild": EXEC_CHILD},
        (SCOPE, PAPER): {"surrogate": True, "viaChild": SEARCH_CHILD},
    }
    assert {end for pair in found for end in pair} <= b.node_ids(graph)
    assert (SCOPE, EXEC_CHILD) in b.edges_of(graph, "CONTAINS")
    real = [e for e in graph["edges"] if e["type"] == "PRODUCES" and e["source"] != SCOPE]
    assert real
    assert all("surrogate" not in e["properties"] for e in real)


async def test_several_products_of_one_kind_fold_into_a_group(gql: GraphQLClient) -> None:
    await b.subagent(gql, "s1", "sub-1", "running")
    await child_execution(gql, "c1", 10)
    await child_execution(gql, "c3", 30)

    graph = await b.subgraph(gql, "s1", fold=True)
    expanded = await expansion(gql, "groupExpansion(groupId: $id, sessionId: $s)", graph)

    (group,) = graph["groups"]
    assert (group["scopeId"], group["kind"], group["count"]) == (SCOPE, "ARTIFACT", 2)
    assert set(group["members"]) == {"Artifact:fig-c1#v1", "Artifact:fig-c3#v1"}
    assert {n["id"] for n in expanded["nodes"]} == {SCOPE, *group["members"]}


EXPANSION = """query($id: String!, $s: String!) { result: %s { __typename
  ... on Subgraph { nodes { id properties } edges { type source target properties } }
  ... on NodeNotFound { nodeId } ... on InvalidInput { field } } }"""


async def expansion(
    gql: GraphQLClient, field: str, graph: dict[str, Any] | None = None, scope: str = SCOPE
) -> dict[str, Any]:
    target = graph["groups"][0]["id"] if graph else scope
    data = await gql.execute(EXPANSION % field, id=target, s="s1")
    result: dict[str, Any] = data["result"]
    return result


SCOPE_EXPANSION = "scopeExpansion(scopeTaskId: $id, sessionId: $s)"


async def test_scope_expansion_unfolds_children_and_their_products(gql: GraphQLClient) -> None:
    await folded_session(gql)

    found = await expansion(gql, SCOPE_EXPANSION, scope="subtask:subagent:sub-1")

    nodes = {n["id"]: n["properties"] for n in found["nodes"]}
    children = [props for props in nodes.values() if props.get("parent_subtask_id")]
    assert {props["tool_type"] for props in children} == {"execution", "search"}
    assert {props["tool_name"] for props in children} == {"run_python", "mcp__europe-pmc__search"}
    assert {"Artifact:fig-c1#v1", PAPER} <= set(nodes)
    assert {e["type"] for e in found["edges"]} == {"CONTAINS", "PRODUCES", "NEXT"}
    assert not any(e["properties"].get("surrogate") for e in found["edges"])


SEARCH = """query($q: String!) { searchNodes(query: $q, sessionId: "s1") {
  ... on NodeList { nodes { id } } } }"""


async def test_search_finds_the_scope_by_summary_and_children_by_type(gql: GraphQLClient) -> None:
    await folded_session(gql)

    by_summary = await gql.execute(SEARCH, q="文献综述")
    by_type = await gql.execute(SEARCH, q="execution")

    assert SCOPE in {n["id"] for n in by_summary["searchNodes"]["nodes"]}
    assert EXEC_CHILD in {n["id"] for n in by_type["searchNodes"]["nodes"]}


async def test_after_cleanup_the_scope_is_gone(gql: GraphQLClient) -> None:
    await folded_session(gql)

    await b.cleanup_session(gql, "s1")

    graph = await b.subgraph(gql, "s1", fold=True)
    assert (graph["nodes"], graph["edges"]) == ([], [])
    assert (await expansion(gql, SCOPE_EXPANSION))["__typename"] == "NodeNotFound"


async def test_scope_expansion_validates_its_arguments(gql: GraphQLClient) -> None:
    document = EXPANSION % SCOPE_EXPANSION

    blank_scope = (await gql.execute(document, id=" ", s="s1"))["result"]
    blank_session = (await gql.execute(document, id=SCOPE, s=""))["result"]

    assert blank_scope == {"__typename": "InvalidInput", "field": "scopeTaskId"}
    assert blank_session == {"__typename": "InvalidInput", "field": "sessionId"}
