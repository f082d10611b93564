"""The tools: what an LLM reads about each, who may see it, and the call that runs one.

Who sees what (``Caller``): the research agent (``Role.AGENT``) gets ``query_graph``, the two
declares (only with a token that may write) and ``recall`` / ``lessons``; the reviewer
(``Role.REVIEWER``) gets ``trace_provenance`` instead of the declares — it judges the graph and
never adds to it. A tool the caller may not see is unknown to it.

A call validates its arguments (``gateway.mcp.arguments``), runs the same use case as the
GraphQL field, and answers JSON, both as text and as ``structuredContent``. An expected failure
comes back as a tool error (``isError``) whose ``structuredContent`` is ``{"error": {…}}``: the
GraphQL error member of the same failure (``__typename``, ``code``, ``message`` and its own
fields, e.g. a rejected declare's ``instruction`` and ``alias``), so the agent can act on it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import TYPE_CHECKING, Any

import mcp_types as types
from pydantic import ValidationError

from gateway.mcp.arguments import (
    DeclareClaimArguments,
    DeclareEvidenceArguments,
    LessonsArguments,
    QueryGraphArguments,
    RecallArguments,
    ToolArguments,
    TraceProvenanceArguments,
)
from gateway.schema.errors import member_for
from gateway.schema.nodes import excerpt
from resolvers import chains, declare, memory, provenance, resolve, search
from resolvers.errors import DomainError, InvalidInputError
from resolvers.events import Alias, ArtifactAlias, ClaimDeclared, EvidenceDeclared, from_input
from resolvers.values import finite_json

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

    from gateway.runtime.state import Runtime
    from resolvers.records import EdgeRecord, NodeRecord

PROPERTY_TEXT_LIMIT = 400


class Role(StrEnum):
    AGENT = "agent"
    REVIEWER = "reviewer"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the role the server was started with (or the token's), and whether
    its token may write."""

    role: Role
    can_write: bool


Payload = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    description: str
    arguments: type[ToolArguments]
    run: Callable[[Runtime, Any], Awaitable[Payload]]
    roles: frozenset[Role]
    writes: bool = False

    def offered_to(self, caller: Caller) -> bool:
        return caller.role in self.roles and (caller.can_write or not self.writes)

    def to_mcp(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.arguments.model_json_schema(),
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=not self.writes,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        )


# --- the results -----------------------------------------------------------------------------


def node_summary(node: NodeRecord, *, whole: bool = False) -> Payload:
    """A node as the LLM sees it: in a list, a text over ``PROPERTY_TEXT_LIMIT`` characters is
    cut (ending in "…") and named in ``cut_properties``; ``whole`` (one node asked for by its
    id) keeps every text whole."""
    cut = [
        name
        for name, value in node.props.items()
        if not whole and isinstance(value, str) and len(value) > PROPERTY_TEXT_LIMIT
    ]
    properties = dict(node.props)
    for name in cut:
        properties[name] = properties[name][:PROPERTY_TEXT_LIMIT] + "…"
    summary: Payload = {
        "id": node.id,
        "label": node.label.value,
        "key": node.key,
        "excerpt": excerpt(node),
        "created_at": node.created_at.isoformat(),
        "properties": properties,
    }
    if cut:
        summary["cut_properties"] = cut
    return summary


def _edge(edge: EdgeRecord) -> Payload:
    return {"type": edge.type.value, "source": edge.source, "target": edge.target}


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


# The use cases' messages name the GraphQL surface; the tools name their own.
_TOOL_WORDS = {
    "citesEvidence": "cites_evidence",
    "citesArtifacts": "cites_artifacts",
    "citesSourceFiles": "cites_source_files",
    "sourcePaperLink": "source_paper_link",
    "sourceFileId": "source_file_id",
    "declareEvidence": "declare_evidence",
    "declareClaim": "declare_claim",
    "list_artifacts": 'query_graph with labels ["Artifact"]',
}
_TOOL_WORD = re.compile("|".join(map(re.escape, _TOOL_WORDS)))


def in_tool_words(text: str) -> str:
    return _TOOL_WORD.sub(lambda match: _TOOL_WORDS[match.group()], text)


# A use case names an entry of a cite map by its place in the event's list of aliases.
_CITE_ENTRY = re.compile(r"(cites_\w+?)\[\d+\]\.(\w+)")
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])([A-Z])")


def tool_argument(field: str) -> str:
    """The argument a use case's ``InvalidInput.field`` names, as the tool spells it: no
    ``input.`` prefix, snake case (``limitPerType`` → ``limit_per_type``), and a cite map's
    entry (``cites_evidence[1].alias``) as the map (``cites_evidence``; an artifact's
    version as ``cites_artifact_versions``)."""
    field = _CAMEL_HUMP.sub(lambda hump: f"_{hump.group(1).lower()}", field.removeprefix("input."))
    entry = _CITE_ENTRY.fullmatch(field)
    if entry is None:
        return field
    if entry.group(1) == "cites_artifacts" and entry.group(2) == "version":
        return "cites_artifact_versions"
    return entry.group(1)


