"""A session as a W3C PROV document (the ``prov`` package), mapped as ``docs/exports.md`` says.

Node kinds: the ResearchGoal is a ``prov:Plan`` entity; Tasks (subagent scopes) and ToolCalls
are activities (with their start and end times); Code, Artifact, Paper, Evidence, Claim and
SourceFile are entities. Every element carries ``prov:type sm:<Label>``, ``prov:label``, its
domain key, session and creation time, and its stored properties as ``sm:<property>``.

Edges: each becomes one PROV relation carrying ``sm:edge`` (the edge type), so nothing is
lost on the way back. Where PROV needs an activity and the edge starts at a Code entity
(``Code -produces-> Artifact``, ``Artifact -input-> Code``), the activity is the ToolCall that
ran that Code (``ToolCall -produces-> Code`` in the same session); without one the edge falls
back to a derivation or an influence.

Identifiers: ``smn:<global id>``, percent-encoded except letters, digits and ``_.-~:`` (so
PROV-N can write them too), in the namespace ``urn:science-memory:node:``; the vocabulary is
``sm`` = ``urn:science-memory:``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from prov.constants import PROV_LABEL, PROV_TYPE
from prov.model import PROV, ProvDocument

from resolvers.records import EdgeType, Label, stored_time
from resolvers.values import finite_json

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from prov.model import Namespace, QualifiedName

    from resolvers.records import EdgeRecord, NodeRecord

VOCABULARY = "urn:science-memory:"
NODES = "urn:science-memory:node:"
ACTIVITIES = frozenset({Label.TASK, Label.TOOL_CALL})
CAPTION_FIELDS = (
    "core_objective",
    "objective",
    "tool_name",
    "title",
    "logical_name",
    "content",
    "name",
    "tool",
)
_SAFE = ":"  # with quote's own "_.-~": what PROV-N writes in a local name as it stands


def caption(node: NodeRecord, length: int = 120) -> str:
    """A short human label: the first telling property, else the domain key."""
    for name in CAPTION_FIELDS:
        value = node.get(name)
        if value:
            text = " ".join(str(value).split())
            return text if len(text) <= length else text[: length - 1] + "…"
    return node.key


class _Mapper:
    def __init__(self, session_id: str, nodes: Sequence[NodeRecord]) -> None:
        self.doc = ProvDocument()
        self.sm: Namespace = self.doc.add_namespace("sm", VOCABULARY)
        self.smn: Namespace = self.doc.add_namespace("smn", NODES)
        self.session_id = session_id
        self.nodes = {node.id: node for node in nodes}
        self.runner: dict[str, str] = {}  # Code id -> the ToolCall that produced it

    def ident(self, node_id: str) -> QualifiedName:
        return self.smn[quote(node_id, safe=_SAFE)]

    def edge_attributes(self, edge: EdgeRecord, **extra: str) -> list[tuple[Any, Any]]:
        attributes: list[tuple[Any, Any]] = [(self.sm["edge"], edge.type.value)]
        attributes += [(self.sm[name], value) for name, value in extra.items()]
        attributes += [(self.sm[name], _literal(value)) for name, value in edge.props.items()]
        return attributes

    def add_node(self, node: NodeRecord) -> None:
        attributes: list[tuple[Any, Any]] = [
            (PROV_TYPE, self.sm[node.label.value]),
            (PROV_LABEL, caption(node)),
            (self.sm["key"], node.key),
            (self.sm["sessionId"], node.session_id),
            (self.sm["createdAt"], node.created_at),
        ]
        attributes += [(self.sm[name], _literal(value)) for name, value in node.props.items()]
        if node.label is Label.RESEARCH_GOAL:
            attributes.append((PROV_TYPE, PROV["Plan"]))
        if node.label in ACTIVITIES:
            started, ended = (
                stored_time(node.get("started_at")),
                stored_time(node.get("finished_at")),
            )
            self.doc.activity(self.ident(node.id), started, ended, attributes)
        else:
            self.doc.entity(self.ident(node.id), attributes)

    def is_activity(self, node_id: str) -> bool:
        node = self.nodes.get(node_id)
        return node is not None and node.label in ACTIVITIES

    def agent(self) -> QualifiedName:
        """The session's research agent (an agent acting on the goal as its plan)."""
        identifier = self.smn[quote(f"agent:{self.session_id}", safe=_SAFE)]
        if not self.doc.get_record(identifier):
            self.doc.agent(
                identifier,
                [(PROV_TYPE, PROV["SoftwareAgent"]), (PROV_LABEL, "research agent")],
            )
        return identifier


