"""What every enum value and argument means, for the schema's readers (GraphiQL, generated
clients).

Kept in one place and attached to the registered enums at import: the domain enums
(``ChainKind``, ``MatchMode``) live in ``resolvers`` and cannot carry strawberry metadata, and
``strawberry.enum_value`` would change the Python values that ``to_domain()`` relies on.
Arguments are described by name (``sessionId`` means the same everywhere), per field where they
differ, on the built schema (``describe_arguments``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphql import GraphQLObjectType

from gateway.schema.enums import ChainKind, ChipKind, EdgeType, HealthStatus, MatchMode, NodeLabel
from gateway.schema.errors import ErrorCode, GraphBackend
from gateway.schema.exports import GraphExportFormat
from gateway.schema.memory import Feasibility, MemoryRecordType
from gateway.schema.subscriptions import GraphEventKind

if TYPE_CHECKING:
    from collections.abc import Mapping
    from enum import Enum

    from graphql import GraphQLSchema

_STEP = "From a step (ToolCall or Task)"

CHAIN_KINDS = {
    "VIEW_PREV_TASK": f"{_STEP}, button 'previous task': the step before it (`next` ←, one).",
    "VIEW_NEXT_TASK": f"{_STEP}, button 'next task': the step after it (`next` →, one).",
    "VIEW_GOAL": f"{_STEP}, button 'goal': every step back along `next` to the ResearchGoal.",
    "VIEW_INPUT": "From a Code, button 'input': an Artifact version it read (`input` ←, one).",
    "VIEW_OUTPUT": "From a Code, button 'output': the Artifacts it produced (`produces` →).",
    "VIEW_PRODUCING_TASK": "From a Code, button 'producing task': its ToolCall (`produces` ←).",
    "VIEW_EXTRACTED_EVIDENCE": "From a Paper, button 'evidence': its Evidence (`extracts` →).",
    "VIEW_CITING_CLAIM": "From a Paper, button 'citing claims': Evidence, then the Claims it "
    "supports.",
    "VIEW_CITING_ARTIFACT": "From a Paper, button 'citing reports': Evidence, Claims, then the "
    "report Artifacts they are stated in.",
    "VIEW_SEARCHING_TASK": "From a Paper, button 'found by': the search ToolCall that found it "
    "(`produces` ←, one).",
    "VIEW_SOURCE_PAPER": "From an Evidence, button 'source': the Paper it was extracted from "
    "(`extracts` ←, one).",
    "VIEW_CITING_CLAIM_FOR_EVIDENCE": "From an Evidence, button 'citing claims': the Claims it "
    "supports (`supports` →).",
    "VIEW_CITING_ARTIFACT_FOR_EVIDENCE": "From an Evidence, button 'citing reports': its Claims, "
    "then their report Artifacts.",
    "VIEW_CITING_EVIDENCE_FOR_CLAIM": "From a Claim, button 'evidence': every Evidence "
    "supporting it (`supports` ←).",
    "VIEW_CITING_SOURCE_FILE_FOR_CLAIM": "From a Claim, button 'uploaded files': the SourceFiles "
    "cited directly (`supports` ←).",
    "VIEW_CONTAINING_ARTIFACT": "From a Claim, button 'report': the report Artifact it is "
    "stated in (`stated_in` →, one).",
    "VIEW_CONTAINED_CLAIMS": "From a report Artifact, button 'claims': the Claims stated in it "
    "(`stated_in` ←).",
    "VIEW_CITING_CLAIM_FOR_ARTIFACT": "From an Artifact, button 'citing claims': the Claims it "
    "supports (`supports` →).",
    "VIEW_PRODUCING_CODE": "From an Artifact, button 'producing code': the Code that produced "
    "it (`produces` ←, one).",
    "VIEW_CITING_EVIDENCE_FOR_ARTIFACT": "From a report Artifact, button 'evidence': its Claims, "
    "then the Evidence supporting them.",
    "VIEW_CITED_PAPER": "From a report Artifact, button 'cited papers': Claims, Evidence, then "
    "the Papers they were extracted from.",
    "VIEW_RELATED_TASK": "From an Artifact, button 'related task': its Code, that Code's "
    "ToolCall, and the steps back to the ResearchGoal.",
}

NODE_LABELS = {
    "RESEARCH_GOAL": "The session's research goal (`goal:session:<sessionId>`).",
    "TASK": "A subagent's scope (`subtask:subagent:<subagentId>`); groups its steps.",
    "TOOL_CALL": "One step: a code execution (`subtask:<executionId>`) or a search/fetch call "
    "(`subtask:mcp:<invocationId>`).",
    "CODE": "A piece of executed code (key: the executionId).",
    "ARTIFACT": "One version of a produced file (`<artifactId>#v<version>`).",
    "PAPER": "A literature record of a session (key: its normalised link).",
    "EVIDENCE": "A passage extracted from a Paper or an uploaded PDF (server-assigned UUID).",
    "CLAIM": "A cited assertion of a report (server-assigned UUID).",
    "SOURCE_FILE": "A user-uploaded file (`source_file:session:<sessionId>:<path>`).",
}

EDGE_TYPES = {
    "NEXT": "Temporal order: goal → first step, step → step, child → child in a scope.",
    "PRODUCES": "What a step produced: ToolCall → Code, Code → Artifact, ToolCall → Paper.",
    "EXTRACTS": "Evidence drawn from a source: Paper or PDF SourceFile → Evidence.",
    "SUPPORTS": "What backs an assertion: Evidence, Artifact or non-PDF SourceFile → Claim.",
    "STATED_IN": "The claim appears in this report version: Claim → Artifact.",
    "SUPERSEDES": "Version lineage: Artifact vN → Artifact v(N-1).",
    "INPUT": "The code read this: Artifact version or SourceFile → Code.",
    "CONTAINS": "A subagent scope groups its steps: Task → its first child ToolCall.",
    "FEEDS": "An uploaded file feeds the goal: SourceFile → ResearchGoal.",
}

MATCH_MODES = {
    "ANY_TERM": "A node matching any query term (ranked by how many match).",
    "ALL_TERMS": "Only nodes matching every query term.",
}

HEALTH_STATUSES = {
    "HEALTHY": "The backend answers and holds every accepted write; reads and writes work.",
    "DEGRADED": (
        "Something is wrong and `reason` says what: Neo4j is selected but unreachable (reads "
        "fail, observes are queued), the file store cannot write, or accepted observes wait "
        "in the outbox (`pendingWrites`) and reads do not show them yet."
    ),
    "NEEDS_PASSWORD": "Neo4j is selected but has no password configured.",
    "DISABLED": "The toggle is off: nothing is recorded, every root field says so.",
}

CHIP_KINDS = {
    "EVIDENCE": "The alias cites an Evidence.",
    "ARTIFACT": "The alias cites an Artifact version.",
    "SOURCE_FILE": "The alias cites an uploaded (non-PDF) SourceFile directly.",
}

ERROR_CODES = {
    "MEMORY_GRAPH_DISABLED": "The toggle is off; nothing was read or written.",
    "MEMORY_GRAPH_UNREACHABLE": "Neo4j cannot be reached; see `queued` for observes.",
    "NODE_NOT_FOUND": "No node has that id or key (in that session, when given).",
    "INVALID_INPUT": "An argument is malformed; `field` names it. Nothing was written.",
    "NO_SOURCE": "Evidence needs `sourcePaperLink` or `sourceFileId`.",
    "AMBIGUOUS_SOURCE": "Evidence takes `sourcePaperLink` or `sourceFileId`, not both.",
    "SOURCE_PAPER_NOT_FOUND": "No search of this session found that Paper link.",
    "SOURCE_FILE_NOT_FOUND": "No uploaded file of this session has that fileId.",
    "SOURCE_FILE_NOT_PDF": "Evidence comes from PDFs only; cite other files from the claim.",
    "SOURCE_FILE_IS_PDF": "A PDF is cited through Evidence, not directly from a claim.",
    "NO_CITES_TARGET": "A claim needs at least one cite whose target exists.",
    "EVIDENCE_NOT_FOUND": "A cited Evidence id does not exist in this session.",
    "ARTIFACT_VERSION_NOT_FOUND": (
        "A cited Artifact version has not been recorded in the claim's session."
    ),
    "ARTIFACT_NOT_FOUND": "The report Artifact version did not arrive in time.",
    "CLAIM_NOT_FOUND": "A claim id to link does not exist in this session.",
    "QUERY_LIMIT_EXCEEDED": "A request limit (depth, aliases, tokens, cost, time budget) was hit.",
    "KEY_OWNED_BY_OTHER_SESSION": (
        "The write would change a node another session created; nothing was written."
    ),
}

BACKENDS = {
    "FILE": "The embedded file store in the data directory.",
    "NEO4J": "A Neo4j 5 server over Bolt.",
}

EXPORT_FORMATS = {
    "PROV_JSON": "W3C PROV-JSON.",
    "PROV_JSONLD": "W3C PROV as JSON-LD.",
    "GRAPHML": "GraphML (Gephi, yEd, NetworkX).",
    "MERMAID": "A Mermaid flowchart.",
}

MEMORY_RECORD_TYPES = {
    "FINDING": "A result worth keeping (gene, disease, significance, sources).",
    "IDEATION": "A research direction and how feasible it proved.",
    "STRATEGY": "How a task was approached, with which tools, and the outcome.",
    "PITFALL": "Something that went wrong, in which context, and the fix.",
}

FEASIBILITIES = {
    "HIGH": "Worth pursuing.",
    "MEDIUM": "Possible, with effort or caveats.",
    "LOW": "Unlikely to pay off.",
    "DEAD_END": "Tried and abandoned; do not repeat.",
}

GRAPH_EVENT_KINDS = {
    "NODE": "A node was written; `node` is set.",
    "EDGE": "An edge was written; `edge` is set.",
}


def describe(enum: type[Enum], descriptions: Mapping[str, str]) -> None:
    """Attach ``descriptions`` (by value name) to the registered enum ``enum``."""
    for value in enum.__strawberry_definition__.values:  # type: ignore[attr-defined]
        value.description = descriptions.get(value.name, value.description)


for _enum, _descriptions in (
    (ChainKind, CHAIN_KINDS),
    (NodeLabel, NODE_LABELS),
    (EdgeType, EDGE_TYPES),
    (MatchMode, MATCH_MODES),
    (HealthStatus, HEALTH_STATUSES),
    (ChipKind, CHIP_KINDS),
    (ErrorCode, ERROR_CODES),
    (GraphBackend, BACKENDS),
    (GraphExportFormat, EXPORT_FORMATS),
    (MemoryRecordType, MEMORY_RECORD_TYPES),
    (Feasibility, FEASIBILITIES),
    (GraphEventKind, GRAPH_EVENT_KINDS),
):
    describe(_enum, _descriptions)


# Arguments, by name; a (type, field, argument) entry wins over the name's meaning.
ARGUMENTS = {
    "sessionId": "The session (the agent's session id). Optional where it narrows a lookup: "
    "an ambiguous key without it resolves to the most recently created match.",
    "nodeId": "A node's global `id` (`Artifact:fig#v2`, `Paper:<sessionId>|<link>`) or its "
    "domain key (`fig#v2`; a bare artifactId means its latest version).",
    "version": "An artifact version; wins over a version inside `nodeId`.",
    "first": "How many items at most (default 100, at most 500); `truncated` says whether "
    "more exist.",
    "after": "The `endCursor` of the previous page, to continue after it.",
    "labels": "Only nodes of these labels.",
    "types": "Only edges of these types.",
    "input": "The event's fields; see the input type.",
    "kind": "Which chain button to walk (see ChainKind).",
    "kinds": "The chain buttons to check, typically every button of the selected node's label.",
}
FIELD_ARGUMENTS = {
    ("Query", "subgraph", "first"): "How many nodes at most (default 500, at most 5000).",
    ("Query", "subgraph", "fold"): "Fold each subagent scope's products into product groups "
    "(default true); `groupExpansion` unfolds one.",
    ("Query", "searchNodes", "query"): "Search terms, matched case-insensitively against the "
    "textual fields.",
    ("Query", "searchNodes", "mode"): "ANY_TERM (default) or ALL_TERMS.",
    ("Query", "searchNodes", "sessionId"): "Only this session; every session when absent.",
    ("Query", "nodesByType", "sessionId"): "Only this session; every session when absent.",
    ("Query", "edgesByType", "sessionId"): "Only this session; every session when absent.",
    ("Query", "traceProvenance", "nodeId"): "Where the trace starts (id or domain key).",
    ("Query", "traceProvenance", "targetLabel"): "The label to reach upstream (default "
    "RESEARCH_GOAL).",
    ("Query", "traceProvenance", "maxHops"): "How many levels to explore upstream, 1 to 32 "
    "(default 8); beyond it the answer is `truncated`.",
    ("Query", "scopeExpansion", "scopeTaskId"): "The subagent scope's task id "
    "(`subtask:subagent:<subagentId>`).",
    ("Query", "groupExpansion", "groupId"): "A product group's id from the subgraph "
    "(`_group:<scope task id>:<kind>`).",
    ("Query", "artifactProvenance", "artifactId"): "The artifact's id, without a version.",
    ("Query", "artifactProvenance", "version"): "The artifact version.",
    ("Query", "recall", "topic"): "Topic terms; records matching any of them, ranked.",
    ("Query", "recall", "types"): "Only these record types (default all four).",
    ("Query", "recall", "limitPerType"): "Records per type at most (default 10, at most 100).",
    ("Query", "lessons", "limit"): "How many strategies and pitfalls at most (default 20, at "
    "most 200).",
    ("Query", "exportSession", "format"): "The export format.",
    ("Session", "chain", "first"): "How many steps at most (at most 500).",
    ("Mutation", "cleanupSession", "sessionId"): "The session to clean up: its Artifacts are "
    "soft-marked, its other nodes deleted.",
    ("Mutation", "cleanupProject", "projectId"): "The project whose nodes are deleted physically.",
    ("Mutation", "cleanupProject", "sessionIds"): "Also delete these sessions' nodes.",
    ("Subscription", "graphEvents", "sessionId"): "The session to follow.",
}


def describe_arguments(schema: GraphQLSchema) -> None:
    """Attach the argument descriptions to a built schema; an argument that already has its
    own description keeps it."""
    roles = {
        "Query": schema.query_type,
        "Mutation": schema.mutation_type,
        "Subscription": schema.subscription_type,
        "Session": schema.type_map.get("Session"),
    }
    for role, type_ in roles.items():
        if not isinstance(type_, GraphQLObjectType):
            continue
        for field_name, field in type_.fields.items():
            for arg_name, arg in field.args.items():
                arg.description = (
                    arg.description
                    or FIELD_ARGUMENTS.get((role, field_name, arg_name))
                    or ARGUMENTS.get(arg_name)
                )
