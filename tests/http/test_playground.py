"""The playground page: local GraphiQL assets when installed, the pinned CDN otherwise."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

import pytest
from starlette.testclient import TestClient

from gateway.http import playground
from gateway.http.app import create_app
from gateway.settings import Settings
from tests.http.conftest import INTERNAL_TOKEN, READ_TOKEN
from tests.http.live import LOCAL_URL

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

HTML = {"Accept": "text/html"}
URLS = re.compile(r'(?:src|href)="([^"]*)"')


@pytest.fixture
def assets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "graphiql"
    folder.mkdir()
    for asset in playground.ASSETS:
        (folder / asset.name).write_text(f"/* {asset.name} */")
    monkeypatch.setattr(playground, "ASSETS_DIR", folder)
    return folder


@pytest.fixture
def no_assets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(playground, "ASSETS_DIR", tmp_path / "absent")


def serve(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path, internal_token=INTERNAL_TOKEN, read_token=READ_TOKEN)
    with TestClient(base_url=LOCAL_URL, app=create_app(settings)) as client:
        yield client


@pytest.fixture
def offline_client(assets: Path, tmp_path: Path) -> Iterator[TestClient]:
    yield from serve(tmp_path)


@pytest.fixture
def cdn_client(no_assets: None, tmp_path: Path) -> Iterator[TestClient]:
    yield from serve(tmp_path)


def test_with_assets_installed_the_page_references_only_the_gateway(
    offline_client: TestClient,
) -> None:
    page = offline_client.get("/graphql", headers=HTML).text
    script = offline_client.get("/graphql/assets/graphiql.min.js")

    urls = URLS.findall(page)
    assert sorted(urls) == sorted(
        ["data:,", *(f"graphql/assets/{asset.name}" for asset in playground.ASSETS)]
    )
    assert "query SessionChain" in page
    assert script.status_code == 200
    assert script.text == "/* graphiql.min.js */"


def test_no_other_site_may_frame_the_page(offline_client: TestClient) -> None:
    # A shared ``?q=`` link holds a document: framed under another page, a click would run it.
    page = offline_client.get("/graphql?q=mutation%20%7B%20x%20%7D", headers=HTML)

    assert page.status_code == 200
    assert page.headers["Content-Security-Policy"] == "frame-ancestors 'none'"
    assert page.headers["X-Frame-Options"] == "DENY"


def test_assets_and_a_shared_page_need_no_token(offline_client: TestClient) -> None:
    style = offline_client.get("/graphql/assets/graphiql.min.css")
    shared = offline_client.get("/graphql?q=%7Bhealth%7Bstatus%7D%7D", headers=HTML)

    assert style.status_code == 200
    assert shared.status_code == 200
    assert "<title>ScienceMemory playground</title>" in shared.text


def test_a_get_with_a_query_parameter_is_a_request_and_needs_the_token(
    offline_client: TestClient,
) -> None:
    response = offline_client.get("/graphql?query=%7Bhealth%7Bstatus%7D%7D", headers=HTML)

    assert response.status_code == 401


def test_without_assets_the_page_loads_pinned_cdn_files_and_says_how_to_install(
    no_assets: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.http.playground")

    with TestClient(base_url=LOCAL_URL, app=create_app(Settings(data_dir=tmp_path))) as client:
        page = client.get("/graphql", headers=HTML).text

    for asset in playground.ASSETS:
        assert f'"{asset.cdn_url}" integrity="{asset.integrity}"' in page
    assert "graphql/assets/" not in page
    assert "query SessionChain" in page
    assert "tools/setup-clients.sh" in caplog.text


def test_the_default_document_cannot_close_its_script_tag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(playground, "DEFAULT_QUERY", "# </script><script>alert(1)</script>")

    page = playground.Playground().html

    assert "</script><script>alert(1)" not in page
    assert "\\u003c/script>" in page
