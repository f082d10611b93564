"""The search-term index that a load leaves to be built afterwards.

A reopened file store serves every read but search at once; search waits for the index, and a
caller's spent time budget stops only its own wait. Writes and deletes that race the build end
with exactly the index of a graph that indexed every change as it came.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.stores.file.graph import MemoryGraph
from gateway.stores.file.log import LogWriteError
from gateway.stores.file.store import FileStore
from resolvers.errors import StoreWriteError
from resolvers.records import Label, NodeRecord

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from resolvers.records import SearchHit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
S1, S2 = "s1", "s2"
WORDS = ["alpha", "alps", "beta", "gamma"]
PREFIXES = ["a", "al", "alp", "alpha", "alps", "b", "beta", "g", "gamma", "z"]
FIELDS = ["title", "content"]  # ranks 0 and 4
NUMBERS = range(6)


@dataclass(frozen=True)
class Put:
    number: int
    words: tuple[str, ...]
    field: str
    deleted: bool


@dataclass(frozen=True)
class Delete:
    number: int


@dataclass(frozen=True)
class Step:
    nodes: int


puts = st.builds(
    Put,
    st.sampled_from(NUMBERS),
    st.lists(st.sampled_from(WORDS), max_size=3).map(tuple),
    st.sampled_from(FIELDS),
    st.booleans(),
)
deletes = st.builds(Delete, st.sampled_from(NUMBERS))
steps = st.builds(Step, st.integers(1, 3))


def claim(number: int, text: str, *, field: str = "title", deleted: bool = False) -> NodeRecord:
    """Claim ``c<number>``, of session s1 or s2 by parity, with ``text`` in ``field``."""
    props: dict[str, object] = {field: text}
    if deleted:
        props["deleted_session"] = True
    session = S1 if number % 2 else S2
    return NodeRecord(f"Claim:c{number}", Label.CLAIM, f"c{number}", session, T0, props)


def change(graph: MemoryGraph, op: Put | Delete) -> None:
    if isinstance(op, Put):
        graph.put_node(claim(op.number, " ".join(op.words), field=op.field, deleted=op.deleted))
    else:
        graph.delete_node(claim(op.number, "").id)


def index_of(graph: MemoryGraph) -> dict[tuple[str, str | None], dict[str, int]]:
    """What search answers for every prefix, in every session and across them."""
    return {
        (prefix, session): graph.search(prefix, session)
        for prefix in PREFIXES
        for session in (None, S1, S2)
    }


def found(hits: Sequence[SearchHit]) -> dict[str, tuple[int, int]]:
    return {hit.node.id: (hit.matched, hit.rank) for hit in hits}


async def search(store: FileStore, term: str) -> dict[str, tuple[int, int]]:
    """``found`` for one term; a broken build fails the test instead of hanging it."""
    async with asyncio.timeout(30):  # a guard, not a measurement: the build takes milliseconds
        return found(await store.search([term]))


@pytest.fixture
def one_node_per_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Build the index one node per step, so that a reopened store is still building it."""
    monkeypatch.setattr("gateway.stores.file.store.TERM_INDEX_STEP", 1)


async def store_with(directory: Path, nodes: Sequence[NodeRecord]) -> None:
    store = await FileStore.open(directory)
    async with store.transaction(S1) as tx:
        for node in nodes:
            await tx.put_node(node)
    await store.aclose()


ALPHAS = [claim(number, f"alpha {number}") for number in range(20)]


# --- the graph ------------------------------------------------------------------------------


@given(
    loaded=st.lists(puts | deletes, max_size=12),
    racing=st.lists(puts | deletes | steps, max_size=20),
)
def test_changes_racing_the_build_leave_the_index_of_a_graph_that_never_deferred_it(
    loaded: list[Put | Delete], racing: list[Put | Delete | Step]
) -> None:
    deferred, reference = MemoryGraph(), MemoryGraph()
    with deferred.deferred_terms():
        for op in loaded:
            change(deferred, op)
    for op in loaded:
        change(reference, op)

    for event in racing:
        if isinstance(event, Step):
            deferred.index_deferred_terms(event.nodes)
        else:
            change(deferred, event)
            change(reference, event)
    while not deferred.index_deferred_terms(1):
        pass

    assert index_of(deferred) == index_of(reference)


