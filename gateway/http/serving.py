"""uvicorn's h11 protocol with a request-head timeout (slowloris, idle sockets).

uvicorn closes a kept-alive connection that stays idle (``timeout_keep_alive``), but it starts
that timer only after a response, and stops it at the first byte of the next request: a
connection that never sends a request, or sends its head a byte at a time, is held forever.
``HeadTimeoutProtocol`` closes a connection whose request head is not complete within
``head_timeout`` seconds of the connection opening or of the previous response. The body has
its own timeout (``gateway.http.limits.BodySizeLimit``). A request that is not HTTP is refused
with a coded GraphQL error in JSON, not uvicorn's plain text. After each response the cyclic
collector's young generation is collected once half full (``collect_between_requests``).
"""

from __future__ import annotations

import gc
import json
import logging
import resource
import sys
from typing import TYPE_CHECKING, Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

if TYPE_CHECKING:
    import asyncio


logger = logging.getLogger(__name__)

# A young collection after this many new container objects instead of Python's 700: answering
# one subgraph (a few thousand objects, nearly all freed by their reference counts once the
# answer is sent) set off five young collections, and every other request a collection of the
# middle generation: ~0.8 ms of its ~17 ms in-process (SQLite engine, 1M nodes).
YOUNG_COLLECTION_THRESHOLD = 10_000
# How long a thread holding the GIL may keep it from a thread waiting for it, instead of
# Python's 5 ms. Every SQLite statement and thread hand-off releases the GIL and takes it back:
# while a long document was parsed on the parse thread, an observe (a few dozen of those)
# waited up to 5 ms at each, 120-150 ms in all in half the runs (bench/README.md, "The GIL's
# switch interval"); at 1 ms, 30-37 ms.
SWITCH_INTERVAL_SECONDS = 0.001


def tune_interpreter() -> None:
    """For a serving process: collect the young generation less often, and hand the GIL to a
    waiting thread sooner (see above)."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, old)
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)


def collect_between_requests() -> None:
    """After a response has gone out (``HeadTimeoutProtocol``): once the young generation is
    half full, collect it now, rather than let the allocation that fills it pay the collection
    inside whichever request makes it. The collector's own choice of the generation is kept:
    the middle one every ``threshold1`` young collections, the old one every ``threshold2``
    middle ones. A request that allocates more than the other half still meets a collection
    of its own (the collector's automatic one)."""
    young, middle, old = gc.get_count()
    young_threshold, middle_threshold, old_threshold = gc.get_threshold()
    if not gc.isenabled() or young < young_threshold // 2:
        return
    generation = 0
    if middle + 1 >= middle_threshold:  # this collection would be the ``threshold1``-th
        generation = 2 if old + 1 >= old_threshold else 1
    gc.collect(generation)


def settle_startup_heap() -> None:
    """After the start: what it made (modules, the schema, the store's open state) leaves the
    cyclic collector's walks. A full walk of a SQLite-engine gateway's ~155,000 containers took
    ~100 ms, once every few dozen requests; the log engine freezes its loaded graph itself."""
    gc.collect()
    gc.freeze()


# Descriptors beside the connections: the store's files, the Neo4j pool, the log, the loop.
SPARE_DESCRIPTORS = 256


def fit_open_file_limit(max_connections: int) -> int:
    """Raise the soft open-file limit so ``max_connections`` sockets fit (up to the hard limit).

    Past the limit ``accept`` fails with EMFILE and a new client is reset instead of answered
    503 by the connection cap. Returns the connections that fit; logs when that is fewer."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max_connections + SPARE_DESCRIPTORS
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
        soft = raised
    fits = max_connections if soft == resource.RLIM_INFINITY else soft - SPARE_DESCRIPTORS
    if fits < max_connections:
        logger.warning(
            "the open-file limit (%d) holds only %d of MAX_CONNECTIONS=%d connections",
            soft,
            max(fits, 1),
            max_connections,
        )
    return max(1, min(fits, max_connections))


class HeadTimeoutProtocol(H11Protocol):
    head_timeout: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._timed_cycle: object | None = None

    @classmethod
    def with_timeout(cls, seconds: float) -> type[HeadTimeoutProtocol]:
        return type(cls.__name__, (cls,), {"head_timeout": seconds})

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is not None and self.cycle is not self._timed_cycle:
            self._timed_cycle = self.cycle  # a whole request head arrived
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()
        collect_between_requests()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._disarm()  # the connection now belongs to the WebSocket protocol
        super().handle_websocket_upgrade(event)

    def send_400_response(self, msg: str) -> None:
        """A request that is not HTTP (a bad ``Content-Length``, a header without a colon, a
        byte a URL may not hold) refused as uvicorn does, but as a coded GraphQL error in JSON
        rather than plain text: whatever a client sends, it reads the same kind of answer
        (in ``application/json``: what the request asked for is not known)."""
        error = {"message": msg, "extensions": {"code": "BAD_REQUEST"}}
        body = json.dumps({"errors": [error]}, separators=(",", ":")).encode()
        headers = [
            (b"content-type", b"application/json; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        response = h11.Response(status_code=400, headers=headers, reason=b"Bad Request")
        for event in (response, h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.head_timeout, self._timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()
