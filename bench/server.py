"""The gateway under test: ``science-memory serve`` (uvicorn) in a child process on loopback.

The child gets a free port on 127.0.0.1, its own data directory and no token; it is stopped with
SIGTERM (SIGKILL after a grace period) when the ``running_gateway`` block ends, however it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

HOST = "127.0.0.1"
START_TIMEOUT = 900.0
STOP_TIMEOUT = 30.0
_PREFIX = "SCIENCE_AGENT_MEMORY_GRAPH_"


@dataclass(frozen=True, slots=True)
class Gateway:
    url: str
    pid: int
    start_seconds: float
    log: Path

    @property
    def graphql(self) -> str:
        return f"{self.url}/graphql"

    def rss_bytes(self) -> int:
        return rss_of(self.pid)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def rss_of(pid: int | str = "self") -> int:
    """Resident memory of a process in bytes (``VmRSS`` of ``/proc/<pid>/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def _environment(data_dir: Path, port: int, extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_PREFIX)}
    env.update(
        {
            f"{_PREFIX}DATA_DIR": str(data_dir),
            f"{_PREFIX}HOST": HOST,
            f"{_PREFIX}PORT": str(port),
            f"{_PREFIX}LOG_LEVEL": "WARNING",
        }
    )
    env.update({f"{_PREFIX}{name}": value for name, value in extra.items()})
    return env


@contextlib.asynccontextmanager
async def running_gateway(
    data_dir: Path, settings: Mapping[str, str] | None = None, code: Path | None = None
) -> AsyncIterator[Gateway]:
    """Start the gateway on ``data_dir`` and wait until ``/health`` answers; ``code``: run the
    gateway of that source tree (its directory and ``PYTHONPATH``) instead of this one."""
    port = free_port()
    log = data_dir.parent / f"{data_dir.name}-server.log"
    started = time.perf_counter()
    env = _environment(data_dir, port, settings or {})
    if code is not None:
        env["PYTHONPATH"] = str(code)
    with log.open("ab") as output:
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "gateway", "serve", "--host", HOST, "--port", str(port)),
            env=env,
            cwd=code,
            stdout=output,
            stderr=asyncio.subprocess.STDOUT,
        )
    try:
        url = f"http://{HOST}:{port}"
        await _wait_healthy(url, process, log)
        yield Gateway(url, process.pid, time.perf_counter() - started, log)
    finally:
        await stop(process, STOP_TIMEOUT)


async def _wait_healthy(url: str, process: asyncio.subprocess.Process, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    async with httpx.AsyncClient(timeout=5.0) as client:
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise RuntimeError(f"the gateway exited ({process.returncode}); see {log}")
            with contextlib.suppress(httpx.TransportError):
                if (await client.get(f"{url}/health")).status_code == 200:
                    return
            await asyncio.sleep(0.05)
    raise TimeoutError(f"the gateway did not answer within {START_TIMEOUT:.0f} s; see {log}")


async def stop(
    process: asyncio.subprocess.Process, grace: float, sig: signal.Signals = signal.SIGTERM
) -> None:
    """Send ``sig`` to a child we started, and SIGKILL it if it has not exited after ``grace``."""
    if process.returncode is not None:
        return
    process.send_signal(sig)
    try:
        await asyncio.wait_for(process.wait(), grace)
    except TimeoutError:
        process.kill()
        await process.wait()
