"""A page on another loopback origin calls the gateway from headless Chromium (CORS, SPEC §8)."""

from __future__ import annotations

import contextlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from tests.e2e.conftest import CLIENTS, require_chromium, run_node, serve_gateway

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

TOKEN = "cors-token-3e7d"
PAGE = b"<!doctype html><title>frontend</title><p>a frontend on its own origin</p>"


class PageHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: object) -> None:
        return


@contextlib.contextmanager
def page_origin() -> Iterator[str]:
    """A static page served on a free loopback port: an origin of its own."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), PageHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_only_the_configured_origin_may_call_and_its_preflight_is_cached(tmp_path: Path) -> None:
    require_chromium()
    with (
        page_origin() as allowed,
        page_origin() as other,
        serve_gateway(tmp_path, INTERNAL_TOKEN=TOKEN, CORS_ORIGINS=allowed) as gateway,
    ):
        run = run_node(CLIENTS / "e2e" / "cors.mjs", gateway.graphql, TOKEN, allowed, other)
        log = gateway.log.read_text()

    from_allowed = [call for call in run["calls"] if call["page"] == allowed]
    from_other = [call for call in run["calls"] if call["page"] == other]
    assert [(c["ok"], c["status"], c["body"]) for c in from_allowed] == [
        (True, 200, {"data": {"health": {"status": "HEALTHY"}}})
    ] * 2
    assert [(c["ok"], c["error"]) for c in from_other] == [
        (False, "TypeError: Failed to fetch")
    ] * 2
    preflights = [line for line in log.splitlines() if '"OPTIONS /graphql HTTP/1.1"' in line]
    assert [line.split('"')[-1].split()[0] for line in preflights] == ["200", "400", "400"]
