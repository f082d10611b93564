"""Sampling the running gateway with py-spy and summarising where its CPU time goes.

py-spy attaches to the server process from outside (no instrumentation in the gateway, idle
waits in the event loop are not sampled), records collapsed stacks, and this module folds them
into a short text report: the share of samples under each layer (inclusive) and the functions
holding the most samples themselves (self time).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from bench.server import stop

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

RATE = 250  # samples per second

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("uvicorn + httptools (HTTP, ASGI)", ("uvicorn/", "httptools")),
    ("starlette", ("starlette/",)),
    ("strawberry HTTP view (request/response, JSON)", ("strawberry/http", "strawberry/asgi")),
    ("graphql-core parse", ("graphql/language/parser", "graphql/language/lexer")),
    ("graphql-core validate", ("graphql/validation/",)),
    ("graphql-core execute (resolve + complete values)", ("graphql/execution/",)),
    ("strawberry schema extensions", ("strawberry/extensions/", "gateway/schema/errors")),
    ("gateway.schema (adapters, from_record, loaders)", ("gateway/schema/",)),
    ("resolvers (use cases)", ("resolvers/",)),
    ("file store (graph indexes, transactions)", ("gateway/stores/file/",)),
    ("asyncio task creation (gather, ensure_future)", ("asyncio/tasks.py",)),
    ("json encode/decode", ("json/",)),
)
_ENTRY = ("gateway/__main__.py", "gateway/cli/main.py")


def py_spy() -> str | None:
    """The py-spy executable (the bench extra installs it next to this interpreter)."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


@contextlib.asynccontextmanager
async def sampling(pid: int, output: Path) -> AsyncIterator[None]:
    """Record the process ``pid`` while the block runs; raw collapsed stacks to ``output``."""
    executable = py_spy()
    if executable is None:
        raise RuntimeError("py-spy is not installed (pip install -e '.[bench]')")
    command = [executable, "record", "--pid", str(pid), "--rate", str(RATE)]
    command += ["--format", "raw", "--output", str(output), "--nonblocking"]
    recorder = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    await asyncio.sleep(1.0)  # attached
    try:
        yield
    finally:
        await stop(recorder, 60, signal.SIGINT)  # py-spy writes its output on SIGINT


def read_stacks(path: Path) -> Counter[tuple[str, ...]]:
    stacks: Counter[tuple[str, ...]] = Counter()
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        frames, _, count = line.rpartition(" ")
        if frames and count.isdigit():
            stacks[tuple(frames.split(";"))] += int(count)
    return stacks


def summarise(stacks: Counter[tuple[str, ...]], top: int = 15) -> str:
    """Layers by inclusive share and the functions with the most self samples."""
    total = sum(stacks.values()) or 1
    lines = [f"{total} samples at {RATE} Hz", "", "inclusive share by layer:"]
    for name, markers in LAYERS:
        hit = sum(n for stack, n in stacks.items() if any(_has(stack, m) for m in markers))
        lines.append(f"  {100 * hit / total:5.1f}%  {name}")
    own: Counter[str] = Counter()
    for stack, count in stacks.items():
        own[_function(stack[-1])] += count
    lines += ["", "self time, top functions:"]
    lines += [f"  {100 * n / total:5.1f}%  {frame}" for frame, n in own.most_common(top)]
    lines += ["", "inclusive share, top product functions (gateway/, resolvers/):"]
    lines += [f"  {100 * n / total:5.1f}%  {frame}" for frame, n in _product(stacks, top)]
    return "\n".join(lines)


def _has(stack: tuple[str, ...], marker: str) -> bool:
    return any(marker in frame for frame in stack)


def _product(stacks: Counter[tuple[str, ...]], top: int) -> list[tuple[str, int]]:
    inclusive: Counter[str] = Counter()
    for stack, count in stacks.items():
        for function in {_function(frame) for frame in stack if _is_product(frame)}:
            inclusive[function] += count
    return inclusive.most_common(top)


def _is_product(frame: str) -> bool:
    product = "gateway/" in frame or "resolvers/" in frame
    return product and not any(entry in frame for entry in _ENTRY)


def _function(frame: str) -> str:
    """``name (path:line)`` → ``name (path)``: one entry per function, not per line."""
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rsplit(':', 1)[0]})"
