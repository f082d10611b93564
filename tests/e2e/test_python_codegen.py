"""The committed Python client is what ariadne-codegen makes of today's schema and operations."""

from __future__ import annotations

import shutil
import subprocess
from typing import TYPE_CHECKING

from tests.e2e.conftest import CLIENTS, ROOT, TOOL_SECONDS, child_env, missing

if TYPE_CHECKING:
    from pathlib import Path

PYTHON_CLIENT = CLIENTS / "python"
PACKAGE = "science_memory_client"
CODEGEN = ROOT / ".venv-codegen" / "bin" / "ariadne-codegen"


def generate_into(tmp_path: Path) -> Path:
    """Run ariadne-codegen on the committed configuration, in a mirror of the tree's layout."""
    if not CODEGEN.is_file():
        missing(f"{CODEGEN} not found (run tools/setup-clients.sh dev)")
    workdir = tmp_path / "clients" / "python"
    workdir.mkdir(parents=True)
    for name in ("ariadne-codegen.toml", "py.typed"):
        shutil.copy(PYTHON_CLIENT / name, workdir)
    (tmp_path / "clients" / "operations-py").symlink_to(CLIENTS / "operations-py")
    (tmp_path / "schema.graphql").symlink_to(ROOT / "schema.graphql")
    done = subprocess.run(
        [str(CODEGEN), "--config", "ariadne-codegen.toml"],
        cwd=workdir,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=TOOL_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return workdir / PACKAGE


def sources(package: Path) -> dict[str, str]:
    files = sorted(path for path in package.iterdir() if path.is_file())
    return {path.name: path.read_text(encoding="utf-8") for path in files}


def test_the_committed_client_is_up_to_date(tmp_path: Path) -> None:
    generated = generate_into(tmp_path)

    assert sources(generated) == sources(PYTHON_CLIENT / PACKAGE), "run: bash tools/codegen.sh"
