"""Session exports: PROV-JSON / PROV-JSON-LD read back with ``prov``, GraphML with ElementTree,
Mermaid names every node and edge."""

from __future__ import annotations

import dataclasses
import io
import re
import xml.etree.ElementTree as ET
from collections import Counter
from typing import TYPE_CHECKING

import prov
import pytest
from prov.model import (
    ProvActivity,
    ProvAgent,
    ProvDocument,
    ProvElement,
    ProvEntity,
    ProvRelation,
)

from gateway.exports.formats import (
    GRAPHML_NS,
    ExportFormat,
    SessionRecords,
    export_session,
    load_session,
    mermaid_escape,
)
from resolvers.errors import InvalidInputError, NodeNotFoundError, QueryLimitExceededError
from resolvers.records import EdgeRecord, EdgeType
from tests.sample_session import SESSION, record_sample_session

if TYPE_CHECKING:
    from resolvers.store import GraphStore
    from tests.conftest import GraphQLClient

PROV_FORMATS = {ExportFormat.PROV_JSON: "json", ExportFormat.PROV_JSONLD: "jsonld"}
NODES, EDGES = 18, 21


@pytest.fixture
async def records(gql: GraphQLClient, store: GraphStore) -> SessionRecords:
    await record_sample_session(gql)
    return await load_session(store, SESSION)


def relations(document: ProvDocument) -> dict[str, Counter[str]]:
    """Per edge type (``sm:edge``), how many relations of each PROV kind."""
    found: dict[str, Counter[str]] = {}
    for record in document.get_records(ProvRelation):
        (edge,) = record.get_attribute("sm:edge")
        found.setdefault(str(edge), Counter())[type(record).__name__] += 1
    return found


async def test_a_session_loads_with_every_live_node_and_edge(records: SessionRecords) -> None:
    labels = Counter(node.label.value for node in records.nodes)
    types = Counter(edge.type.value for edge in records.edges)

    assert (len(records.nodes), len(records.edges)) == (NODES, EDGES)
    assert set(labels) == {
        "ResearchGoal",
        "Task",
        "ToolCall",
        "Code",
        "Artifact",
        "Paper",
        "Evidence",
        "Claim",
        "SourceFile",
    }
    assert len(types) == 9


@pytest.mark.parametrize("export_format", list(PROV_FORMATS), ids=lambda f: f.value)
async def test_prov_reads_back_with_the_documented_mapping(
    records: SessionRecords, export_format: ExportFormat
) -> None:
    content = export_session(records, export_format).content

    document = prov.read(io.StringIO(content), format=PROV_FORMATS[export_format])

    assert isinstance(document, ProvDocument)
    elements = Counter(type(r).__name__ for r in document.get_records(ProvElement))
    assert elements == {"ProvEntity": 12, "ProvActivity": 6, "ProvAgent": 1}
    assert relations(document) == {
        "produces": Counter({"ProvGeneration": 5, "ProvDerivation": 3}),
        "input": Counter({"ProvUsage": 1}),
        "supports": Counter({"ProvDerivation": 2}),
        "extracts": Counter({"ProvDerivation": 1}),
        "supersedes": Counter({"ProvDerivation": 1}),
        "stated_in": Counter({"ProvDerivation": 1}),
        "next": Counter({"ProvCommunication": 4, "ProvAssociation": 1}),
        "contains": Counter({"ProvStart": 1}),
        "feeds": Counter({"ProvInfluence": 1}),
    }


async def test_prov_marks_the_goal_as_a_plan_and_steps_as_activities(
    records: SessionRecords,
) -> None:
    content = export_session(records, ExportFormat.PROV_JSON).content

    document = ProvDocument.deserialize(content=content, format="json")

    plans = [
        str(entity.identifier)
        for entity in document.get_records(ProvEntity)
        if "prov:Plan" in {str(value) for value in entity.get_attribute("prov:type")}
    ]
    assert plans == [f"smn:ResearchGoal:goal:session:{SESSION}"]
    steps = {str(activity.identifier) for activity in document.get_records(ProvActivity)}
    assert "smn:ToolCall:subtask:exec-1" in steps
    assert "smn:Task:subtask:subagent:sub-1" in steps
    assert len(list(document.get_records(ProvAgent))) == 1


async def test_prov_json_and_prov_jsonld_describe_the_same_document(
    records: SessionRecords,
) -> None:
    as_json = export_session(records, ExportFormat.PROV_JSON).content
    as_jsonld = export_session(records, ExportFormat.PROV_JSONLD).content

    assert ProvDocument.deserialize(content=as_json, format="json") == ProvDocument.deserialize(
        content=as_jsonld, format="jsonld"
    )


