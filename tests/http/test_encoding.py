"""Answers are encoded by msgspec (``gateway.http.app.encode_json``) and mean what
``json.dumps`` wrote: the same JSON value, and the very text where msgspec would differ."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import TYPE_CHECKING, Any

import pytest

from gateway.http.app import encode_json
from gateway.schema.nodes import json_properties
from resolvers.records import Label, node_id
from tests import builders as b

if TYPE_CHECKING:
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


REFUSED = {
    "lone surrogate": {"data": {"name": "broken \ud800 text"}},
    "non-finite": {"data": {"properties": json_properties({"x": math.nan, "y": [1.5, -math.inf]})}},
    "nested non-finite": {"data": {"p": json_properties({"m": {"deep": [math.inf]}, "s": "a"})}},
}


@pytest.mark.parametrize("name", REFUSED)
def test_what_msgspec_would_write_otherwise_is_written_as_json_dumps_wrote_it(name: str) -> None:
    payload = REFUSED[name]

    encoded = encode_json(payload)

    assert encoded == stdlib(payload)


async def test_a_stored_non_finite_property_answers_as_before(
    gql: GraphQLClient, store: GraphStore
) -> None:
    await b.first_message(gql, "s1")
    goal_id = node_id(Label.RESEARCH_GOAL, "goal:session:s1")
    (goal,) = await store.get_nodes([goal_id])
    assert goal is not None
    odd: dict[str, Any] = {"score": math.nan, "range": [1.5, math.inf]}
    async with store.transaction("s1") as tx:
        await tx.put_node(dataclasses.replace(goal, props={**goal.props, **odd}))

    data = await gql.execute(
        '{ subgraph(sessionId: "s1") { ... on Subgraph { nodes { id properties } } } }'
    )
    answer = {"data": data}

    assert encode_json(answer) == stdlib(answer)
    (stored,) = data["subgraph"]["nodes"]
    assert math.isnan(stored["properties"]["score"])
    assert '"score":NaN' in encode_json(answer)
