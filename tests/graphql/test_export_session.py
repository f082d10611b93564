"""``exportSession``: the same text as the export command, as a union result."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gateway.exports.formats import ExportFormat, export_session, load_session
from tests.sample_session import SESSION, record_sample_session

if TYPE_CHECKING:
    from resolvers.store import GraphStore
    from tests.conftest import GraphQLClient

EXPORT = """query($s: String!, $f: ExportFormat!) { exportSession(sessionId: $s, format: $f) {
  __typename
  ... on SessionExport { format mediaType content }
  ... on Error { code message } } }"""


@pytest.mark.parametrize("export_format", list(ExportFormat), ids=lambda f: f.value)
async def test_the_field_returns_the_export_of_the_session(
    gql: GraphQLClient, store: GraphStore, export_format: ExportFormat
) -> None:
    await record_sample_session(gql)
    expected = export_session(await load_session(store, SESSION), export_format)

    data = await gql.execute(EXPORT, s=SESSION, f=export_format.name)

    assert data["exportSession"] == {
        "__typename": "SessionExport",
        "format": export_format.name,
        "mediaType": expected.media_type,
        "content": expected.content,
    }


async def test_an_unknown_session_is_not_found(gql: GraphQLClient) -> None:
    data = await gql.execute(EXPORT, s="nobody", f="MERMAID")

    assert data["exportSession"]["__typename"] == "NodeNotFound"


async def test_a_disabled_graph_exports_nothing(gql: GraphQLClient) -> None:
    await gql.execute("mutation { configureMemoryGraph(input: {enabled: false}) { __typename } }")

    data = await gql.execute(EXPORT, s=SESSION, f="GRAPHML")

    assert data["exportSession"]["__typename"] == "MemoryGraphDisabled"