async def test_graphml_has_every_node_and_typed_edge(records: SessionRecords) -> None:
    content = export_session(records, ExportFormat.GRAPHML).content

    root = ET.fromstring(content)

    ns = {"g": GRAPHML_NS}
    nodes = root.findall("g:graph/g:node", ns)
    edges = root.findall("g:graph/g:edge", ns)
    assert {node.get("id") for node in nodes} == {node.id for node in records.nodes}
    assert [
        (edge.get("source"), edge.get("target"), edge.findtext("g:data[@key='type']", None, ns))
        for edge in edges
    ] == [(edge.source, edge.target, edge.type.value) for edge in records.edges]
    labels = Counter(node.findtext("g:data[@key='label']", None, ns) for node in nodes)
    assert labels["ToolCall"] == 5


@pytest.mark.parametrize("odd", ["\ufffe", "\uffff", "\x01", "\ud800"])
async def test_graphml_of_a_text_xml_forbids_is_well_formed(
    records: SessionRecords, odd: str
) -> None:
    # As older data or another tool may hold it: in a key, an id and a property.
    node = records.nodes[0]
    changed = dataclasses.replace(
        node, id=f"{node.id}{odd}", key=f"{node.key}{odd}", props={**node.props, "x": odd}
    )
    odd_records = dataclasses.replace(records, nodes=[changed, *records.nodes[1:]])

    content = export_session(odd_records, ExportFormat.GRAPHML).content

    root = ET.fromstring(content)
    keys = {n.findtext("g:data[@key='key']", None, {"g": GRAPHML_NS}) for n in root.iter()}
    assert f"{node.key}\ufffd" in keys


async def test_graphml_keeps_apart_ids_that_differ_only_in_what_xml_forbids(
    records: SessionRecords,
) -> None:
    # Each forbidden character replaced by U+FFFD would make one <node> of three.
    node = records.nodes[0]
    odd = [
        dataclasses.replace(node, id=f"{node.id}{char}", key=f"{node.key}{char}")
        for char in ("\ufffe", "\uffff", "\ufffd")
    ]
    edges = [EdgeRecord(EdgeType.NEXT, odd[0].id, odd[1].id, {})]
    odd_records = dataclasses.replace(records, nodes=odd, edges=edges)

    content = export_session(odd_records, ExportFormat.GRAPHML).content

    ns = {"g": GRAPHML_NS}
    root = ET.fromstring(content)
    ids = [element.get("id") for element in root.findall("g:graph/g:node", ns)]
    (edge,) = root.findall("g:graph/g:edge", ns)
    assert len(set(ids)) == 3
    assert (edge.get("source"), edge.get("target")) == (ids[0], ids[1])
    assert ids[2] == f"{node.id}\ufffd;"


async def test_mermaid_names_every_node_and_edge(records: SessionRecords) -> None:
    content = export_session(records, ExportFormat.MERMAID).content

    lines = content.splitlines()

    assert lines[1] == "flowchart LR"
    named = dict(re.findall(r"^%% (n\d+) = (.+)$", content, re.MULTILINE))
    assert set(named.values()) == {node.id for node in records.nodes}
    arrows = re.findall(r"^ {2}(n\d+) -->\|(\w+)\| (n\d+)$", content, re.MULTILINE)
    assert sorted((named[s], kind, named[t]) for s, kind, t in arrows) == sorted(
        (edge.source, edge.type.value, edge.target) for edge in records.edges
    )
    assert 'ResearchGoal: Study #quot;TP53#quot; #lt;#35;1#gt;"' in content


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ('say "hi"', "say #quot;hi#quot;"),
        ("a<b>&c", "a#lt;b#gt;#amp;c"),
        ("#1 `x`", "#35;1 #96;x#96;"),
        ("two\nlines", "two lines"),
        ("%%{init: {'theme':'dark'}}%%", "#37;#37;{init: {'theme':'dark'}}#37;#37;"),
    ],
)
def test_mermaid_labels_are_escaped(text: str, escaped: str) -> None:
    assert mermaid_escape(text) == escaped


async def test_no_stored_text_is_a_mermaid_directive(records: SessionRecords) -> None:
    # Mermaid reads ``%%{init: …}%%`` anywhere in the text, a label or a comment line alike.
    directive = "%%{init: {'theme':'dark','themeCSS':'svg{display:none}'}}%%"
    node = records.nodes[0]
    changed = dataclasses.replace(
        node, id=f"{node.id}{directive}", props={**node.props, "coreObjective": directive}
    )
    odd = dataclasses.replace(
        records, session_id=directive, nodes=[changed, *records.nodes[1:]], edges=[]
    )

    content = export_session(odd, ExportFormat.MERMAID).content

    assert "%%{" not in content
    assert f"%% n0 = {node.id}%25%25{{init:" in content


async def test_an_unknown_session_is_not_found(store: GraphStore) -> None:
    with pytest.raises(NodeNotFoundError):
        await load_session(store, "nobody")


async def test_a_blank_session_id_is_invalid(store: GraphStore) -> None:
    with pytest.raises(InvalidInputError, match="sessionId"):
        await load_session(store, " ")


async def test_a_session_over_the_limit_is_refused(gql: GraphQLClient, store: GraphStore) -> None:
    await record_sample_session(gql)

    with pytest.raises(QueryLimitExceededError, match="18 nodes"):
        await load_session(store, SESSION, max_nodes=NODES - 1)
