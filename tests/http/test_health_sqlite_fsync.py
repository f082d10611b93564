"""A failed fsync of the SQLite engine's write-ahead log: ``/health`` is DEGRADED and the write
answers ``MemoryGraphUnreachable`` (nothing of it kept) until a write succeeds again.

SQLite syncs its files from C (``fdatasync`` on Linux), so patching ``os.fsync`` never reaches
it, and Python cannot install a SQLite VFS of its own. What remains is failing the system call
itself: ``LD_PRELOAD`` of a small C library (a compiler at test time, and a library that must
know which file descriptor is the WAL) or ``strace``'s fault injection, chosen here: it needs
nothing built, ``-P <path>`` restricts it to the calls on the WAL (it resolves each call's file
descriptor to its path), and ``when=N..N`` fails exactly one of them. The gateway runs as
``science-memory serve`` under ``strace -f``, a real server in a child process. The WAL is
synced twice at the first start in an empty directory (the schema's commit: the WAL's header,
then the commit itself) and once per commit after; the write sent first is therefore refused
by the third sync, and strace's own log (``INJECTED``) shows that it was that sync that failed.

Without ``strace`` (or where it may not trace, e.g. a container without ``ptrace``) the test
skips with the reason, and fails when ``GATEWAY_REQUIRE_E2E=1`` (CI, whose ``.ci/run`` installs
strace).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

PREFIX = "SCIENCE_AGENT_MEMORY_GRAPH_"
START_TIMEOUT = 60.0
# WAL syncs made by the first start in an empty directory (the schema's commit).
SYNCS_AT_START = 2

OBSERVE = """mutation($s: String!, $goal: String!) {
  observeSessionFirstMessage(input: {sessionId: $s, goalId: $goal, coreObjective: "Q?"}) {
  __typename ... on MemoryGraphUnreachable { message backend queued } } }"""
SESSION = """query($s: String!) { session(sessionId: $s) {
  __typename ... on Session { goal { id } } } }"""


def strace_or_skip() -> str:
    """The ``strace`` binary, once it traced a child here; else skip (fail under CI)."""
    strace = shutil.which("strace")
    if strace is None:
        reason = "strace is not installed (apt-get install strace)"
    else:
        probe = subprocess.run(
            [strace, "-f", "-qq", "-e", "trace=none", "true"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0:
            return strace
        reason = f"strace cannot trace here: {probe.stderr.strip()}"
    if os.environ.get("GATEWAY_REQUIRE_E2E") == "1":
        pytest.fail(f"GATEWAY_REQUIRE_E2E=1 but {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def gateway_failing_wal_sync(data_dir: Path, trace: Path, sync: int) -> Iterator[str]:
    """``science-memory serve`` on ``data_dir`` (default settings: the SQLite engine) whose
    ``sync``-th fsync/fdatasync of the WAL fails with EIO; yields its URL."""
    strace = strace_or_skip()
    port = free_port()
    wal = data_dir / "graph" / "graph.sqlite3-wal"
    env = {k: v for k, v in os.environ.items() if not k.startswith(PREFIX)}
    env |= {f"{PREFIX}DATA_DIR": str(data_dir), f"{PREFIX}LOG_LEVEL": "WARNING"}
    command = [
        *(strace, "-f", "-qq", "-o", str(trace), "-P", str(wal)),
        *("-e", "trace=fsync,fdatasync"),
        *("-e", f"inject=fsync,fdatasync:error=EIO:when={sync}..{sync}"),
        *(sys.executable, "-m", "gateway", "serve", "--host", "127.0.0.1", "--port", str(port)),
    ]
    log = (data_dir.parent / "server.log").open("wb")
    tracer = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert tracer.poll() is None, (data_dir.parent / "server.log").read_text()
            assert time.monotonic() < deadline, "the gateway did not start"
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            time.sleep(0.05)
        yield url
    finally:
        # The server is strace's child: stop it, and strace ends with it.
        children = Path(f"/proc/{tracer.pid}/task/{tracer.pid}/children")
        servers = []
        with contextlib.suppress(OSError):
            servers = [int(pid) for pid in children.read_text().split()]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in servers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            try:
                tracer.wait(timeout=30)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            tracer.kill()
            tracer.wait()
        log.close()


def post(url: str, query: str, **variables: Any) -> dict[str, Any]:
    response = httpx.post(f"{url}/graphql", json={"query": query, "variables": variables})
    data: dict[str, Any] = response.json()["data"]
    return data


def observe(url: str, session: str) -> dict[str, Any]:
    answer: dict[str, Any] = post(url, OBSERVE, s=session, goal=f"goal:session:{session}")[
        "observeSessionFirstMessage"
    ]
    return answer


def stored(url: str, session: str) -> bool:
    answer = post(url, SESSION, s=session)["session"]
    return answer["__typename"] == "Session" and answer["goal"] is not None


def test_a_failed_fsync_of_the_sqlite_wal_is_degraded_until_a_write_succeeds(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "strace.log"
    with gateway_failing_wal_sync(tmp_path / "data", trace, SYNCS_AT_START + 1) as url:
        before = httpx.get(f"{url}/health").json()
        refused = observe(url, "s1")
        during = httpx.get(f"{url}/health").json()
        accepted = observe(url, "s2")
        after = httpx.get(f"{url}/health").json()
        kept = (stored(url, "s1"), stored(url, "s2"))

    injected = [line for line in trace.read_text().splitlines() if "INJECTED" in line]
    assert len(injected) == 1, trace.read_text()
    assert "EIO" in injected[0]
    assert (before["status"], before["backend"]) == ("HEALTHY", "FILE")
    assert (refused["__typename"], refused["backend"], refused["queued"]) == (
        "MemoryGraphUnreachable",
        "FILE",
        False,
    )
    assert "EIO" in refused["message"]
    assert (during["status"], during["reason"]) == (
        "DEGRADED",
        "Writes cannot be made durable: the disk reported an I/O error (EIO).",
    )
    assert accepted["__typename"] == "Observed"
    assert (after["status"], after["reason"]) == ("HEALTHY", None)
    assert kept == (False, True)
