"""Small builders that record a session through the real GraphQL mutations.

Times are offsets in seconds from ``T0`` so a test states the order it means.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

T0 = datetime(2026, 1, 1, tzinfo=UTC)

RESULT = (
    "__typename ... on Observed { written nodeIds } ... on Error { code message } "
    "... on InvalidInput { field }"
)


def at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat()


async def mutate(
    gql: GraphQLClient, field: str, input_type: str, value: dict[str, Any], selection: str = RESULT
) -> dict[str, Any]:
    document = f"mutation($input: {input_type}!) {{ {field}(input: $input) {{ {selection} }} }}"
    data = await gql.execute(document, input=value)
    result: dict[str, Any] = data[field]
    return result


async def first_message(
    gql: GraphQLClient, session: str, objective: str = "Study TP53", **extra: Any
) -> dict[str, Any]:
    value = {
        "sessionId": session,
        "goalId": f"goal:session:{session}",
        "coreObjective": objective,
        **extra,
    }
    return await mutate(gql, "observeSessionFirstMessage", "ObserveSessionFirstMessageInput", value)


async def upload(
    gql: GraphQLClient, session: str, path: str, media_type: str | None = "text/csv", **extra: Any
) -> dict[str, Any]:
    value = {
        "sessionId": session,
        "fileId": file_id(session, path),
        "name": path,
        "path": path,
        "createdAt": at(0),
        "mediaType": media_type,
        **extra,
    }
    return await mutate(gql, "observeUploadFile", "ObserveUploadFileInput", value)


def file_id(session: str, path: str) -> str:
    return f"source_file:session:{session}:{path}"


def artifact(artifact_id: str, version: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "artifactId": artifact_id,
        "version": version,
        "logicalName": artifact_id,
        "path": f"outputs/{artifact_id}.png",
        **extra,
    }


async def execution(
    gql: GraphQLClient,
    session: str,
    execution_id: str,
    finished: float = 10,
    *,
    artifacts: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    value = {
        "executionId": execution_id,
        "sessionId": session,
        "turnId": "turn-1",
        "tool": "run_python",
        "language": "python",
        "codeHash": f"hash-{execution_id}",
        "status": "succeeded",
        "startedAt": at(finished - 1),
        "finishedAt": at(finished),
        "producedArtifacts": artifacts or [],
        **extra,
    }
    return await mutate(gql, "observeExecution", "ObserveExecutionInput", value)


def paper(link: str, title: str = "A paper", **extra: Any) -> dict[str, Any]:
    return {"link": link, "title": title, **extra}


async def tool_call(
    gql: GraphQLClient,
    session: str,
    task_id: str,
    retrieved: float = 10,
    *,
    papers: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    value = {
        "taskId": task_id,
        "sessionId": session,
        "turnId": "turn-1",
        "toolName": "mcp__europe-pmc__search",
        "toolType": "search",
        "retrievedAt": at(retrieved),
        "products": papers or [],
        **extra,
    }
    return await mutate(gql, "observeToolCall", "ObserveToolCallInput", value)


async def subagent(
    gql: GraphQLClient,
    session: str,
    subagent_id: str,
    status: str = "running",
    started: float = 5,
    **extra: Any,
) -> dict[str, Any]:
    value = {
        "subagentId": subagent_id,
        "sessionId": session,
        "turnId": "turn-1",
        "objective": f"objective of {subagent_id}",
        "createdAt": at(started),
        "status": status,
        "subagentType": "literature",
        **extra,
    }
    return await mutate(gql, "observeSubagent", "ObserveSubagentInput", value)


EVIDENCE_RESULT = (
    "__typename ... on EvidenceDeclared { evidenceId } "
    "... on DeclareRejected { code message instruction } ... on Error { code message }"
)
CLAIM_RESULT = (
    "__typename ... on ClaimDeclared { claimId chipMap { alias kind id nodeId label version } } "
    "... on DeclareRejected { code message instruction alias } ... on Error { code message } "
    "... on InvalidInput { field }"
)


async def evidence(
    gql: GraphQLClient,
    session: str,
    *,
    link: str | None = None,
    file: str | None = None,
    content: str = "TP53 is mutated in 50% of tumours",
    **extra: Any,
) -> dict[str, Any]:
    value = {
        "sessionId": session,
        "content": content,
        "locator": "p. 3",
        "evidenceType": "quote",
        "confidence": "high",
        "strength": "strong",
        "sourcePaperLink": link,
        "sourceFileId": file,
        **extra,
    }
    return await mutate(gql, "declareEvidence", "DeclareEvidenceInput", value, EVIDENCE_RESULT)


async def claim(
    gql: GraphQLClient,
    session: str,
    *,
    content: str = "TP53 drives the effect",
    evidence_ids: list[str] | None = None,
    artifacts: list[tuple[str, int | None]] | None = None,
    files: list[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    value = {
        "sessionId": session,
        "content": content,
        "claimType": "finding",
        "confidence": "high",
        "locator": "§2",
        "citesEvidence": [{"alias": f"e{i}", "id": e} for i, e in enumerate(evidence_ids or [])],
        "citesArtifacts": [
            {"alias": f"a{i}", "artifactId": a, "version": v}
            for i, (a, v) in enumerate(artifacts or [])
        ],
        "citesSourceFiles": [{"alias": f"f{i}", "id": f} for i, f in enumerate(files or [])],
        **extra,
    }
    return await mutate(gql, "declareClaim", "DeclareClaimInput", value, CLAIM_RESULT)


async def link_claims(
    gql: GraphQLClient, session: str, artifact_id: str, version: int, claim_ids: list[str]
) -> dict[str, Any]:
    value = {
        "sessionId": session,
        "artifactId": artifact_id,
        "artifactVersion": version,
        "claimIds": claim_ids,
    }
    selection = (
        "__typename ... on ClaimsLinked { linked } "
        "... on DeclareRejected { code instruction } ... on Error { code message }"
    )
    return await mutate(gql, "linkClaimsToReport", "LinkClaimsToReportInput", value, selection)


SUBGRAPH = """query($s: String!, $fold: Boolean) { subgraph(sessionId: $s, fold: $fold) {
  __typename
  ... on Subgraph { total truncated nodes { id key label properties }
                    edges { type source target properties }
                    groups { id scopeId kind count members } } } }"""


async def subgraph(gql: GraphQLClient, session: str, *, fold: bool = False) -> dict[str, Any]:
    """The session's subgraph; unfolded (only stored edges) unless ``fold``."""
    data = await gql.execute(SUBGRAPH, s=session, fold=fold)
    result: dict[str, Any] = data["subgraph"]
    return result


