"""A subgraph or a chain converts only the node and edge fields its request selects, and answers
alike.

``gateway.schema.selection`` reads which attributes a request can read of the nodes and edges a
``Subgraph`` or a ``Chain`` lists; ``from_record`` fills only those. Every answer is compared
with the same document answered with every attribute filled (``read_fields`` answering
``None``, as before it existed): fragments, spreads, aliases, directives, label-specific fields,
times and relationships.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from gateway.schema import nodes, queries
from tests import builders as b
from tests.conftest import GraphQLClient
from tests.graphql.test_execution import LEAN, NODE, record_every_label

if TYPE_CHECKING:
    from gateway.runtime.state import Runtime

SCOPE = "subtask:subagent:sub-1"
DOCUMENTS = {
    "named fragments": """query($s: String!) { subgraph(sessionId: $s, fold: false) { ...G } }
      fragment G on Subgraph { total nodes { ...N } edges { type target } }
      fragment N on GraphNode { id ... on Paper { title authors retrievedAt } ...T }
      fragment T on Task { seq startedAt objective }""",
    "aliases and directives": """query($s: String!, $yes: Boolean!, $no: Boolean!) {
      subgraph(sessionId: $s) { ... on Subgraph { nodes {
        text: excerpt props: properties @include(if: $yes) hidden: key @include(if: $no)
        ... on ToolCall { name: toolName started: startedAt @skip(if: $no) }
        ... @include(if: $yes) { createdAt sessionId } }
      edges { kind: type properties } groups { id members } } } }""",
    "every field": f"""query($s: String!) {{ subgraph(sessionId: $s, fold: false) {{
      ... on Subgraph {{ nodes {{ {NODE} }} edges {{ type source target properties }} }} }} }}""",
    "relationships": """query($s: String!) { subgraph(sessionId: $s) { ... on Subgraph {
      nodes { label ... on Task { firstChild { id excerpt ... on ToolCall { toolName } } }
        ... on Evidence { source { id ... on Paper { title } } } } } } }""",
    "two lists of one name": """query($s: String!) { a: subgraph(sessionId: $s) {
      ... on Subgraph { nodes { id } } } b: subgraph(sessionId: $s) {
      ... on Subgraph { nodes { ... on Code { language exitCode } } } } }""",
    "scope expansion": f"""query($s: String!) {{
      scopeExpansion(scopeTaskId: "{SCOPE}", sessionId: $s) {{ ... on Subgraph {{
        nodes {{ id ... on Task {{ status summary finishedAt }} ... on Artifact {{ version }} }}
        edges {{ source properties }} }} }} }}""",
    "chain": """query($s: String!) {
      getChain(nodeId: "ToolCall:subtask:mcp:inv-1", kind: VIEW_GOAL, sessionId: $s) {
        ... on Chain { nodes { id ... on Task { objective seq } ...C } edges { type source } } } }
      fragment C on ToolCall { toolName retrievedAt }""",
}


# What the answers must hold, so that no comparison is of two empty answers.
EXPECTED = {
    "named fragments": ['"title": "A paper"', '"seq": 1', '"startedAt": "2026-'],
    "aliases and directives": ['"props": {', '"name": "mcp__', '"kind": "PRODUCES"'],
    "every field": ['"Paper_authors"', '"Task_objective": "objective of sub-1"'],
    "relationships": ['"firstChild": {"id": "ToolCall:', '"title": "A paper"'],
    "two lists of one name": ['"id": "Code:exec-1"', '"language": "python"'],
    "scope expansion": ['"status": "running"', '"source": "ToolCall:'],
    "chain": ['"toolName": "mcp__', '"objective": "', '"type": "NEXT"'],
}


async def _answer(gql: GraphQLClient, document: str) -> str:
    data = await gql.execute(document, s="s1", yes=True, no=False)
    return json.dumps(data)  # key order included


@pytest.mark.parametrize("name", DOCUMENTS)
async def test_a_subgraph_answers_as_with_every_field_converted(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    gql = GraphQLClient(LEAN, runtime)  # no limits: "every field" has 168 aliases
    await record_every_label(gql)
    await b.tool_call(
        gql, "s1", "subtask:mcp:inv-2", 30, papers=[b.paper("doi:10.1/y")], parentSubagentId="sub-1"
    )
    document = DOCUMENTS[name]

    narrowed = await _answer(gql, document)
    monkeypatch.setattr(queries, "read_fields", lambda *_: None)
    full = await _answer(gql, document)

    assert narrowed == full
    assert all(part in full for part in EXPECTED[name]), full


async def test_what_no_selection_reads_is_not_computed(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await record_every_label(gql)
    computed: list[str] = []
    real_excerpt = nodes.excerpt

    def counted(record: Any) -> str:
        computed.append(record.id)
        return real_excerpt(record)

    monkeypatch.setattr(nodes, "excerpt", counted)
    without = "query($s: String!) { subgraph(sessionId: $s) { ... on Subgraph { nodes { id } } } }"
    spread = """query($s: String!) { subgraph(sessionId: $s) { ... on Subgraph {
      nodes { ...E } } } } fragment E on GraphNode { excerpt }"""

    await gql.execute(without, s="s1")
    computed_without = len(computed)
    data = await gql.execute(spread, s="s1")

    assert computed_without == 0
    assert len(computed) == len(data["subgraph"]["nodes"]) > 0