def test_search_refuses_to_answer_from_an_index_being_built() -> None:
    graph = MemoryGraph()
    with graph.deferred_terms():
        graph.put_node(claim(1, "alpha"))

    with pytest.raises(RuntimeError, match="still being built"):
        graph.search("alpha", None)
    graph.index_deferred_terms(1)

    assert graph.search("alpha", None) == {"Claim:c1": 0}


# --- the store ------------------------------------------------------------------------------


@pytest.mark.usefixtures("one_node_per_step")
async def test_a_reopened_store_serves_reads_at_once_and_search_once_its_index_is_built(
    tmp_path: Path,
) -> None:
    await store_with(tmp_path, ALPHAS)
    store = await FileStore.open(tmp_path)

    # A budget already spent: whatever waits fails, whatever is served at once succeeds.
    async with asyncio.timeout(0):
        nodes = await store.get_nodes([ALPHAS[3].id])
        by_key = await store.nodes_by_key("c4")
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0):
            await store.search(["alpha"])
    hits = await search(store, "alpha")
    async with asyncio.timeout(0):
        again = found(await store.search(["alpha"]))
    await store.aclose()

    assert nodes == [ALPHAS[3]]
    assert by_key == [ALPHAS[4]]
    assert hits == {node.id: (1, 0) for node in ALPHAS}
    assert again == hits


@pytest.mark.usefixtures("one_node_per_step")
@pytest.mark.parametrize("steps_first", [0, 5, 30])
async def test_writes_and_deletes_racing_the_build_are_indexed_as_they_are_now(
    tmp_path: Path, steps_first: int
) -> None:
    await store_with(tmp_path, ALPHAS)
    store = await FileStore.open(tmp_path)
    for _ in range(steps_first):
        await asyncio.sleep(0)  # the build takes a step whenever the loop comes round

    async with store.transaction(S1) as tx:
        await tx.put_node(claim(1, "beta gamma"))  # was "alpha 1"
        await tx.put_node(claim(2, "alpha beta", field="content"))  # title -> content
        await tx.put_node(claim(3, "alpha 3", deleted=True))
        await tx.delete_node(ALPHAS[4].id)
        await tx.put_node(claim(30, "alpha gamma"))
    during = {term: await search(store, term) for term in ("alpha", "beta", "gamma")}
    await store.aclose()
    reopened = await FileStore.open(tmp_path)
    after = {term: await search(reopened, term) for term in ("alpha", "beta", "gamma")}
    await reopened.aclose()

    unchanged = {node.id: (1, 0) for node in ALPHAS[5:]} | {ALPHAS[0].id: (1, 0)}
    assert during["alpha"] == unchanged | {"Claim:c2": (1, 4), "Claim:c30": (1, 0)}
    assert during["beta"] == {"Claim:c1": (1, 0), "Claim:c2": (1, 4)}
    assert during["gamma"] == {"Claim:c1": (1, 0), "Claim:c30": (1, 0)}
    assert after == during


@pytest.mark.usefixtures("one_node_per_step")
async def test_after_a_failed_write_the_reloaded_store_builds_its_index_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store_with(tmp_path, ALPHAS[:5])
    store = await FileStore.open(tmp_path)

    async def refuse(payload: bytes) -> None:
        raise LogWriteError("disk full")

    monkeypatch.setattr(store._log, "append", refuse)
    with pytest.raises(StoreWriteError):
        async with store.transaction(S1) as tx:
            await tx.put_node(claim(30, "alpha"))
    hits = await search(store, "alpha")
    await store.aclose()

    assert hits == {node.id: (1, 0) for node in ALPHAS[:5]}


@pytest.mark.usefixtures("one_node_per_step")
async def test_a_store_closed_while_building_its_index_reopens_whole(tmp_path: Path) -> None:
    await store_with(tmp_path, ALPHAS)

    store = await FileStore.open(tmp_path)
    await store.aclose()
    reopened = await FileStore.open(tmp_path)
    hits = await search(reopened, "alpha")
    await reopened.aclose()

    assert hits == {node.id: (1, 0) for node in ALPHAS}
