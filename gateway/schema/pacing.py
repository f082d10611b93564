"""Paced lists: long results serialised in short steps, inside the query's time budget.

graphql-core completes a plain list in one go: 5,000 nodes with their fields hold the event loop
for about a second, and nothing else (a writer's fsync completion, a ``{ __typename }``) runs
meanwhile. A list that is also an async iterable is completed item by item
(``complete_async_iterator_value``), so ``Paced`` hands the loop back every ``PACE`` items —
and there, once the query's deadline (``DEADLINE``, set by ``TimeBudget``) has
passed, stops the work with ``QueryLimitExceeded``. To the rest of the code it is a list.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from resolvers.errors import QueryLimitExceededError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable

T = TypeVar("T")
S = TypeVar("S")

# Items completed between two yields. The explorer's selection (seven node fields, properties
# included) costs 6-8 µs an item to convert and complete (on 2 shared cores at load 5), so a
# step of 64 stays under a millisecond; every yield is a turn of the event loop, which a
# 500-node subgraph paid ~150 times at 16.
PACE = 64

DEADLINE: ContextVar[float | None] = ContextVar("query_deadline", default=None)

OVER_BUDGET = (
    "The query ran out of its time budget; ask for less (a smaller `first`, fewer fields or hops)."
)


class Paced(list[T]):
    """A list that graphql-core completes in steps of ``PACE`` items."""

    async def __aiter__(self) -> AsyncIterator[T]:
        for index, item in enumerate(self):
            if index and index % PACE == 0:
                await breathe()
            yield item


async def breathe() -> None:
    """Let the event loop run everything else that is ready; stop a query over its budget."""
    await asyncio.sleep(0)
    deadline = DEADLINE.get()
    if deadline is not None and asyncio.get_running_loop().time() > deadline:
        raise QueryLimitExceededError(OVER_BUDGET)


async def paced_map(convert: Callable[..., T], items: Iterable[S], *args: Any) -> Paced[T]:
    """``[convert(item, *args) for item in items]``, yielding to the loop every ``PACE``
    items."""
    converted: Paced[T] = Paced()
    for index, item in enumerate(items):
        if index and index % PACE == 0:
            await breathe()
        converted.append(convert(item, *args))
    return converted
