"""JSON values: a non-finite number is refused on the way in (naming where) and answered as
``null`` on the way out."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from resolvers.errors import InvalidInputError
from resolvers.validate import validate_event
from resolvers.values import check_finite, finite_json


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (math.nan, "input.score"),
        ({"a": [1, {"b": math.inf}]}, "input.score.a[1].b"),
        ([0.5, -math.inf], "input.score[1]"),
    ],
)
def test_a_non_finite_number_is_refused_naming_where_it_is(value: object, field: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        check_finite(value, "input.score")

    assert refused.value.field == field


def test_finite_values_pass_and_answer_as_they_are() -> None:
    value = {"a": [1, 2.5, "x", None, True], "b": {"c": -0.0}}

    check_finite(value, "input")

    assert finite_json(value) is value


def test_a_non_finite_number_is_answered_as_null_leaving_the_stored_value_alone() -> None:
    stored = {"a": [1.5, math.nan], "b": {"c": math.inf}, "d": "text"}

    answered = finite_json(stored)

    assert answered == {"a": [1.5, None], "b": {"c": None}, "d": "text"}
    assert math.isnan(stored["a"][1])  # type: ignore[index]


@dataclass(frozen=True)
class _Measured:
    session_id: str
    ratio: float


def test_an_event_field_holding_a_non_finite_number_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError) as refused:
        validate_event(_Measured(session_id="s1", ratio=math.inf))

    assert refused.value.field == "input.ratio"
