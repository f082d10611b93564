"""How a store's refusal is answered: the member names the backend that refused."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from resolvers.errors import StoreWriteError
from tests import builders as b

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import pytest

    from resolvers.store import GraphStore
    from tests.conftest import GraphQLClient

UNREACHABLE = "__typename ... on MemoryGraphUnreachable { code backend queued }"


async def test_a_refused_write_names_the_backend_that_refused_it(
    gql: GraphQLClient, store: GraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    @asynccontextmanager
    async def refusing(session_id: str | None = None) -> AsyncIterator[Any]:
        raise StoreWriteError("Refused by a constraint.", backend=store.backend.value)
        yield

    async def refusing_work(session_id: str, work: Any) -> Any:
        async with refusing(session_id) as tx:
            return await work(tx)

    # A use case writes through ``write`` (which a backend may run without ``transaction``).
    monkeypatch.setattr(store, "transaction", refusing)
    monkeypatch.setattr(store, "write", refusing_work)

    answer = await b.mutate(
        gql,
        "observeSessionFirstMessage",
        "ObserveSessionFirstMessageInput",
        {"sessionId": "s1", "goalId": "goal:session:s1", "coreObjective": "TP53"},
        selection=UNREACHABLE,
    )

    assert answer["__typename"] == "MemoryGraphUnreachable"
    assert answer == {
        "__typename": "MemoryGraphUnreachable",
        "code": "MEMORY_GRAPH_UNREACHABLE",
        "backend": store.backend.name,
        "queued": False,
    }
