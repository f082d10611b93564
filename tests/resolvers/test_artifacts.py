"""artifactProvenance: the producing Code and ToolCall and the Code's inputs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from resolvers.artifacts import artifact_provenance
from resolvers.errors import InvalidInputError, NodeNotFoundError
from tests.resolvers.builders import artifact, call, code, execution, upload

if TYPE_CHECKING:
    from resolvers.store import GraphStore


async def test_provenance_lists_code_tool_call_and_ordered_dependencies(
    store: GraphStore,
) -> None:
    data = await upload(store, "data.csv")
    await execution(store, "e1", 10, produces=[("squares", 1)])
    await execution(
        store, "e2", 20, produces=[("plot", 1)], reads=[("squares", 1)], reads_files=["data.csv"]
    )

    found = await artifact_provenance(store, "plot", 1)

    assert found.artifact.id == artifact("plot")
    assert found.code is not None
    assert found.code.id == code("e2")
    assert found.code.get("code_hash") == "hash-e2"
    assert found.tool_call is not None
    assert found.tool_call.id == call("e2")
    assert [node.id for node in found.dependencies] == [data, artifact("squares")]


async def test_an_artifact_without_inputs_has_no_dependencies(store: GraphStore) -> None:
    await execution(store, "e1", 10, produces=[("fig", 1)])

    found = await artifact_provenance(store, "fig", 1)

    assert found.dependencies == []


async def test_an_absent_version_is_not_found(store: GraphStore) -> None:
    await execution(store, "e1", 10, produces=[("fig", 1)])

    with pytest.raises(NodeNotFoundError) as caught:
        await artifact_provenance(store, "fig", 2)

    assert caught.value.node_id == "fig#v2"


async def test_another_sessions_artifact_is_not_found_in_this_one(store: GraphStore) -> None:
    await execution(store, "e1", 10, produces=[("fig", 1)], session="other")

    with pytest.raises(NodeNotFoundError):
        await artifact_provenance(store, "fig", 1, session_id="s1")


@pytest.mark.parametrize(
    ("artifact_id", "version", "field"), [(" ", 1, "artifactId"), ("fig", 0, "version")]
)
async def test_bad_arguments_are_invalid(
    store: GraphStore, artifact_id: str, version: int, field: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await artifact_provenance(store, artifact_id, version)

    assert caught.value.field == field
