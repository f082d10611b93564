"""Neo4j stopped and restarted under load, and the gateway's ``/health`` watched meanwhile.

The test server is driven through ``tools/neo4j-test-server/run.sh`` (``stop --keep-data``, then
``start --same-port``), which acts on the server of ``NEO4J_TEST_STATE_DIR`` (default
``<repo>/.neo4j-test``). Before stopping anything, the URI that state directory records must be
the one the gateway was given: an outage never hits a server the load does not use.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

SERVER = Path(__file__).resolve().parents[1] / "tools" / "neo4j-test-server" / "run.sh"
SERVER_TIMEOUT = 240.0  # one run.sh stop or start, including a JVM start on a busy machine
POLL = 0.2


class OutageError(RuntimeError):
    """The test server could not be stopped or started, or is not the one the load uses."""


@dataclass(frozen=True, slots=True)
class Outage:
    """Stop Neo4j ``start`` seconds into the load and keep it down for ``duration`` seconds."""

    start: float
    duration: float

    @classmethod
    def parse(cls, text: str) -> Outage:
        """``START:DURATION`` in seconds, e.g. ``20:15``."""
        start, _, duration = text.partition(":")
        try:
            outage = cls(float(start), float(duration))
        except ValueError:
            raise ValueError(f"expected START:DURATION in seconds, got {text!r}") from None
        if outage.start < 0 or outage.duration <= 0:
            raise ValueError(f"START must be >= 0 and DURATION > 0, got {text!r}")
        return outage


@dataclass(slots=True)
class Timeline:
    """What happened when (``time.monotonic()``), and the deepest outbox seen."""

    stop_sent: float | None = None
    stopped: float | None = None
    start_sent: float | None = None
    started: float | None = None
    degraded: float | None = None  # first /health not HEALTHY after the stop
    reachable: float | None = None  # first HEALTHY after the restart was sent
    recovered: float | None = None  # first HEALTHY with no pending writes after that
    peak_pending: int = 0


def state_dir(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("NEO4J_TEST_STATE_DIR") or SERVER.parents[2] / ".neo4j-test").resolve()


def check_same_server(uri: str, environ: Mapping[str, str]) -> None:
    """Refuse an outage when run.sh would act on another server than ``uri``."""
    recorded = state_dir(environ) / "uri"
    found = recorded.read_text().strip() if recorded.exists() else None
    if found != uri:
        raise OutageError(
            f"run.sh manages the server of {recorded.parent} ({found or 'none running'}), "
            f"not {uri}: export the NEO4J_TEST_STATE_DIR of the server the load uses"
        )


async def server(*args: str) -> None:
    """Run ``run.sh ARGS`` (bounded by ``SERVER_TIMEOUT``); ``OutageError`` when it fails."""
    process = await asyncio.create_subprocess_exec(
        "bash",
        str(SERVER),
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(SERVER_TIMEOUT):
            _, stderr = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        raise OutageError(f"run.sh {' '.join(args)} took over {SERVER_TIMEOUT:.0f} s") from None
    if process.returncode != 0:
        raise OutageError(f"run.sh {' '.join(args)} failed: {stderr.decode()[-2000:]}")


@dataclass(frozen=True, slots=True)
class Health:
    healthy: bool
    pending: int

    @property
    def settled(self) -> bool:
        """The backend answers and no write waits in the outbox."""
        return self.healthy and self.pending == 0


async def health(http: httpx.AsyncClient, url: str) -> Health | None:
    """The gateway's ``/health``, or ``None`` when it did not answer."""
    with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
        response = await http.get(f"{url}/health")
        if response.status_code == 200:
            report = response.json()
            return Health(report["status"] == "HEALTHY", int(report["pendingWrites"]))
    return None


async def wait_settled(http: httpx.AsyncClient, url: str, deadline: float) -> float | None:
    """Poll ``/health`` until it is settled; the moment it was, or ``None`` at ``deadline``."""
    while time.monotonic() < deadline:
        report = await health(http, url)
        if report is not None and report.settled:
            return time.monotonic()
        await asyncio.sleep(POLL)
    return None


async def run_outage(
    outage: Outage, origin: float, url: str, deadline: float, ready: Callable[[], bool]
) -> Timeline:
    """Stop the server at ``origin + outage.start`` once ``ready()`` (the load has had a write
    acknowledged: on a slow machine the first ones can take longer than START), restart it
    ``outage.duration`` seconds after it stopped, and watch the gateway at ``url`` until it is
    settled (or ``deadline``)."""
    timeline = Timeline()
    await asyncio.sleep(max(0.0, origin + outage.start - time.monotonic()))
    while not ready() and time.monotonic() < deadline:  # noqa: ASYNC110 -- a tally, no event
        await asyncio.sleep(POLL)
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as http, asyncio.TaskGroup() as group:
        timeline.stop_sent = time.monotonic()
        group.create_task(_watch(http, url, timeline, deadline))
        try:
            await server("stop", "--keep-data")
            timeline.stopped = time.monotonic()
            await asyncio.sleep(outage.duration)  # the outage itself: the server stays down
            timeline.start_sent = time.monotonic()
        finally:
            # Started again however this ends (cancelled, say): never left down.
            await server("start", "--same-port")
        timeline.started = time.monotonic()
    return timeline


async def _watch(http: httpx.AsyncClient, url: str, timeline: Timeline, deadline: float) -> None:
    """From the stop on: when the gateway reports the backend down, reachable again, and
    settled (reachable with an empty outbox), and the outbox's largest depth."""
    while time.monotonic() < deadline:
        report = await health(http, url)
        now = time.monotonic()
        if report is not None:
            timeline.peak_pending = max(timeline.peak_pending, report.pending)
            if not report.healthy:
                timeline.degraded = timeline.degraded or now
            elif timeline.degraded is not None and timeline.start_sent is not None:
                # Only once the server was started again: a server shutting down can still
                # answer a ping between two that time out.
                timeline.reachable = timeline.reachable or now
                if report.settled:
                    timeline.recovered = now
                    return
        await asyncio.sleep(POLL)


class Link:
    """A TCP relay to ``target`` on a loopback port of its own, which can be cut: a network
    outage with the database itself still running (its plans cached, its JVM warm), where
    ``server("stop")`` is a restart. ``cut()`` closes every relayed connection and stops
    listening, so a connect is refused; ``restore()`` listens on the same port again."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._server: asyncio.Server | None = None
        self._streams: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def __aenter__(self) -> Link:
        await self.restore()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.cut()

    async def restore(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for stream in list(self._streams):
            stream.transport.abort()
        self._streams.clear()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            return
        self._streams |= {writer, upstream}
        try:
            await asyncio.gather(_pipe(reader, upstream), _pipe(upstream_reader, writer))
        finally:
            for stream in (writer, upstream):
                self._streams.discard(stream)
                stream.transport.abort()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, ConnectionError):
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    writer.transport.abort()
