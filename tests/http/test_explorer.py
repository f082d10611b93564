"""``/explorer``: the built files with a same-origin policy, or a page saying how to build it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from gateway.http import explorer
from gateway.http.app import create_app
from gateway.settings import Settings
from tests.http.live import LOCAL_URL

ROOT = Path(__file__).parents[2]
SOURCES = re.compile(r'(?:src|href)="([^"]*)"')


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "explorer"
    folder.mkdir()
    for name in explorer.FILES:
        (folder / name).write_text(f"/* {name} */")
    monkeypatch.setattr(explorer, "EXPLORER_DIR", folder)
    return folder


def test_the_built_explorer_is_served_without_a_token_and_only_from_its_origin(
    built: Path, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path / "data", internal_token="t", read_token="r")

    with TestClient(base_url=LOCAL_URL, app=create_app(settings)) as client:
        page = client.get("/explorer/")
        script = client.get("/explorer/cytoscape.min.js")
        bare = client.get("/explorer", follow_redirects=False)

    assert page.status_code == script.status_code == 200
    assert page.text == "/* index.html */"
    assert script.text == "/* cytoscape.min.js */"
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    assert bare.status_code in {307, 308}
    assert bare.headers["location"].endswith("/explorer/")


def test_an_unbuilt_explorer_says_how_to_build_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(explorer, "EXPLORER_DIR", tmp_path / "absent")

    with TestClient(
        base_url=LOCAL_URL, app=create_app(Settings(data_dir=tmp_path / "data"))
    ) as client:
        page = client.get("/explorer/")
        root = client.get("/explorer")

    assert page.status_code == root.status_code == 503
    assert "tools/setup-clients.sh" in page.text


def test_the_page_loads_nothing_from_another_origin() -> None:
    page = (ROOT / "clients" / "explorer" / "index.html").read_text(encoding="utf-8")

    sources = SOURCES.findall(page)

    assert set(sources) == {
        "explorer.css",
        "cytoscape.min.js",
        "cytoscape-dagre.js",
        "graphql-ws.min.js",
        "explorer.js",
    }
    assert set(sources) <= set(explorer.FILES)
