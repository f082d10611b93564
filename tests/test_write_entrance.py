"""``Runtime.record``, the one write entrance: which events wait in the outbox while the
selected Neo4j is unreachable (the observes) and which answer at once (the declares)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from gateway.runtime.outbox import Outbox
from gateway.runtime.state import Runtime, SavedState
from gateway.stores.file.memory import FileMemoryStore
from gateway.stores.file.store import FileStore
from resolvers import declare, observe
from resolvers.errors import InvalidInputError, StoreUnavailableError
from resolvers.events import EvidenceDeclared, FirstMessageObserved
from resolvers.records import Backend

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from gateway.settings import Settings
    from resolvers.store import GraphStore

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


async def test_once_neo4j_did_not_answer_observes_are_journalled_at_once_until_it_answers(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each observe sent to a server that does not answer waits for it to time out (seconds
    # while it starts or the network drops packets): only the supervisor's ping tries it.
    down = True
    sent: list[str] = []

    async def ping() -> None:
        if down:
            raise StoreUnavailableError(Backend.NEO4J.value)

    async def use_case(target: GraphStore, event: FirstMessageObserved) -> object:
        sent.append(event.session_id)
        if down:
            raise StoreUnavailableError(Backend.NEO4J.value)
        return await observe.observe_session_first_message(target, event)

    def goal(session: str) -> FirstMessageObserved:
        return replace(GOAL, session_id=session, goal_id=f"goal:session:{session}")

    store = await FileStore.open(tmp_path / "neo4j", fsync=False)
    monkeypatch.setattr(store, "ping", ping)
    outbox = await Outbox.open(settings.data_dir / "outbox")
    memory = await FileMemoryStore.open(settings.data_dir / "memory")
    runtime = Runtime(
        settings, SavedState(backend=Backend.NEO4J), memory, {Backend.NEO4J: store}, outbox
    )
    queued = []
    for session in ("s1", "s2", "s3"):
        with pytest.raises(StoreUnavailableError) as caught:
            await runtime.record(use_case, goal(session))
        queued.append(caught.value.queued)
    while_down = await runtime.replay_outbox()
    down = False
    drained = await runtime.replay_outbox()
    await runtime.record(use_case, goal("s4"))
    await outbox.aclose()
    await memory.aclose()
    await store.aclose()

    assert queued == [True, True, True]
    assert (while_down, drained) == (None, 3)
    assert sent == ["s1", "s4"]
