"""The GraphQL-over-HTTP audit suite of the ``graphql-http`` package against a real gateway."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.e2e.conftest import CLIENTS, run_node, serve_gateway

if TYPE_CHECKING:
    from pathlib import Path

    from tests.e2e.conftest import Gateway

TOKEN = "audit-token-91c2"


def failures(gateway: Gateway, *token: str) -> tuple[int, list[str]]:
    run = run_node(CLIENTS / "e2e" / "audit.mjs", gateway.graphql, *token)
    results = run["results"]
    failed = [f"{r['status']} {r['name']}: {r['reason']}" for r in results if r["status"] != "ok"]
    # `notice` is a MAY; `warn` a SHOULD and `error` a MUST.
    return len(results), [line for line in failed if not line.startswith("notice")]


def test_no_must_or_should_audit_fails(gateway: Gateway) -> None:
    audited, failed = failures(gateway)

    assert audited > 50  # the suite ran (graphql-http 1.23 has 61 audits)
    assert failed == []


def test_no_audit_fails_with_a_token_configured(tmp_path: Path) -> None:
    with serve_gateway(tmp_path, INTERNAL_TOKEN=TOKEN) as gateway:
        audited, failed = failures(gateway, TOKEN)

    assert audited > 50
    assert failed == []
