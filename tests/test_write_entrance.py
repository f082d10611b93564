"""``Runtime.record``, the one write entrance: which events wait in the outbox while the
selected Neo4j is unreachable (the observes) and which answer at once (the declares)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from gateway.runtime.state import Runtime
from resolvers import declare, observe
from resolvers.errors import InvalidInputError, StoreUnavailableError
from resolvers.events import EvidenceDeclared, FirstMessageObserved
from resolvers.records import Backend

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from gateway.settings import Settings

GOAL = FirstMessageObserved("s1", goal_id="goal:session:s1", core_objective="TP53")
EVIDENCE = EvidenceDeclared(
    "s1",
    content="TP53 is mutated.",
    locator="p. 1",
    evidence_type="quote",
    confidence="high",
    strength="strong",
    source_paper_link="https://doi.org/10.1/a",
)


@pytest.fixture
async def unreachable(settings: Settings) -> AsyncIterator[Runtime]:
    """Neo4j selected, never connected (no password): every write finds it unreachable."""
    runtime = await Runtime.start(replace(settings, backend=Backend.NEO4J, neo4j_password=None))
    yield runtime
    await runtime.aclose()


async def test_an_observe_is_journalled_while_neo4j_is_unreachable(unreachable: Runtime) -> None:
    with pytest.raises(StoreUnavailableError) as caught:
        await unreachable.record(observe.observe_session_first_message, GOAL)

    assert caught.value.queued is True
    assert unreachable.outbox is not None
    assert unreachable.outbox.pending == 1


async def test_a_declare_answers_unreachable_and_is_not_journalled(unreachable: Runtime) -> None:
    with pytest.raises(StoreUnavailableError) as caught:
        await unreachable.record(declare.declare_evidence, EVIDENCE)

    assert caught.value.queued is False
    assert unreachable.outbox is not None
    assert unreachable.outbox.pending == 0


async def test_an_invalid_observe_is_refused_not_journalled(unreachable: Runtime) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await unreachable.record(
            observe.observe_session_first_message, replace(GOAL, core_objective=" ")
        )

    assert caught.value.field == "input.coreObjective"
    assert unreachable.outbox is not None
    assert unreachable.outbox.pending == 0
