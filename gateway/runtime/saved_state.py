"""``<dataDir>/gateway.json``: what ``configureMemoryGraph`` changed, kept across restarts.

The file (mode 0600, replaced atomically) holds only what was configured at runtime — the
enabled toggle, the backend, the Neo4j connection; the environment gives the rest. A damaged
file stops the start with ``StateFileError``, whose message names the file, the problem (with
its byte offset for bad JSON) and what to do, never with a bare parser error.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from gateway.observability.redaction import redact, register_secrets
from resolvers.records import Backend

if TYPE_CHECKING:
    from pathlib import Path

    from gateway.settings import Settings

STATE_FILE = "gateway.json"


@dataclass(frozen=True, slots=True)
class SavedState:
    """What survives a restart. The password is kept only here, never logged or returned."""

    enabled: bool = True
    backend: Backend = Backend.FILE
    neo4j_uri: str | None = None
    neo4j_user: str | None = None
    neo4j_password: str | None = None

    def __repr__(self) -> str:
        secret = "***" if self.neo4j_password else None
        uri = redact(self.neo4j_uri) if self.neo4j_uri else None  # user-info may hold a password
        return (
            f"SavedState(enabled={self.enabled}, backend={self.backend.value}, "
            f"neo4j_uri={uri!r}, neo4j_user={self.neo4j_user!r}, "
            f"neo4j_password={secret})"
        )


def read_state(settings: Settings) -> tuple[SavedState, dict[str, Any]]:
    """The environment's defaults overridden by what ``configure`` saved (returned too)."""
    defaults = SavedState(
        backend=settings.backend,
        neo4j_uri=settings.neo4j_uri,
        neo4j_user=settings.neo4j_user,
        neo4j_password=settings.neo4j_password,
    )
    path = settings.data_dir / STATE_FILE
    saved = _saved_settings(path) if path.exists() else {}
    overrides = {name: value for name, value in saved.items() if name in _STATE_FIELDS}
    if "backend" in overrides:
        overrides["backend"] = Backend(overrides["backend"])
    register_secrets(overrides.get("neo4j_password"))
    return replace(defaults, **overrides), saved


class StateFileError(Exception):
    """``gateway.json`` cannot be read; the message names the file, the problem and the fix."""


def _saved_settings(path: Path) -> dict[str, Any]:
    """What ``configure`` saved, checked field by field: a damaged file stops the start with
    a message saying where and what to do, never with a bare parser error."""
    fix = (
        "fix it, or delete it to return to the settings of the environment (it holds only "
        "what configureMemoryGraph changed: the toggle, the backend, the Neo4j connection)"
    )
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise StateFileError(f"{path} is not UTF-8 text (byte offset {exc.start}): {fix}") from None
    except json.JSONDecodeError as exc:
        raise StateFileError(
            f"{path} is not valid JSON at byte offset {exc.pos} (line {exc.lineno}, column "
            f"{exc.colno}: {exc.msg}): {fix}"
        ) from None
    if not isinstance(saved, dict):
        raise StateFileError(f"{path} must hold a JSON object, not {type(saved).__name__}: {fix}")
    for name, value in saved.items():
        expected = _STATE_TYPES.get(name)
        if expected is not None and not isinstance(value, expected):
            raise StateFileError(
                f"{path}: {name!r} must be {_STATE_TYPE_NAMES[name]}, not {type(value).__name__}: "
                f"{fix}"
            )
    backend = saved.get("backend")
    if backend is not None and backend not in {member.value for member in Backend}:
        raise StateFileError(
            f"{path}: 'backend' must be one of {sorted(m.value for m in Backend)}, not "
            f"{backend!r}: {fix}"
        )
    return saved


_STATE_FIELDS = frozenset(field.name for field in fields(SavedState))
_STATE_TYPES: dict[str, type | tuple[type, ...]] = {
    "enabled": bool,
    "backend": str,
    "neo4j_uri": (str, type(None)),
    "neo4j_user": (str, type(None)),
    "neo4j_password": (str, type(None)),
}
_STATE_TYPE_NAMES = {
    "enabled": "true or false",
    "backend": "a string",
    "neo4j_uri": "a string or null",
    "neo4j_user": "a string or null",
    "neo4j_password": "a string or null",
}


def write_state(directory: Path, saved: dict[str, Any]) -> None:
    """Write only what was configured at runtime (mode 0600, atomically)."""
    temporary = directory / (STATE_FILE + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(saved, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, directory / STATE_FILE)
