"""The app served by a real uvicorn on a free loopback port, in a thread of the test process.

For what Starlette's test client does not do: uvicorn's access log, chunked request bodies.
Logging is left to the test (``log_config=None``), so ``caplog`` sees uvicorn's records too.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import TYPE_CHECKING

import uvicorn

if TYPE_CHECKING:
    from collections.abc import Iterator

    from starlette.applications import Starlette

START_TIMEOUT = 30.0


# How the tests reach an app: by a loopback name, as a local client does (with no token the
# gateway refuses any other ``Host``: ``gateway.http.auth.LoopbackOnly``).
LOCAL_URL = "http://127.0.0.1"
LOCAL_WS = "ws://127.0.0.1"  # TestClient.websocket_connect joins paths to ws://testserver


@contextlib.contextmanager
def serving(app: Starlette, ws: str = "none") -> Iterator[str]:
    """Serve ``app`` until the block ends (WebSockets with ``ws="websockets-sansio"``); yields its
    base URL."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    host, port = listener.getsockname()
    config = uvicorn.Config(app, http="h11", ws=ws, lifespan="on", log_config=None, access_log=True)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            assert thread.is_alive(), "uvicorn stopped during start-up"
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(START_TIMEOUT)
        listener.close()