def to_prov(
    session_id: str, nodes: Sequence[NodeRecord], edges: Sequence[EdgeRecord]
) -> ProvDocument:
    """The PROV document of a session's nodes and the edges among them."""
    mapper = _Mapper(session_id, nodes)
    for node in nodes:
        mapper.add_node(node)
    for edge in edges:
        if edge.type is EdgeType.PRODUCES and mapper.is_activity(edge.source):
            mapper.runner[edge.target] = edge.source
    for edge in edges:
        _RELATIONS.get(edge.type, _influence)(mapper, edge)
    return mapper.doc


def _influence(m: _Mapper, edge: EdgeRecord) -> None:
    """The fallback: ``wasInfluencedBy(target, source)``."""
    m.doc.wasInfluencedBy(
        m.ident(edge.target), m.ident(edge.source), other_attributes=m.edge_attributes(edge)
    )


def _produces(m: _Mapper, edge: EdgeRecord) -> None:
    source, target = m.ident(edge.source), m.ident(edge.target)
    if m.is_activity(edge.source):
        m.doc.wasGeneratedBy(target, source, other_attributes=m.edge_attributes(edge))
        return
    runner = m.runner.get(edge.source)  # Code -produces-> Artifact: run by a ToolCall
    m.doc.wasDerivedFrom(
        target,
        source,
        activity=m.ident(runner) if runner else None,
        other_attributes=m.edge_attributes(edge),
    )


def _input(m: _Mapper, edge: EdgeRecord) -> None:
    runner = m.runner.get(edge.target)  # Artifact/SourceFile -input-> Code
    if runner is None:
        _influence(m, edge)
        return
    attributes = m.edge_attributes(edge, code=edge.target)
    m.doc.used(m.ident(runner), m.ident(edge.source), other_attributes=attributes)


def _derivation(m: _Mapper, edge: EdgeRecord) -> None:
    """``supports`` (the claim from what backs it), ``stated_in`` (the report from its claim)."""
    m.doc.wasDerivedFrom(
        m.ident(edge.target), m.ident(edge.source), other_attributes=m.edge_attributes(edge)
    )


def _extracts(m: _Mapper, edge: EdgeRecord) -> None:
    m.doc.quotation(
        m.ident(edge.target), m.ident(edge.source), other_attributes=m.edge_attributes(edge)
    )


def _supersedes(m: _Mapper, edge: EdgeRecord) -> None:
    m.doc.wasRevisionOf(
        m.ident(edge.source), m.ident(edge.target), other_attributes=m.edge_attributes(edge)
    )


def _next(m: _Mapper, edge: EdgeRecord) -> None:
    source, target = m.ident(edge.source), m.ident(edge.target)
    attributes = m.edge_attributes(edge)
    if m.is_activity(edge.source) and m.is_activity(edge.target):
        m.doc.wasInformedBy(target, source, other_attributes=attributes)
    elif m.is_activity(edge.target):  # goal -next-> first step: the step follows the plan
        m.doc.wasAssociatedWith(target, m.agent(), source, other_attributes=attributes)
    else:
        _influence(m, edge)


def _contains(m: _Mapper, edge: EdgeRecord) -> None:
    if not (m.is_activity(edge.source) and m.is_activity(edge.target)):
        _influence(m, edge)
        return
    m.doc.wasStartedBy(
        m.ident(edge.target),
        starter=m.ident(edge.source),
        other_attributes=m.edge_attributes(edge),
    )


_RELATIONS: dict[EdgeType, Callable[[_Mapper, EdgeRecord], None]] = {
    EdgeType.PRODUCES: _produces,
    EdgeType.INPUT: _input,
    EdgeType.SUPPORTS: _derivation,
    EdgeType.STATED_IN: _derivation,
    EdgeType.EXTRACTS: _extracts,
    EdgeType.SUPERSEDES: _supersedes,
    EdgeType.NEXT: _next,
    EdgeType.CONTAINS: _contains,
    EdgeType.FEEDS: _influence,
}


def _literal(value: Any) -> Any:
    """PROV attribute values are scalars; lists and maps travel as JSON text. A non-finite
    float scalar is PROV's own ``xsd:double`` literal (``NaN``, ``INF``, ``-INF``); inside
    JSON text, which has none, it is ``null``."""
    if isinstance(value, str | int | float | bool):
        return value
    return json.dumps(finite_json(value), sort_keys=True, default=str)
