"""The MCP tools through the SDK's client, on both backends: what each role is offered, and
that every call answers what the GraphQL field of the same use case answers."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import TYPE_CHECKING, Any

import mcp_types

from gateway.mcp.tools import Caller, Role, in_tool_words
from resolvers.memory import record_memory
from tests import builders as b
from tests.mcp.conftest import REVIEWER, answer, connected, failure
from tests.memory import factories

if TYPE_CHECKING:
    from gateway.runtime.state import Runtime
    from resolvers.store import GraphStore
    from tests.conftest import GraphQLClient

S = "s-mcp"
DOI = "https://doi.org/10.1/x"
AGENT_TOOLS = {"query_graph", "declare_evidence", "declare_claim", "recall", "lessons"}


def evidence_arguments(**changes: Any) -> dict[str, Any]:
    return {
        "session_id": S,
        "content": "TP53 is mutated in half of tumours",
        "locator": "p. 3",
        "evidence_type": "statistical",
        "confidence": "high",
        "strength": "strong",
        **changes,
    }


def claim_arguments(**changes: Any) -> dict[str, Any]:
    return {
        "session_id": S,
        "content": "TP53 drives the effect",
        "claim_type": "finding",
        "confidence": "high",
        "locator": "§2",
        **changes,
    }


async def test_agent_is_offered_its_tools_with_schemas(runtime: Runtime) -> None:
    async with connected(runtime) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    assert set(tools) == AGENT_TOOLS
    declare = tools["declare_claim"]
    assert set(declare.input_schema["required"]) == {
        "session_id",
        "content",
        "claim_type",
        "confidence",
        "locator",
    }
    assert "cites_evidence" in declare.input_schema["properties"]
    assert "silently" in (declare.description or "")
    assert "alias" in (declare.description or "")
    assert tools["query_graph"].annotations is not None
    assert tools["query_graph"].annotations.read_only_hint is True


async def test_reviewer_gets_the_trace_instead_of_the_declares(runtime: Runtime) -> None:
    async with connected(runtime, REVIEWER) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    assert set(tools) == {"query_graph", "trace_provenance", "recall", "lessons"}
    assert (tools["trace_provenance"].description or "").startswith("RESTRICTED USE")


async def test_read_only_agent_is_not_offered_the_declares(runtime: Runtime) -> None:
    async with connected(runtime, Caller(Role.AGENT, can_write=False)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        refused = failure(await client.call_tool("declare_claim", claim_arguments()))

    assert names == {"query_graph", "recall", "lessons"}
    assert (refused["code"], refused["field"]) == ("INVALID_INPUT", "name")


async def test_declared_evidence_is_cited_by_a_claim_with_its_chip(
    runtime: Runtime, gql: GraphQLClient
) -> None:
    await b.tool_call(gql, S, "subtask:mcp:inv-1", papers=[b.paper(DOI)])

    async with connected(runtime) as client:
        evidence = answer(
            await client.call_tool(
                "declare_evidence", evidence_arguments(source_paper_link="doi:10.1/X")
            )
        )
        claim = answer(
            await client.call_tool(
                "declare_claim", claim_arguments(cites_evidence={"E1": evidence["evidence_id"]})
            )
        )

    cited = await b.chain(gql, claim["node_id"], "VIEW_CITING_EVIDENCE_FOR_CLAIM")
    assert {node["id"] for node in cited["nodes"]} == {claim["node_id"], evidence["node_id"]}
    source = await b.chain(gql, evidence["node_id"], "VIEW_SOURCE_PAPER")
    assert f"Paper:{S}|{DOI}" in {node["id"] for node in source["nodes"]}
    assert claim["chips"] == [
        {
            "alias": "E1",
            "kind": "EVIDENCE",
            "id": evidence["evidence_id"],
            "node_id": evidence["node_id"],
            "version": None,
        }
    ]


async def test_a_long_text_is_cut_in_a_list_and_whole_for_its_node(
    runtime: Runtime, gql: GraphQLClient
) -> None:
    await b.tool_call(gql, S, "subtask:mcp:inv-1", papers=[b.paper(DOI)])
    content = "TP53 " + "x" * 5_000
    async with connected(runtime) as client:
        evidence = answer(
            await client.call_tool(
                "declare_evidence", evidence_arguments(content=content, source_paper_link=DOI)
            )
        )
        listed = answer(
            await client.call_tool("query_graph", {"session_id": S, "labels": ["Evidence"]})
        )
        alone = answer(
            await client.call_tool("query_graph", {"session_id": S, "node_id": evidence["node_id"]})
        )

    (in_list,) = listed["nodes"]
    (node,) = alone["nodes"]
    assert in_list["properties"]["content"] == content[:400] + "…"
    assert in_list["cut_properties"] == ["content"]
    assert node["properties"]["content"] == content
    assert "cut_properties" not in node


async def test_rejected_declare_is_a_tool_error_with_the_graphql_instruction(
    runtime: Runtime, gql: GraphQLClient
) -> None:
    await b.tool_call(gql, S, "subtask:mcp:inv-1", papers=[b.paper(DOI)])
    over_graphql = await b.evidence(gql, S, link="https://example.org/not-found")

    async with connected(runtime) as client:
        error = failure(
            await client.call_tool(
                "declare_evidence",
                evidence_arguments(source_paper_link="https://example.org/not-found"),
            )
        )

    assert error["__typename"] == "DeclareRejected"
    assert error["code"] == over_graphql["code"] == "SOURCE_PAPER_NOT_FOUND"
    assert error["instruction"] == in_tool_words(over_graphql["instruction"])
    evidence = await gql.execute(
        "{ nodesByType(labels: [EVIDENCE]) { ... on NodeList { total } } }"
    )
    assert evidence["nodesByType"]["total"] == 0


async def test_claim_without_cites_is_told_which_arguments_to_fill(runtime: Runtime) -> None:
    async with connected(runtime) as client:
        error = failure(await client.call_tool("declare_claim", claim_arguments()))

    assert (error["__typename"], error["code"]) == ("DeclareRejected", "NO_CITES_TARGET")
    assert "cites_evidence" in error["instruction"]
    assert "citesEvidence" not in error["instruction"]


async def test_claim_citing_a_missing_artifact_names_its_alias(runtime: Runtime) -> None:
    async with connected(runtime) as client:
        error = failure(
            await client.call_tool(
                "declare_claim", claim_arguments(cites_artifacts={"F1": "no-such-figure"})
            )
        )

    assert (error["code"], error["alias"]) == ("ARTIFACT_VERSION_NOT_FOUND", "F1")


async def test_bad_arguments_name_the_field(runtime: Runtime) -> None:
    async with connected(runtime) as client:
        missing = failure(await client.call_tool("declare_evidence", {"session_id": S}))
        bad_label = failure(
            await client.call_tool("query_graph", {"session_id": S, "labels": ["Nope"]})
        )
        stray = failure(
            await client.call_tool(
                "declare_claim",
                claim_arguments(cites_evidence={"E1": "x"}, cites_artifact_versions={"F9": 2}),
            )
        )

    assert (missing["code"], missing["field"]) == ("INVALID_INPUT", "content")
    assert (bad_label["code"], bad_label["field"]) == ("INVALID_INPUT", "labels.0")
    assert stray["field"] == "cites_artifact_versions"


async def test_an_integer_argument_takes_only_a_json_integer(runtime: Runtime) -> None:
    # The tool's schema says integer: a string of digits or a boolean is a client's mistake,
    # refused with the argument's name rather than read as a number.
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "first": ("query_graph", {"session_id": S, "query": "x", "first": "5"}),
        "limit_per_type": ("recall", {"topic": "x", "limit_per_type": True}),
        "cites_artifact_versions.A": (
            "declare_claim",
            claim_arguments(cites_artifacts={"A": "fig"}, cites_artifact_versions={"A": "1"}),
        ),
    }
    async with connected(runtime) as client:
        refused = {
            argument: failure(await client.call_tool(tool, arguments))
            for argument, (tool, arguments) in calls.items()
        }
        found = answer(
            await client.call_tool("query_graph", {"session_id": S, "query": "x", "first": 5})
        )
    async with connected(runtime, REVIEWER) as client:
        hops = failure(
            await client.call_tool("trace_provenance", {"node_id": "f", "max_hops": 2.0})
        )

    assert {name: (e["code"], e["field"]) for name, e in refused.items()} == {
        name: ("INVALID_INPUT", name) for name in calls
    }
    assert (hops["code"], hops["field"]) == ("INVALID_INPUT", "max_hops")
    assert found["total"] == 0


async def test_a_refused_argument_is_named_as_the_tool_spells_it(runtime: Runtime) -> None:
    # The use cases name GraphQL's arguments (``limitPerType``, ``input.content``) and a cite
    # by its place in a list the agent never sent; the agent sent these.
    calls = {
        "limit_per_type": ("recall", {"topic": "x", "limit_per_type": 0}),
        "session_id": ("declare_claim", claim_arguments(session_id="", cites_evidence={"A": "x"})),
        "cites_evidence": ("declare_claim", claim_arguments(cites_evidence={"ok": "x", " B": "x"})),
        "cites_artifact_versions": (
            "declare_claim",
            claim_arguments(cites_artifacts={"A": "fig"}, cites_artifact_versions={"A": -1}),
        ),
        "content": ("declare_evidence", evidence_arguments(content="", source_paper_link=DOI)),
    }
    async with connected(runtime) as client:
        named = {
            argument: failure(await client.call_tool(tool, arguments))["field"]
            for argument, (tool, arguments) in calls.items()
        }
    async with connected(runtime, REVIEWER) as client:
        hops = failure(await client.call_tool("trace_provenance", {"node_id": "f", "max_hops": 0}))

    assert named == {argument: argument for argument in calls}
    assert hops["field"] == "max_hops"


async def test_query_graph_finds_what_search_nodes_finds(
    runtime: Runtime, gql: GraphQLClient
) -> None:
    await b.tool_call(gql, S, "subtask:mcp:inv-1", papers=[b.paper(DOI, title="TP53 in glioma")])
    await b.tool_call(gql, S, "subtask:mcp:inv-2", 20, papers=[b.paper("https://a.org/p", "KRAS")])
    await b.execution(gql, S, "exec-1", 30, artifacts=[b.artifact("tp53-plot")])
    over_graphql = await gql.execute(
        'query($s: String) { searchNodes(query: "tp53 glioma", sessionId: $s) '
        "{ ... on NodeList { nodes { id } total } } }",
        s=S,
    )

    async with connected(runtime) as client:
        found = answer(
            await client.call_tool("query_graph", {"session_id": S, "query": "tp53 glioma"})
        )
        papers = answer(
            await client.call_tool("query_graph", {"session_id": S, "labels": ["Paper"]})
        )

    expected = [node["id"] for node in over_graphql["searchNodes"]["nodes"]]
    assert [node["id"] for node in found["nodes"]] == expected
    assert found["total"] == over_graphql["searchNodes"]["total"]
    assert {node["key"] for node in papers["nodes"]} == {DOI, "https://a.org/p"}


async def test_query_graph_walks_a_chain(runtime: Runtime, gql: GraphQLClient) -> None:
    await b.execution(gql, S, "exec-1", 10, artifacts=[b.artifact("fig", 1)])

    async with connected(runtime) as client:
        walked = answer(
            await client.call_tool(
                "query_graph",
                {"session_id": S, "node_id": "fig", "chain": "viewProducingCode"},
            )
        )
        missing = failure(
            await client.call_tool("query_graph", {"session_id": S, "node_id": "nothing"})
        )

    assert [node["id"] for node in walked["nodes"]] == ["Artifact:fig#v1", "Code:exec-1"]
    assert walked["edges"] == [
        {"type": "produces", "source": "Code:exec-1", "target": "Artifact:fig#v1"}
    ]
    assert (missing["__typename"], missing["code"]) == ("NodeNotFound", "NODE_NOT_FOUND")


async def test_reviewer_trace_answers_the_graphql_verdict(
    runtime: Runtime, gql: GraphQLClient
) -> None:
    await b.first_message(gql, S, "Study TP53")
    await b.execution(gql, S, "exec-1", 10, artifacts=[b.artifact("fig", 1)])
    await b.execution(gql, "s-other", "exec-9", 10, artifacts=[b.artifact("orphan", 1)])
    traced = await b.trace(gql, "fig")

    async with connected(runtime, REVIEWER) as client:
        verdict = answer(await client.call_tool("trace_provenance", {"node_id": "fig"}))
        orphan = answer(await client.call_tool("trace_provenance", {"node_id": "orphan"}))
    async with connected(runtime) as client:
        refused = failure(await client.call_tool("trace_provenance", {"node_id": "fig"}))

    assert (verdict["broken"], verdict["truncated"], verdict["reason"]) == (
        traced["broken"],
        traced["truncated"],
        traced["reason"],
    )
    assert verdict["broken"] is False
    assert verdict["start"]["id"] == "Artifact:fig#v1"
    assert [step["node"]["id"] for step in verdict["path"]] == [
        step["node"]["id"] for step in traced["path"]
    ]
    assert verdict["path"][-1]["node"]["label"] == "ResearchGoal"
    assert verdict["path"][0]["reached_from"] == "Artifact:fig#v1"
    assert orphan["broken"] is True
    assert orphan["path"] == []
    assert refused["field"] == "name"


async def test_recall_and_lessons_read_the_research_memory(runtime: Runtime) -> None:
    await record_memory(runtime.memory, factories.finding(finding="TP53 loss in glioma"))
    await record_memory(runtime.memory, factories.pitfall(issue="GEO timeout"))

    async with connected(runtime) as client:
        recalled = answer(await client.call_tool("recall", {"topic": "glioma"}))
        lessons = answer(await client.call_tool("lessons", {}))
        bad = failure(await client.call_tool("recall", {"topic": "   "}))

    findings = {group["type"]: group for group in recalled["groups"]}["finding"]
    assert [record["finding"] for record in findings["records"]] == ["TP53 loss in glioma"]
    assert [record["issue"] for record in lessons["records"]] == ["GEO timeout"]
    assert (bad["code"], bad["field"]) == ("INVALID_INPUT", "topic")


async def test_a_stored_non_finite_value_is_answered_as_null(
    runtime: Runtime, gql: GraphQLClient, store: GraphStore
) -> None:
    await b.execution(gql, S, "exec-1", 10, artifacts=[b.artifact("fig", 1)])
    (fig,) = await store.get_nodes(["Artifact:fig#v1"])
    assert fig is not None
    async with store.transaction(S) as tx:
        odd = {"score": math.nan, "range": [1.5, math.inf]}
        await tx.put_node(dataclasses.replace(fig, props={**fig.props, **odd}))

    async with connected(runtime) as client:
        result = await client.call_tool("query_graph", {"session_id": S, "node_id": "fig"})

    (content,) = result.content
    assert isinstance(content, mcp_types.TextContent)
    (node,) = json.loads(content.text, parse_constant=_refuse)["nodes"]
    assert (node["properties"]["score"], node["properties"]["range"]) == (None, [1.5, None])
    (structured,) = answer(result)["nodes"]
    assert structured["properties"]["score"] is None


def _refuse(token: str) -> Any:
    raise ValueError(f"not JSON: {token}")
