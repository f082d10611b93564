"""The TypeScript client: GraphQL Code Generator over schema.graphql, then ``tsc --noEmit``.

Each case generates into a copy of the client project (``src/example.ts``, ``package.json``,
``tsconfig.json``, the installed ``node_modules``), so a schema can be altered without touching
the tree.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import TYPE_CHECKING

import pytest

from tests.e2e.conftest import CLIENTS, NODE_MODULES, ROOT, TOOL_SECONDS, child_env, require_node

if TYPE_CHECKING:
    from pathlib import Path

SCHEMA = ROOT / "schema.graphql"


def project(tmp_path: Path) -> Path:
    copy = tmp_path / "clients"
    (copy / "src").mkdir(parents=True)
    shutil.copy(CLIENTS / "src" / "example.ts", copy / "src" / "example.ts")
    for name in ("package.json", "tsconfig.json"):
        shutil.copy(CLIENTS / name, copy / name)
    (copy / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    return copy


def run(command: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=CLIENTS,
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=TOOL_SECONDS,
        check=False,
    )


def codegen(schema: Path, copy: Path) -> subprocess.CompletedProcess[str]:
    """Generate the typed documents of ``operations/*.graphql`` into ``copy``."""
    return run(
        [str(NODE_MODULES / ".bin" / "graphql-codegen"), "--config", "codegen.ts"],
        CODEGEN_SCHEMA=str(schema),
        CODEGEN_OUTPUT=str(copy / "src" / "generated" / "graphql.ts"),
    )


def typecheck(copy: Path) -> subprocess.CompletedProcess[str]:
    return run([str(NODE_MODULES / ".bin" / "tsc"), "--noEmit", "-p", str(copy)])


def altered_schema(tmp_path: Path, old: str, new: str) -> Path:
    text = SCHEMA.read_text(encoding="utf-8")
    assert old in text
    altered = tmp_path / "schema.graphql"
    altered.write_text(text.replace(old, new), encoding="utf-8")
    return altered


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    require_node()
    return project(tmp_path)


def test_the_operations_generate_and_the_example_type_checks(copy: Path) -> None:
    generated = codegen(SCHEMA, copy)
    checked = typecheck(copy)

    assert generated.returncode == 0, generated.stdout + generated.stderr
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "export const DeclareClaimDocument" in (copy / "src/generated/graphql.ts").read_text()


def test_generation_fails_when_the_schema_drops_a_field_an_operation_reads(
    copy: Path, tmp_path: Path
) -> None:
    field = '  """Whether `node` has the target label."""\n  isTerminal: Boolean!\n'
    schema = altered_schema(tmp_path, field, "")

    generated = codegen(schema, copy)

    assert generated.returncode != 0
    assert "isTerminal" in generated.stdout + generated.stderr


def test_type_checking_fails_when_the_schema_changes_a_type_the_example_relies_on(
    copy: Path, tmp_path: Path
) -> None:
    declared = "type ClaimDeclared {\n  claimId: "
    schema = altered_schema(tmp_path, f"{declared}String!", f"{declared}Int!")

    generated = codegen(schema, copy)
    checked = typecheck(copy)

    assert generated.returncode == 0, generated.stdout + generated.stderr
    assert checked.returncode != 0
    assert "example.ts" in checked.stdout
