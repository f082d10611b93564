"""Answers the explorer and typed clients rely on: paged chains with their anchor, folded
subgraphs whose edges stay inside the answer, and field names that never clash."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

GOAL = "ResearchGoal:goal:session:s1"
PAGE = """query($id: ID!, $after: String) {
  getChain(nodeId: $id, kind: VIEW_GOAL, first: 4, after: $after) {
    ... on Chain { total truncated endCursor nodes { id } edges { source target } } } }"""


async def test_a_chain_is_paged_and_keeps_its_goal(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")
    for index in range(5):
        await b.execution(gql, "s1", f"e{index}", 10 + index)

    first = (await gql.execute(PAGE, id="ToolCall:subtask:e4"))["getChain"]
    second = (await gql.execute(PAGE, id="ToolCall:subtask:e4", after=first["endCursor"]))[
        "getChain"
    ]

    for page in (first, second):
        ids = [n["id"] for n in page["nodes"]]
        assert (ids[0], ids[-1]) == ("ToolCall:subtask:e4", GOAL)
    assert (first["total"], first["truncated"], len(first["nodes"])) == (6, True, 4)
    assert (second["truncated"], second["endCursor"], len(second["nodes"])) == (False, None, 4)
    steps = {n["id"] for page in (first, second) for n in page["nodes"]}
    assert steps == {GOAL, *(f"ToolCall:subtask:e{i}" for i in range(5))}


async def test_folded_edges_point_only_at_returned_nodes_or_groups(gql: GraphQLClient) -> None:
    await b.first_message(gql, "s1")
    await b.subagent(gql, "s1", "sub-1", "running")
    for name, at in (("c1", 10), ("c2", 11), ("c3", 12)):
        artifact = b.artifact(f"fig-{name}")
        await b.execution(gql, "s1", name, at, parentSubagentId="sub-1", artifacts=[artifact])

    graph = await b.subgraph(gql, "s1", fold=True)

    nodes = b.node_ids(graph)
    groups = {group["id"]: group for group in graph["groups"]}
    assert groups  # three artifacts made inside one scope fold into a group
    endpoints = {end for edge in graph["edges"] for end in (edge["source"], edge["target"])}
    assert endpoints <= nodes | set(groups)
    for group in groups.values():
        assert {group["scopeId"], *group["members"]} <= nodes


PROVENANCE = """query { artifactProvenance(artifactId: "fig", version: 1) {
  ... on ArtifactProvenance { producingCode { id } } ... on Error { code message } } }"""
OLD_NAME = """query { artifactProvenance(artifactId: "fig", version: 1) {
  ... on ArtifactProvenance { code { id } } } }"""


async def test_the_producing_code_has_a_name_that_does_not_clash(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig")])

    found = (await gql.execute(PROVENANCE))["artifactProvenance"]
    old = (await gql.execute(OLD_NAME))["artifactProvenance"]

    assert found == {"producingCode": {"id": "Code:e1"}}
    assert old == {"code": {"id": "Code:e1"}}  # still answered, for one release


async def test_code_is_deprecated_in_favour_of_producing_code(gql: GraphQLClient) -> None:
    introspection = """{ __type(name: "ArtifactProvenance") {
      fields(includeDeprecated: true) { name isDeprecated } } }"""

    fields = (await gql.execute(introspection))["__type"]["fields"]

    flags = {field["name"]: field["isDeprecated"] for field in fields}
    assert (flags["code"], flags["producingCode"]) == (True, False)
