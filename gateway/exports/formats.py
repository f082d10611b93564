"""Session exports: a session's live nodes and edges as PROV-JSON, PROV-JSON-LD, GraphML or
Mermaid text (the mapping is documented in ``docs/exports.md``).

``load_session`` reads the records through the store port (the listing primitives, nothing
else); the renderers are pure functions of those records, shared by the ``export`` command and
the ``exportSession`` GraphQL field. The PROV mapping lives in ``gateway.exports.prov``.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from gateway.exports.prov import caption, to_prov
from resolvers.errors import NodeNotFoundError, QueryLimitExceededError
from resolvers.records import EdgeType, Label
from resolvers.validate import check_text
from resolvers.values import finite_json

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from resolvers.records import EdgeRecord, NodeRecord
    from resolvers.store import GraphReader

PAGE_SIZE = 1000
GRAPHQL_MAX_NODES = 20_000
GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"
ALL_EDGE_TYPES = tuple(EdgeType)


class ExportFormat(StrEnum):
    PROV_JSON = "prov-json"
    PROV_JSONLD = "prov-jsonld"
    GRAPHML = "graphml"
    MERMAID = "mermaid"


MEDIA_TYPES: dict[ExportFormat, str] = {
    ExportFormat.PROV_JSON: "application/json",
    ExportFormat.PROV_JSONLD: "application/ld+json",
    ExportFormat.GRAPHML: "application/graphml+xml",
    ExportFormat.MERMAID: "text/vnd.mermaid",
}


@dataclass(frozen=True, slots=True)
class SessionRecords:
    """A session's live nodes (oldest first) and every edge among them."""

    session_id: str
    nodes: Sequence[NodeRecord]
    edges: Sequence[EdgeRecord]


@dataclass(frozen=True, slots=True)
class SessionExport:
    format: ExportFormat
    media_type: str
    content: str


async def load_session(
    store: GraphReader, session_id: str, *, max_nodes: int | None = GRAPHQL_MAX_NODES
) -> SessionRecords:
    """Every live node of the session and the edges among them.

    ``NodeNotFoundError`` for a session without live nodes; ``QueryLimitExceededError`` when it
    has more than ``max_nodes`` (``None``: no limit).
    """
    check_text("session_id", session_id, "sessionId")
    nodes: list[NodeRecord] = []
    while True:
        page = await store.list_nodes(session_id=session_id, limit=PAGE_SIZE, offset=len(nodes))
        if max_nodes is not None and page.total > max_nodes:
            raise QueryLimitExceededError(
                f"Session {session_id} has {page.total} nodes; an export here is limited to "
                f"{max_nodes} (the `science-memory export` command has no limit)."
            )
        nodes += page.items
        if not page.truncated or not page.items:
            break
    if not nodes:
        raise NodeNotFoundError(session_id, "session")
    nodes.reverse()
    edges = await store.edges_among([node.id for node in nodes], ALL_EDGE_TYPES)
    edges.sort(key=lambda edge: (edge.type.value, edge.source, edge.target))
    return SessionRecords(session_id, nodes, edges)


def export_session(records: SessionRecords, export_format: ExportFormat) -> SessionExport:
    """Render ``records`` in ``export_format``."""
    content = _RENDERERS[export_format](records)
    return SessionExport(export_format, MEDIA_TYPES[export_format], content)


def _prov_json(records: SessionRecords) -> str:
    return str(to_prov(records.session_id, records.nodes, records.edges).serialize(indent=2))


def _prov_jsonld(records: SessionRecords) -> str:
    document = to_prov(records.session_id, records.nodes, records.edges)
    return str(document.serialize(format="jsonld", indent=2))


# --- GraphML ---------------------------------------------------------------------------------

_NODE_KEYS = (
    ("label", "label"),
    ("key", "key"),
    ("session", "sessionId"),
    ("created", "createdAt"),
    ("caption", "caption"),
    ("props", "properties"),
)
_EDGE_KEYS = (("type", "type"), ("edge_props", "properties"))


def to_graphml(records: SessionRecords) -> str:
    """GraphML: one ``<node>`` per node (id = global id), one ``<edge>`` per edge (``type``)."""
    ET.register_namespace("", GRAPHML_NS)
    root = ET.Element(_tag("graphml"))
    for target, keys in (("node", _NODE_KEYS), ("edge", _EDGE_KEYS)):
        for key_id, name in keys:
            attributes = {"id": key_id, "for": target, "attr.name": name, "attr.type": "string"}
            ET.SubElement(root, _tag("key"), attributes)
    graph = ET.SubElement(
        root, _tag("graph"), {"id": records.session_id, "edgedefault": "directed"}
    )
    for node in records.nodes:
        element = ET.SubElement(graph, _tag("node"), {"id": xml_id(node.id)})
        values = (
            node.label.value,
            node.key,
            node.session_id,
            node.created_at.isoformat(),
            caption(node),
            _json_text(node.props),
        )
        for (key_id, _), value in zip(_NODE_KEYS, values, strict=True):
            _data(element, key_id, value)
    for index, edge in enumerate(records.edges):
        attributes = {
            "id": f"e{index}",
            "source": xml_id(edge.source),
            "target": xml_id(edge.target),
        }
        element = ET.SubElement(graph, _tag("edge"), attributes)
        _data(element, "type", edge.type.value)
        if edge.props:
            _data(element, "edge_props", _json_text(edge.props))
    ET.indent(root)
    document = ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
    # Markup is ASCII: what XML forbids can only be stored text (U+FFFE, U+FFFF, a control
    # character from older data), which ElementTree writes as it is.
    return _NOT_XML.sub("\N{REPLACEMENT CHARACTER}", document)


