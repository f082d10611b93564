"""Valid documents generated from the schema (hypothesis-graphql) never fail unexpectedly.

Every answer is data (union members) or top-level errors the client can act on: GraphQL
validation errors, or coded errors (``INVALID_INPUT``, ``QUERY_LIMIT_EXCEEDED``…). An
"Unexpected error." is a bug, and so is any Python exception text in an answer.
"""

from __future__ import annotations

from datetime import UTC
from typing import TYPE_CHECKING

from graphql import (
    IntValueNode,
    NameNode,
    ObjectFieldNode,
    ObjectValueNode,
    StringValueNode,
    ValueNode,
)
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis_graphql import mutations, queries

from gateway.schema import build_schema
from tests.fuzz.conftest import FUZZ, execute, fresh_runtime, tree, unexpected

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

SCHEMA = build_schema()
GRAPHQL_SCHEMA = SCHEMA._schema
ENTITIES = sorted(member.name for member in GRAPHQL_SCHEMA.type_map["_Entity"].types)  # type: ignore[attr-defined]
# configureMemoryGraph may point the gateway at any URI: it has its own tests (test_inputs.py).
MUTATIONS = sorted(set(GRAPHQL_SCHEMA.mutation_type.fields) - {"configureMemoryGraph"})  # type: ignore[union-attr]


def string(value: str) -> ValueNode:
    return StringValueNode(value=value)


def representation(typename: str, fields: dict[str, ValueNode]) -> ValueNode:
    return ObjectValueNode(
        fields=tuple(
            ObjectFieldNode(name=NameNode(value=name), value=value)
            for name, value in {"__typename": string(typename), **fields}.items()
        )
    )


IDS = st.sampled_from(["", "x", "Artifact:fig#v1", "Code:e1", "../x", "a/b"]) | st.text()
CUSTOM_SCALARS: dict[str, st.SearchStrategy[ValueNode]] = {
    "DateTime": st.datetimes(timezones=st.just(UTC)).map(lambda d: string(d.isoformat()))
    | st.text(max_size=30).map(string),
    "Date": st.dates().map(lambda d: string(d.isoformat())) | st.text(max_size=12).map(string),
    "JSON": st.just(ObjectValueNode(fields=())),
    "_Any": st.one_of(
        st.builds(
            representation,
            st.sampled_from([*ENTITIES, "Health", "Nope"]),
            st.dictionaries(
                st.sampled_from(["id", "key", "extra"]),
                IDS.map(string) | st.integers().map(lambda n: IntValueNode(value=str(n))),
                max_size=2,
            ),
        ),
        st.text(max_size=10).map(string),
    ),
}


async def run_generated(document: str, directory: Path) -> None:
    async with fresh_runtime(directory / "data") as sandbox:
        result = await execute(SCHEMA, sandbox.runtime, document)

    assert unexpected(result) == [], document
    assert {path.split("/")[0] for path in tree(directory)} <= {"data"}


@FUZZ
@given(document=queries(GRAPHQL_SCHEMA, custom_scalars=CUSTOM_SCALARS))
# Found by this test, then fixed: a link urlsplit refuses; federation references it choked on.
@example(document='{ node(nodeId: "[") { __typename } }')
@example(document='{ _entities(representations: [{__typename: "Nope", id: "x"}]) { __typename } }')
@example(document='{ _entities(representations: [{__typename: "Code"}]) { __typename } }')
@example(
    document='{ _entities(representations: [{__typename: "Code", id: "x", k: 1}]) { __typename } }'
)
@example(document='{ _entities(representations: ["x", 5]) { __typename } }')
async def test_generated_queries_answer_data_or_actionable_errors(
    document: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    await run_generated(document, tmp_path_factory.mktemp("query"))


@FUZZ
@given(document=mutations(GRAPHQL_SCHEMA, fields=MUTATIONS, custom_scalars=CUSTOM_SCALARS))
async def test_generated_mutations_answer_data_or_actionable_errors(
    document: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    await run_generated(document, tmp_path_factory.mktemp("mutation"))