def edges_of(graph: dict[str, Any], edge_type: str) -> set[tuple[str, str]]:
    return {(e["source"], e["target"]) for e in graph["edges"] if e["type"] == edge_type}


def node_ids(graph: dict[str, Any], label: str | None = None) -> set[str]:
    return {n["id"] for n in graph["nodes"] if label is None or n["label"] == label}


async def mcp_search(
    gql: GraphQLClient,
    session: str,
    invocation_id: str,
    retrieved: float = 10,
    *,
    records: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    value = {
        "invocationId": invocation_id,
        "sessionId": session,
        "turnId": "turn-1",
        "source": "europe-pmc",
        "retrievedAt": at(retrieved),
        "records": records or [],
        **extra,
    }
    return await mutate(gql, "observeMcpSearch", "ObserveMcpSearchInput", value)


ARTIFACT_RESULT = (
    "__typename ... on ArtifactRegistered { written artifact { id } } "
    "... on Error { code message } ... on InvalidInput { field }"
)


async def declare_artifact(
    gql: GraphQLClient, session: str, execution_id: str, produced: dict[str, Any]
) -> dict[str, Any]:
    value = {"sessionId": session, "executionId": execution_id, "artifact": produced}
    return await mutate(gql, "declareArtifact", "DeclareArtifactInput", value, ARTIFACT_RESULT)


CLEANUP_RESULT = "__typename ... on Cleanup { marked deleted } ... on Error { code message }"


async def cleanup_session(gql: GraphQLClient, session: str) -> dict[str, Any]:
    document = f"mutation($s: String!) {{ cleanupSession(sessionId: $s) {{ {CLEANUP_RESULT} }} }}"
    result: dict[str, Any] = (await gql.execute(document, s=session))["cleanupSession"]
    return result


async def cleanup_project(
    gql: GraphQLClient, project: str, sessions: list[str] | None
) -> dict[str, Any]:
    document = (
        "mutation($p: String!, $s: [String!]) { cleanupProject(projectId: $p, "
        f"sessionIds: $s) {{ {CLEANUP_RESULT} }} }}"
    )
    result: dict[str, Any] = (await gql.execute(document, p=project, s=sessions))["cleanupProject"]
    return result


HEALTH = "status backend enabled reachable pendingWrites"


async def configure(gql: GraphQLClient, **settings: Any) -> dict[str, Any]:
    selection = f"__typename ... on Health {{ {HEALTH} }} ... on Error {{ code message }}"
    return await mutate(
        gql, "configureMemoryGraph", "MemoryGraphSettingsInput", settings, selection
    )


CHAIN = """query($id: ID!, $kind: ChainKind!, $s: String, $v: Int) {
  getChain(nodeId: $id, kind: $kind, sessionId: $s, version: $v) { __typename
    ... on Chain { total truncated nodes { id label } edges { type source target } }
    ... on NodeNotFound { nodeId } ... on InvalidInput { field }
    ... on Error { code message } } }"""


async def chain(
    gql: GraphQLClient,
    node_id: str,
    kind: str,
    session: str | None = None,
    version: int | None = None,
) -> dict[str, Any]:
    data = await gql.execute(CHAIN, id=node_id, kind=kind, s=session, v=version)
    result: dict[str, Any] = data["getChain"]
    return result


CHAIN_EXISTS = """query($id: ID!, $kinds: [ChainKind!]!, $s: String) {
  chainExists(nodeId: $id, kinds: $kinds, sessionId: $s) { __typename
    ... on ChainAvailability { entries { kind exists } } ... on Error { code message } } }"""


async def chain_exists(
    gql: GraphQLClient, node_id: str, kinds: list[str], session: str | None = None
) -> dict[str, bool]:
    data = await gql.execute(CHAIN_EXISTS, id=node_id, kinds=kinds, s=session)
    entries = data["chainExists"]["entries"]
    return {entry["kind"]: entry["exists"] for entry in entries}


TRACE = """query($id: ID!, $target: NodeLabel, $hops: Int, $s: String) {
  traceProvenance(nodeId: $id, targetLabel: $target, maxHops: $hops, sessionId: $s) {
    __typename
    ... on ProvenanceTrace { broken truncated reason startNode { id }
      path { hop viaEdge reachedFrom isTerminal node { id label } }
      chain { hop viaEdge reachedFrom isTerminal node { id label } } }
    ... on NodeNotFound { nodeId } ... on InvalidInput { field }
    ... on Error { code message } } }"""


async def trace(
    gql: GraphQLClient,
    node_id: str,
    *,
    target: str | None = None,
    hops: int | None = None,
    session: str | None = None,
) -> dict[str, Any]:
    data = await gql.execute(TRACE, id=node_id, target=target, hops=hops, s=session)
    result: dict[str, Any] = data["traceProvenance"]
    return result


NODE = """query($id: ID!, $s: String) { node(nodeId: $id, sessionId: $s) { __typename
  ... on GraphNode { id key label properties }
  ... on NodeNotFound { nodeId } ... on InvalidInput { field } ... on Error { code message } } }"""


async def node(gql: GraphQLClient, node_id: str, session: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = (await gql.execute(NODE, id=node_id, s=session))["node"]
    return result


SESSION_CHAIN = """query($s: String!) { session(sessionId: $s) { __typename
  ... on Session { chain { id } } ... on Error { code message } } }"""


async def session_chain(gql: GraphQLClient, session: str) -> list[str]:
    data = await gql.execute(SESSION_CHAIN, s=session)
    return [step["id"] for step in data["session"]["chain"]]


def props_of(graph: dict[str, Any], global_id: str) -> dict[str, Any]:
    (found,) = [n["properties"] for n in graph["nodes"] if n["id"] == global_id]
    result: dict[str, Any] = found
    return result
