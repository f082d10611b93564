"""Federation v2 subgraph: every node type is an entity keyed by ``id``, resolved in batches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from gateway.schema.nodes import NODE_TYPES
from tests import builders as b

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gateway.runtime.state import Runtime
    from resolvers.records import NodeRecord
    from tests.conftest import GraphQLClient

ENTITIES = """query($representations: [_Any!]!) {
  _entities(representations: $representations) {
    __typename
    ... on Artifact { id logicalName }
    ... on Code { id }
  }
}"""


def artifact(key: str) -> dict[str, str]:
    return {"__typename": "Artifact", "id": f"Artifact:{key}"}


@pytest.fixture
def get_nodes_calls(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The ids of every ``get_nodes`` call on the store requests use, in order."""
    store = runtime.graph_store
    calls: list[list[str]] = []
    original = store.get_nodes

    async def counting(ids: Sequence[str]) -> list[NodeRecord | None]:
        calls.append(list(ids))
        return await original(ids)

    monkeypatch.setattr(store, "get_nodes", counting)
    return calls


async def test_the_sdl_declares_every_node_type_an_entity_keyed_by_id(gql: GraphQLClient) -> None:
    sdl = (await gql.execute("{ _service { sdl } }"))["_service"]["sdl"]

    assert 'schema @link(url: "https://specs.apollo.dev/federation/v2' in sdl
    for node_type in NODE_TYPES.values():
        assert f'type {node_type.__name__} implements GraphNode @key(fields: "id")' in sdl


async def test_a_batch_of_representations_costs_one_store_lookup(
    gql: GraphQLClient, get_nodes_calls: list[list[str]]
) -> None:
    artifacts = [b.artifact(name) for name in ("fig", "table", "report")]
    await b.execution(gql, "s1", "e1", artifacts=artifacts)
    representations: list[dict[str, Any]] = [
        artifact("fig#v1"),
        {"__typename": "Code", "id": "Code:e1"},
        artifact("table#v1"),
        artifact("missing#v1"),
        artifact("report#v1"),
    ]
    get_nodes_calls.clear()

    found = (await gql.execute(ENTITIES, representations=representations))["_entities"]

    assert found == [
        {"__typename": "Artifact", "id": "Artifact:fig#v1", "logicalName": "fig"},
        {"__typename": "Code", "id": "Code:e1"},
        {"__typename": "Artifact", "id": "Artifact:table#v1", "logicalName": "table"},
        None,
        {"__typename": "Artifact", "id": "Artifact:report#v1", "logicalName": "report"},
    ]
    assert len(get_nodes_calls) == 1
    assert sorted(get_nodes_calls[0]) == sorted(r["id"] for r in representations)


async def test_a_representation_of_the_wrong_type_resolves_to_null(gql: GraphQLClient) -> None:
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig")])

    found = await gql.execute(
        ENTITIES, representations=[{"__typename": "Artifact", "id": "Code:e1"}]
    )

    assert found["_entities"] == [None]


async def test_an_id_no_store_can_hold_is_invalid_at_its_position_alone(
    gql: GraphQLClient,
) -> None:
    # A lone surrogate cannot be encoded by any store; an id of 8,193 characters is longer
    # than any stored one. Neither may fail the batch it came in.
    await b.execution(gql, "s1", "e1", artifacts=[b.artifact("fig")])
    representations = [
        artifact("fig#v1"),
        {"__typename": "Artifact", "id": "\ud800"},
        {"__typename": "Code", "id": "Code:e1"},
        {"__typename": "Code", "id": "C" * 8193},
    ]

    result = await gql.raw(ENTITIES, representations=representations)

    assert [e and e["id"] for e in result.data["_entities"]] == [
        "Artifact:fig#v1",
        None,
        "Code:e1",
        None,
    ]
    refused = {tuple(error.path): error.extensions for error in result.errors}
    assert refused == {
        ("_entities", 1): {"code": "INVALID_INPUT", "field": "representations[1].id"},
        ("_entities", 3): {"code": "INVALID_INPUT", "field": "representations[3].id"},
    }
