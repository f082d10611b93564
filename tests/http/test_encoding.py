"""Answers are encoded by msgspec (``gateway.http.app.encode_json``) and mean what
``json.dumps`` wrote: the same JSON value, and the very text where msgspec would differ —
except a non-finite number, which JSON lacks: it is ``null`` (``gateway.schema.scalars``)."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import TYPE_CHECKING, Any

import pytest
from graphql import GraphQLScalarType

from gateway.http.app import encode_json
from gateway.schema.nodes import json_properties
from resolvers.records import Label, node_id
from tests import builders as b

if TYPE_CHECKING:
    import strawberry

    from resolvers.store import GraphStore
    from tests.conftest import GraphQLClient


def stdlib(data: object) -> str:
    """What the answers were before: strawberry's default encoder."""
    return json.dumps(data, separators=(",", ":"))


PAYLOADS = {
    "text": {"data": {"a": "文献综述 of TP53 — §2 \u00e9 \U0001f9ec", "b": 'quote " \\ \n\t'}},
    "numbers": {"data": {"big": 2**80, "neg": -7, "zero": 0, "float": 0.1, "exp": 1e16}},
    "nesting": {"data": {"list": [[], {}, [None, True, False]], "n": None}, "errors": []},
}


@pytest.mark.parametrize("name", PAYLOADS)
def test_an_answer_encodes_to_the_same_json_value(name: str) -> None:
    payload = PAYLOADS[name]

    encoded = encode_json(payload)

    assert json.loads(encoded) == json.loads(stdlib(payload)) == payload


REFUSED = {"lone surrogate": {"data": {"name": "broken \ud800 text"}}}


@pytest.mark.parametrize("name", REFUSED)
def test_what_msgspec_would_write_otherwise_is_written_as_json_dumps_wrote_it(name: str) -> None:
    payload = REFUSED[name]

    encoded = encode_json(payload)

    assert encoded == stdlib(payload)


def strict(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


NON_FINITE = {"x": math.nan, "y": [1.5, -math.inf], "m": {"deep": [math.inf]}, "s": "a"}
NULLED = {"x": None, "y": [1.5, None], "m": {"deep": [None]}, "s": "a"}


@pytest.mark.parametrize("text", ["plain", "broken \ud800 text"])
def test_a_non_finite_number_is_written_as_null(text: str) -> None:
    payload = {"data": {"properties": json_properties(NON_FINITE), "text": text}}

    encoded = encode_json(payload)

    assert strict(encoded)["data"]["properties"] == NULLED


async def test_a_stored_non_finite_property_is_answered_as_null(
    gql: GraphQLClient, store: GraphStore
) -> None:
    await b.first_message(gql, "s1")
    goal_id = node_id(Label.RESEARCH_GOAL, "goal:session:s1")
    (goal,) = await store.get_nodes([goal_id])
    assert goal is not None
    async with store.transaction("s1") as tx:
        await tx.put_node(dataclasses.replace(goal, props={**goal.props, **NON_FINITE}))

    data = await gql.execute(
        '{ subgraph(sessionId: "s1") { ... on Subgraph { nodes { id properties } } } }'
    )

    (stored,) = data["subgraph"]["nodes"]
    assert {name: stored["properties"][name] for name in NULLED} == NULLED
    assert strict(encode_json({"data": data}))["data"] == data


def test_a_json_argument_holding_a_non_finite_number_is_refused(schema: strawberry.Schema) -> None:
    scalar = schema._schema.type_map["JSON"]
    assert isinstance(scalar, GraphQLScalarType)

    with pytest.raises(ValueError, match=r"a\.b\[1\] must be a finite number"):
        scalar.parse_value({"a": {"b": [1, math.inf]}})

    assert scalar.parse_value({"a": [1.5]}) == {"a": [1.5]}