def error_payload(exc: DomainError) -> Payload:
    """The GraphQL error member of ``exc``, as JSON, in the tools' words."""
    member = member_for(exc)
    payload: Payload = {"__typename": type(member).__name__}
    for field in dataclasses.fields(member):
        value = _plain(getattr(member, field.name))
        if field.name == "field" and isinstance(value, str):
            value = tool_argument(value)
        payload[field.name] = in_tool_words(value) if isinstance(value, str) else value
    return payload


# --- the handlers ----------------------------------------------------------------------------


async def query_graph(runtime: Runtime, a: QueryGraphArguments) -> Payload:
    store = runtime.graph_store
    if a.chain is not None:
        if a.node_id is None:
            raise InvalidInputError("node_id", "a chain starts from a node: give node_id too")
        found = await chains.get_chain(store, a.node_id, a.chain, session_id=a.session_id)
        return {
            "chain": a.chain.value,
            "nodes": [node_summary(node) for node in found.nodes],
            "edges": [_edge(edge) for edge in found.edges],
            "total": found.total,
            "truncated": found.truncated,
        }
    if a.node_id is not None:
        node = await resolve.resolve_node(store, a.node_id, session_id=a.session_id)
        return {"nodes": [node_summary(node, whole=True)], "total": 1, "truncated": False}
    if a.query is not None:
        page = await search.search_nodes(
            store, a.query, session_id=a.session_id, labels=a.labels, first=a.first
        )
    elif a.labels:
        page = await search.nodes_by_type(store, a.labels, session_id=a.session_id, first=a.first)
    else:
        raise InvalidInputError(None, "give query, labels or node_id")
    return {
        "nodes": [node_summary(node) for node in page.items],
        "total": page.total,
        "truncated": page.truncated,
    }


async def declare_evidence(runtime: Runtime, a: DeclareEvidenceArguments) -> Payload:
    event = from_input(EvidenceDeclared, a)
    result = await runtime.record(declare.declare_evidence, event)
    return {"evidence_id": result.evidence.key, "node_id": result.evidence.id}


async def declare_claim(runtime: Runtime, a: DeclareClaimArguments) -> Payload:
    unknown = sorted(set(a.cites_artifact_versions) - set(a.cites_artifacts))
    if unknown:
        raise InvalidInputError(
            "cites_artifact_versions", f"aliases {unknown} are not in cites_artifacts"
        )
    event = ClaimDeclared(
        session_id=a.session_id,
        content=a.content,
        claim_type=a.claim_type,
        confidence=a.confidence,
        locator=a.locator,
        cites_evidence=tuple(Alias(alias, id) for alias, id in a.cites_evidence.items()),
        cites_artifacts=tuple(
            ArtifactAlias(alias, artifact_id, a.cites_artifact_versions.get(alias))
            for alias, artifact_id in a.cites_artifacts.items()
        ),
        cites_source_files=tuple(Alias(alias, id) for alias, id in a.cites_source_files.items()),
        artifact_id=a.artifact_id,
        artifact_version=a.artifact_version,
    )
    result = await runtime.record(declare.declare_claim, event)
    chips = [
        {
            "alias": chip.alias,
            "kind": chip.kind.value,
            "id": chip.id,
            "node_id": chip.node_id,
            "version": chip.version,
        }
        for chip in result.chips
    ]
    return {"claim_id": result.claim.key, "node_id": result.claim.id, "chips": chips}


async def trace_provenance(runtime: Runtime, a: TraceProvenanceArguments) -> Payload:
    trace = await provenance.trace_provenance(
        runtime.graph_store,
        a.node_id,
        target_label=a.target_label,
        max_hops=a.max_hops,
        session_id=a.session_id,
    )
    return {
        "start": node_summary(trace.start),
        "broken": trace.broken,
        "truncated": trace.truncated,
        "reason": trace.reason,
        "path": [
            {
                "node": node_summary(step.node),
                "via_edge": step.via_edge.value,
                "reached_from": step.reached_from,
            }
            for step in trace.path
        ],
        "explored": len(trace.chain),
    }


async def recall(runtime: Runtime, a: RecallArguments) -> Payload:
    found = await memory.recall(runtime.memory, a.topic, a.types, a.limit_per_type)
    return {
        "groups": [
            {
                "type": group.type.value,
                "total": group.total,
                "records": [memory.record_to_dict(record) for record in group.records],
            }
            for group in found.groups
        ]
    }


async def lessons(runtime: Runtime, a: LessonsArguments) -> Payload:
    records = await memory.lessons(runtime.memory, a.limit)
    return {"records": [memory.record_to_dict(record) for record in records]}


# --- the catalogue ---------------------------------------------------------------------------

