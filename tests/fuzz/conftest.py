"""Property-based tests of hostile and malformed input (SPEC §8).

Example counts stay modest so the whole directory runs in well under a minute; set
``HYPOTHESIS_PROFILE=long`` for a deeper search. Every example gets a fresh file store in its
own directory (``sandbox``), so examples never see each other's writes.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway.runtime.state import Runtime, SavedState
from gateway.schema.context import GraphContext
from gateway.settings import Settings
from gateway.stores.file.memory import FileMemoryStore
from gateway.stores.file.store import FileStore
from resolvers.records import Backend
from tests.profiles import profile

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    import strawberry
    from strawberry.types import ExecutionResult

FUZZ = profile("fuzz", examples=75, long_examples=2000)


@dataclass(frozen=True, slots=True)
class Sandbox:
    runtime: Runtime
    store: FileStore  # the store under the runtime's wrappers


@asynccontextmanager
async def fresh_runtime(data_dir: Path) -> AsyncIterator[Sandbox]:
    """A runtime on a new, empty file store in ``data_dir`` (no fsync: nothing here crashes)."""
    config = Settings(data_dir=data_dir, fsync=False, link_wait_seconds=0.0)
    store = await FileStore.open(data_dir / "graph", fsync=False)
    memory = await FileMemoryStore.open(data_dir / "memory", fsync=False)
    try:
        runtime = Runtime(config, SavedState(backend=Backend.FILE), memory, {Backend.FILE: store})
        yield Sandbox(runtime, store)
    finally:
        await store.aclose()
        await memory.aclose()


async def execute(
    schema: strawberry.Schema, runtime: Runtime, document: str, **variables: Any
) -> ExecutionResult:
    return await schema.execute(
        document, variable_values=variables, context_value=GraphContext(runtime=runtime)
    )


def tree(directory: Path) -> set[str]:
    """Every path under ``directory``, relative to it."""
    return {str(path.relative_to(directory)) for path in directory.rglob("*")}


PYTHON_TEXT = ("Traceback", "Error(", "Exception", 'File "', "object at 0x", "NoneType")


def unexpected(result: ExecutionResult) -> list[str]:
    """Why ``result`` is not an answer a client can act on (empty when it is): an "Unexpected
    error." is a bug, and so is any Python exception text in the answer."""
    problems = []
    for error in result.errors or ():
        code = (error.extensions or {}).get("code")
        if error.message == "Unexpected error." or code == "INTERNAL":
            problems.append(f"unexpected error at {error.path}: {error.original_error!r}")
    errors = [error.formatted for error in result.errors or ()]
    text = json.dumps({"data": result.data, "errors": errors}, default=repr)
    problems += [
        f"Python text {marker!r} in the answer" for marker in PYTHON_TEXT if marker in text
    ]
    return problems
