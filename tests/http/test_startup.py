"""``create_app(started=…)``: called once, when the runtime has started and before the first
request is answered (``serve`` settles the start-up heap there)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.testclient import TestClient

from gateway.http.app import create_app
from gateway.settings import Settings
from tests.http.live import LOCAL_URL

if TYPE_CHECKING:
    from pathlib import Path


def test_started_is_called_once_the_runtime_runs_and_before_any_request(tmp_path: Path) -> None:
    seen: list[str] = []
    app = create_app(
        Settings(data_dir=tmp_path, fsync=False),
        started=lambda: seen.append(type(app.state.runtime).__name__),
    )

    with TestClient(base_url=LOCAL_URL, app=app) as client:
        assert seen == ["Runtime"]
        assert client.get("/health").status_code == 200
        assert client.get("/health").status_code == 200

    assert seen == ["Runtime"]
