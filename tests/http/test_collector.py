"""A serving process collects its young generation between requests once it is half full
(``collect_between_requests``, after each response), in the collector's own cadence of
generations, so the collection does not land inside whichever request fills it."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

import pytest

from gateway.http.serving import collect_between_requests

if TYPE_CHECKING:
    from collections.abc import Iterator

THRESHOLDS = (1000, 3, 2)


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations collected, in order, with the thresholds above (restored after)."""
    collected: list[int] = []

    def noted(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collected.append(info["generation"])

    saved = gc.get_threshold()
    gc.collect()
    gc.set_threshold(*THRESHOLDS)
    gc.callbacks.append(noted)
    try:
        yield collected
    finally:
        gc.callbacks.remove(noted)
        gc.set_threshold(*saved)


def _allocate(containers: int) -> list[Any]:
    return [[] for _ in range(containers)]


def test_a_young_generation_under_half_full_is_left_alone(collections: list[int]) -> None:
    kept = _allocate(THRESHOLDS[0] // 4)

    collect_between_requests()

    assert collections == []
    assert kept


def test_the_collections_follow_the_collectors_cadence(collections: list[int]) -> None:
    kept = []
    for _ in range(THRESHOLDS[1] * THRESHOLDS[2]):
        kept.append(_allocate(THRESHOLDS[0] * 2 // 3))
        collect_between_requests()

    # Every third a middle one, every second of those a full one.
    assert collections == [0, 0, 1, 0, 0, 2]
    assert gc.get_count()[0] < THRESHOLDS[0] // 2


def test_nothing_is_collected_while_the_collector_is_off(collections: list[int]) -> None:
    gc.disable()
    try:
        kept = _allocate(THRESHOLDS[0])
        collect_between_requests()
        seen = list(collections)
    finally:
        gc.enable()

    assert seen == []
    assert kept