_SILENT = (
    "Call it silently: never mention this tool, ids or the provenance graph to the user or in "
    "the report; the report only shows the chip aliases."
)
_RETRY = (
    "If it answers an error, do what the error's `instruction` says and call again; the same "
    "declaration sent twice returns the same id, so retrying is safe."
)
_BOTH = frozenset(Role)

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "query_graph",
        "Query the provenance graph",
        "Look things up in this session's provenance graph: the papers your searches found, "
        "the evidence and claims you declared, the files your code produced, and how they "
        "connect. Call it before declare_evidence to get a Paper's exact link, and before "
        "declare_claim to find the evidence ids and artifact ids to cite. Give `query` (search "
        "terms) and/or `labels` to find nodes, `node_id` to read one node, or `node_id` with "
        "`chain` to follow one relation from it (viewCitedPaper: the papers behind a report; "
        "viewSourcePaper: the paper an evidence came from; viewProducingCode: the code that "
        "wrote an artifact). Read-only.",
        QueryGraphArguments,
        query_graph,
        _BOTH,
    ),
    ToolSpec(
        "declare_evidence",
        "Declare evidence",
        "Record a passage you rely on as Evidence, so that a claim can cite it. Call it when "
        "you read something in a paper found by a search of this session, or in a PDF the user "
        "uploaded, that the report will rest on: one call per passage, before declare_claim. "
        "Give exactly one source: source_paper_link or source_file_id. Returns evidence_id; "
        "cite it from declare_claim under a chip alias. " + _SILENT + " " + _RETRY,
        DeclareEvidenceArguments,
        declare_evidence,
        frozenset({Role.AGENT}),
        writes=True,
    ),
    ToolSpec(
        "declare_claim",
        "Declare a claim",
        "Record one assertion of your report and what backs it. Call it for every sentence of "
        "the report that cites something, after declaring its evidence. Chip aliases: each "
        "cites_* map goes from a short alias you choose (E1, E2 for evidence, F1 for a chart or "
        "table your code produced, D1 for an uploaded data file) to the id it cites; write the "
        "alias in brackets in the report sentence, e.g. 'survival improved [E1][F1]', and the "
        "report renders each as a clickable chip that opens its source. Keep one alias per "
        "source for the whole report. Cite at least one existing target: evidence ids from "
        "declare_evidence, artifact ids of files produced in this session, file ids of uploaded "
        "non-PDF files (a PDF is cited through declare_evidence). Returns claim_id and the "
        "chips: what each alias resolved to. " + _SILENT + " " + _RETRY,
        DeclareClaimArguments,
        declare_claim,
        frozenset({Role.AGENT}),
        writes=True,
    ),
    ToolSpec(
        "trace_provenance",
        "Trace provenance (reviewer)",
        "RESTRICTED USE: for reviewing only. Checks whether an artifact, claim or evidence "
        "under review is traceable: walks upstream (the code that made it, the steps before "
        "it, what it read, what it cites) back to the session's research goal. Answers facts, "
        "never a decision: broken=false and truncated=false when the goal was reached, with "
        "`path`, the shortest chain of nodes from the item to the goal (each with the edge "
        "walked and the node it was reached from); broken=true with `reason` naming the dead "
        "end when nothing leads to the goal; truncated=true when max_hops ran out before "
        "either (inconclusive: call again with a larger max_hops). Call it once per item you "
        "are asked to review, before accepting it; accept an item only when it is neither "
        "broken nor truncated. Do not use it to explore the graph (use query_graph).",
        TraceProvenanceArguments,
        trace_provenance,
        frozenset({Role.REVIEWER}),
    ),
    ToolSpec(
        "recall",
        "Recall research memory",
        "Recall what earlier sessions learned about a topic, across all projects: findings, "
        "ideation verdicts (directions already judged, with their feasibility; DEAD_END means "
        "do not pursue it again), strategies that worked and pitfalls with their fixes. Call "
        "it when you start work on a topic and before choosing an approach. Read-only.",
        RecallArguments,
        recall,
        _BOTH,
    ),
    ToolSpec(
        "lessons",
        "Lessons learned",
        "The most recent strategies and pitfalls across all projects: general lessons on how "
        "to work (tools, methods, mistakes to avoid). Call it once when a session starts. "
        "Read-only.",
        LessonsArguments,
        lessons,
        _BOTH,
    ),
)


def offered(caller: Caller) -> list[ToolSpec]:
    return [spec for spec in TOOLS if spec.offered_to(caller)]


async def call_tool(
    runtime: Runtime, caller: Caller, name: str, arguments: Mapping[str, Any] | None
) -> types.CallToolResult:
    """Run one tool for ``caller``; every expected failure is a tool error, never a crash."""
    spec = next((s for s in offered(caller) if s.name == name), None)
    try:
        if spec is None:
            raise InvalidInputError("name", f"no tool {name!r} here; list the tools first")
        try:
            parsed = spec.arguments.model_validate(dict(arguments or {}))
        except ValidationError as exc:
            raise _invalid(exc) from exc
        return _result(await spec.run(runtime, parsed), error=False)
    except DomainError as exc:
        return _result({"error": error_payload(exc)}, error=True)


def _invalid(exc: ValidationError) -> InvalidInputError:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or None
    return InvalidInputError(field, first["msg"])


def _result(payload: Payload, *, error: bool) -> types.CallToolResult:
    # A stored non-finite number is null, as in every answer: JSON has no NaN.
    payload = finite_json(payload)
    text = json.dumps(payload, ensure_ascii=False, default=str)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=payload,
        is_error=error,
    )
