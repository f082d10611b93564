"""The ScienceMemory toggle: disabled, every root field answers MemoryGraphDisabled (SPEC §6)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

EXEMPT = {"health", "configureMemoryGraph", "_entities", "_service"}

QUERIES = {
    "node": 'node(nodeId: "fig")',
    "session": 'session(sessionId: "s1")',
    "subgraph": 'subgraph(sessionId: "s1")',
    "searchNodes": 'searchNodes(query: "tp53")',
    "nodesByType": "nodesByType(labels: [ARTIFACT])",
    "edgesByType": "edgesByType(types: [NEXT])",
    "getChain": 'getChain(nodeId: "fig", kind: VIEW_PRODUCING_CODE)',
    "chainExists": 'chainExists(nodeId: "fig", kinds: [VIEW_PRODUCING_CODE])',
    "traceProvenance": 'traceProvenance(nodeId: "fig")',
    "scopeExpansion": 'scopeExpansion(scopeTaskId: "subtask:subagent:x", sessionId: "s1")',
    "groupExpansion": 'groupExpansion(groupId: "_group:x:Paper", sessionId: "s1")',
    "artifactProvenance": 'artifactProvenance(artifactId: "fig", version: 1)',
    "recall": 'recall(topic: "tp53")',
    "lessons": "lessons",
    "memoryStats": "memoryStats",
    "sessionGreeting": "sessionGreeting",
    "exportSession": 'exportSession(sessionId: "s1", format: MERMAID)',
}

MUTATIONS = {
    "observeUploadFile": 'observeUploadFile(input: {sessionId: "s1", fileId: "f", name: "n", '
    'path: "p"})',
    "observeSessionFirstMessage": 'observeSessionFirstMessage(input: {sessionId: "s1", '
    'goalId: "goal:session:s1", coreObjective: "TP53"})',
    "observeExecution": 'observeExecution(input: {executionId: "e1", sessionId: "s1", '
    'turnId: "t", tool: "run_python", codeHash: "h", status: "succeeded", '
    'startedAt: "2026-01-01T00:00:00Z", finishedAt: "2026-01-01T00:00:01Z"})',
    "observeMcpSearch": 'observeMcpSearch(input: {invocationId: "i", sessionId: "s1", '
    'turnId: "t", source: "europe-pmc"})',
    "observeToolCall": 'observeToolCall(input: {taskId: "subtask:mcp:q", sessionId: "s1", '
    'toolName: "search", toolType: "search"})',
    "observeSubagent": 'observeSubagent(input: {subagentId: "sub", sessionId: "s1", '
    'turnId: "t", objective: "o", createdAt: "2026-01-01T00:00:00Z", status: "running"})',
    "declareArtifact": 'declareArtifact(input: {sessionId: "s1", executionId: "e1", '
    'artifact: {artifactId: "fig", version: 1}})',
    "declareEvidence": 'declareEvidence(input: {sessionId: "s1", content: "c", locator: "l", '
    'evidenceType: "quote", confidence: "high", strength: "strong", sourcePaperLink: "x.org"})',
    "declareClaim": 'declareClaim(input: {sessionId: "s1", content: "c", claimType: "finding", '
    'confidence: "high", locator: "l", citesArtifacts: [{alias: "a", artifactId: "fig"}]})',
    "linkClaimsToReport": 'linkClaimsToReport(input: {sessionId: "s1", artifactId: "r", '
    'artifactVersion: 1, claimIds: ["c"]})',
    "cleanupSession": 'cleanupSession(sessionId: "s1")',
    "cleanupProject": 'cleanupProject(projectId: "p1", sessionIds: ["s1"])',
    "recordMemory": 'recordMemory(input: {finding: {project: "p", finding: "f", '
    'significance: "s"}})',
    "compactMemory": "compactMemory",
}

ROOT_FIELDS = "{ __schema { queryType { fields { name } } mutationType { fields { name } } } }"


async def disabled(gql: GraphQLClient) -> None:
    result = await b.configure(gql, enabled=False)
    assert result["status"] == "DISABLED"


async def test_the_toggle_test_covers_every_root_field(gql: GraphQLClient) -> None:
    schema = (await gql.execute(ROOT_FIELDS))["__schema"]

    names = {f["name"] for root in schema.values() for f in root["fields"]}

    assert names - EXEMPT == QUERIES.keys() | MUTATIONS.keys()


@pytest.mark.parametrize("field", list(QUERIES))
async def test_every_query_answers_disabled(gql: GraphQLClient, field: str) -> None:
    await disabled(gql)

    data = await gql.execute(f"{{ result: {QUERIES[field]} {{ __typename }} }}")

    assert data["result"]["__typename"] == "MemoryGraphDisabled"


@pytest.mark.parametrize("field", list(MUTATIONS))
async def test_every_mutation_answers_disabled(gql: GraphQLClient, field: str) -> None:
    await disabled(gql)

    data = await gql.execute(f"mutation {{ result: {MUTATIONS[field]} {{ __typename }} }}")

    assert data["result"]["__typename"] == "MemoryGraphDisabled"


STATS = "{ memoryStats { ... on MemoryStats { total } } }"


async def test_nothing_is_recorded_while_disabled(gql: GraphQLClient) -> None:
    await disabled(gql)
    for field in ("observeExecution", "observeSessionFirstMessage", "recordMemory"):
        await gql.execute(f"mutation {{ result: {MUTATIONS[field]} {{ __typename }} }}")

    health = await b.configure(gql, enabled=True)

    assert (health["status"], health["enabled"]) == ("HEALTHY", True)
    assert (await b.subgraph(gql, "s1"))["total"] == 0
    assert (await gql.execute(STATS))["memoryStats"]["total"] == 0


HEALTH = f"{{ health {{ {b.HEALTH} }} }}"


async def test_health_says_disabled_and_enabling_again_restores_the_graph(
    gql: GraphQLClient,
) -> None:
    await b.execution(gql, "s1", "e1", 10)
    await disabled(gql)

    health = (await gql.execute(HEALTH))["health"]
    await b.configure(gql, enabled=True)

    assert (health["status"], health["enabled"]) == ("DISABLED", False)
    assert b.node_ids(await b.subgraph(gql, "s1")) == {"ToolCall:subtask:e1", "Code:e1"}
    assert (await b.execution(gql, "s1", "e2", 20))["__typename"] == "Observed"