# Every character but those XML 1.0 allows (its ``Char`` production).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# ... and U+FFFD, which ``xml_id`` writes before an escaped character.
_NOT_XML_ID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffc\U00010000-\U0010ffff]")


def xml_id(node_id: str) -> str:
    """A node id as an XML attribute, one to one: an id of characters XML allows is itself;
    a character it forbids (U+FFFE, U+FFFF, a control character, a lone surrogate: only
    stored text can hold them) is written ``\ufffdx<hex>;`` and a U+FFFD ``\ufffd;``, so two
    ids never become one ``<node>`` as they would if each forbidden character were replaced."""
    return _NOT_XML_ID.sub(_escaped_in_id, node_id)


def _escaped_in_id(found: re.Match[str]) -> str:
    char = found.group()
    return "\N{REPLACEMENT CHARACTER};" if char == "\ufffd" else f"\ufffdx{ord(char):x};"


def _json_text(props: Mapping[str, Any]) -> str:
    """Properties as JSON text; a stored non-finite number, which JSON lacks, as ``null``."""
    return json.dumps(finite_json(dict(props)), sort_keys=True, default=str)


def _tag(name: str) -> str:
    return f"{{{GRAPHML_NS}}}{name}"


def _data(element: ET.Element, key: str, value: str) -> None:
    ET.SubElement(element, _tag("data"), {"key": key}).text = value


# --- Mermaid ---------------------------------------------------------------------------------

_MERMAID_STYLES: dict[Label, str] = {
    Label.RESEARCH_GOAL: "fill:#fde68a,stroke:#b45309",
    Label.TASK: "fill:#e9d5ff,stroke:#7e22ce",
    Label.TOOL_CALL: "fill:#bfdbfe,stroke:#1d4ed8",
    Label.CODE: "fill:#e5e7eb,stroke:#374151",
    Label.ARTIFACT: "fill:#bbf7d0,stroke:#15803d",
    Label.PAPER: "fill:#fecaca,stroke:#b91c1c",
    Label.EVIDENCE: "fill:#fed7aa,stroke:#c2410c",
    Label.CLAIM: "fill:#fbcfe8,stroke:#be185d",
    Label.SOURCE_FILE: "fill:#ccfbf1,stroke:#0f766e",
}
_MERMAID_ESCAPES = {
    "#": "#35;",
    '"': "#quot;",
    "<": "#lt;",
    ">": "#gt;",
    "&": "#amp;",
    "`": "#96;",
    "%": "#37;",  # no ``%%{…}%%`` directive: stored text must not set the renderer's config
}
MERMAID_LABEL_LENGTH = 60


def to_mermaid(records: SessionRecords) -> str:
    """A ``flowchart LR``: nodes ``n0…`` (a ``%%`` comment names each one's global id), labelled
    ``Label: caption``, one class per label; edges labelled with their type."""
    short = {node.id: f"n{index}" for index, node in enumerate(records.nodes)}
    lines = [f"%% ScienceMemory session {_comment(records.session_id)}", "flowchart LR"]
    for node in records.nodes:
        text = mermaid_escape(f"{node.label.value}: {caption(node, MERMAID_LABEL_LENGTH)}")
        lines.append(f"%% {short[node.id]} = {_comment(node.id)}")
        lines.append(f'  {short[node.id]}["{text}"]:::{node.label.value}')
    for edge in records.edges:
        lines.append(f"  {short[edge.source]} -->|{edge.type.value}| {short[edge.target]}")
    for label in sorted({node.label for node in records.nodes}):
        lines.append(f"  classDef {label.value} {_MERMAID_STYLES[label]}")
    return "\n".join(lines) + "\n"


def mermaid_escape(text: str) -> str:
    """Text safe inside a quoted Mermaid label: entity codes, one line."""
    return "".join(_MERMAID_ESCAPES.get(char, char) for char in _one_line(text))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _comment(text: str) -> str:
    """An id in a ``%%`` comment line: one line, its ``%`` written ``%25`` (Mermaid looks for a
    ``%%{…}%%`` directive anywhere in the text, comments included)."""
    return _one_line(text).replace("%", "%25")


_RENDERERS: dict[ExportFormat, Callable[[SessionRecords], str]] = {
    ExportFormat.PROV_JSON: _prov_json,
    ExportFormat.PROV_JSONLD: _prov_jsonld,
    ExportFormat.GRAPHML: to_graphml,
    ExportFormat.MERMAID: to_mermaid,
}
