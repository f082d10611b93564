"""A store may run a write's work again in a new transaction (``GraphStore.write``): only the
committed run counts.

The store below runs the work, then rolls its transaction back the first ``refusals`` times and
runs it again — as the Neo4j driver's managed transactions do after a deadlock — so a retried
write runs its body several times and only the last, committed run may count.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from gateway.stores.file.store import FileStore
from resolvers.errors import StoreUnavailableError
from resolvers.records import Label
from tests.resolvers import builders as b

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from pathlib import Path

    from resolvers.store import GraphTransaction


T = TypeVar("T")
WRITE_ATTEMPTS = 3


class _RolledBackError(Exception):
    pass


class RefusingStore:
    """A ``FileStore`` whose first ``refusals`` runs of a write are rolled back and retried,
    up to ``WRITE_ATTEMPTS`` runs in all (then the conflict is the answer)."""

    def __init__(self, inner: FileStore, refusals: int, *, transient: bool = True) -> None:
        self._inner = inner
        self.refusals = refusals
        self.transient = transient
        self.transactions = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @asynccontextmanager
    async def transaction(self, session_id: str | None = None) -> AsyncIterator[GraphTransaction]:
        self.transactions += 1
        async with self._inner.transaction(session_id) as tx:
            yield tx
            if self.refusals > 0:
                self.refusals -= 1
                # Raised inside the block: the file store rolls the body's changes back.
                raise _RolledBackError

    async def write(self, session_id: str, work: Callable[[GraphTransaction], Awaitable[T]]) -> T:
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                async with self.transaction(session_id) as tx:
                    return await work(tx)  # the refusal is raised as the block ends
            except _RolledBackError:
                if not self.transient or attempt == WRITE_ATTEMPTS:
                    raise StoreUnavailableError(
                        "test", detail="deadlock", transient=self.transient
                    ) from None
        raise AssertionError("unreachable")


@pytest.fixture
async def file_store(tmp_path: Path) -> AsyncIterator[FileStore]:
    opened = await FileStore.open(tmp_path / "graph")
    try:
        yield opened
    finally:
        await opened.aclose()


async def test_a_conflicting_write_is_retried_and_applied_once(file_store: FileStore) -> None:
    await b.goal(file_store)
    refusing = RefusingStore(file_store, refusals=WRITE_ATTEMPTS - 1)

    await b.execution(refusing, "e1", 10)

    calls = await file_store.list_nodes(labels=[Label.TOOL_CALL], session_id=b.S1, limit=10)
    assert refusing.transactions == WRITE_ATTEMPTS
    assert [node.seq for node in calls.items] == [1]  # the refused runs left no trace


async def test_a_write_refused_every_time_fails_after_the_last_attempt(
    file_store: FileStore,
) -> None:
    refusing = RefusingStore(file_store, refusals=WRITE_ATTEMPTS)

    with pytest.raises(StoreUnavailableError) as refused:
        await b.goal(refusing)

    assert refused.value.transient
    assert refusing.transactions == WRITE_ATTEMPTS
    assert await file_store.count_nodes() == 0


async def test_an_unreachable_store_is_not_retried(file_store: FileStore) -> None:
    refusing = RefusingStore(file_store, refusals=1, transient=False)

    with pytest.raises(StoreUnavailableError):
        await b.goal(refusing)

    assert refusing.transactions == 1


async def test_a_retried_declare_is_stored_once(
    file_store: FileStore,
) -> None:
    await b.goal(file_store)
    await b.search(file_store, "q1", 10, ["https://doi.org/10.1/x"])
    refusing = RefusingStore(file_store, refusals=1)

    evidence_id = await b.evidence(refusing, "TP53 is mutated", link="https://doi.org/10.1/x")

    (stored,) = await file_store.get_nodes([evidence_id])
    assert stored is not None
    assert stored.label is Label.EVIDENCE
    assert refusing.transactions == 2
