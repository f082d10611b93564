"""Gateway settings: a frozen dataclass built from a mapping (the only reader of the environment).

Environment variables (all optional), each named ``SCIENCE_AGENT_MEMORY_GRAPH_<name>``:

==============  ===============================  =============================
name            meaning                          default
==============  ===============================  =============================
HOST            bind address                     127.0.0.1
PORT            bind port                        17674
INTERNAL_TOKEN  bearer token granting all        (none: loopback only)
READ_TOKEN      bearer token for queries only    (none)
BACKEND         file | neo4j (``local`` = file)  file
DATA_DIR        data directory                   ~/.science-agent/memory-graph
NEO4J_URI       Bolt URI                         bolt://127.0.0.1:7687
NEO4J_USER      Neo4j user                       neo4j
NEO4J_PASSWORD  Neo4j password                   (none)
LOG_LEVEL       logging level                    INFO
FSYNC           1 = fsync before acknowledging   1
==============  ===============================  =============================

A backend choice or Neo4j connection saved at runtime (``configureMemoryGraph``) in the data
directory takes precedence over these defaults on the next start.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from resolvers.records import Backend

if TYPE_CHECKING:
    from collections.abc import Mapping

PREFIX = "SCIENCE_AGENT_MEMORY_GRAPH_"
DEFAULT_PORT = 17674
DEFAULT_DATA_DIR = Path("~/.science-agent/memory-graph").expanduser()


class SettingsError(ValueError):
    """A configuration value is invalid; the message names the variable."""


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    # Secrets stay out of repr() so a logged or printed Settings never shows them.
    internal_token: str | None = field(default=None, repr=False)
    read_token: str | None = field(default=None, repr=False)
    backend: Backend = Backend.FILE
    data_dir: Path = DEFAULT_DATA_DIR
    neo4j_uri: str = "bolt://127.0.0.1:7687"
    neo4j_user: str = "neo4j"
    neo4j_password: str | None = field(default=None, repr=False)
    log_level: str = "INFO"
    fsync: bool = True
    link_wait_seconds: float = 3.0
    neo4j_timeout: float = 3.0
    reconnect_seconds: float = 2.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        def get(name: str) -> str | None:
            value = environ.get(PREFIX + name, "").strip()
            return value or None

        defaults = cls()
        if get("READ_TOKEN") and not get("INTERNAL_TOKEN"):
            raise SettingsError(
                f"{PREFIX}READ_TOKEN is set without {PREFIX}INTERNAL_TOKEN; set both "
                "(a read token alone would leave mutations unauthenticated)"
            )
        return cls(
            host=get("HOST") or defaults.host,
            port=_port(get("PORT"), defaults.port),
            internal_token=get("INTERNAL_TOKEN"),
            read_token=get("READ_TOKEN"),
            backend=_backend(get("BACKEND")),
            data_dir=Path(get("DATA_DIR") or defaults.data_dir).expanduser(),
            neo4j_uri=get("NEO4J_URI") or defaults.neo4j_uri,
            neo4j_user=get("NEO4J_USER") or defaults.neo4j_user,
            neo4j_password=get("NEO4J_PASSWORD"),
            log_level=(get("LOG_LEVEL") or defaults.log_level).upper(),
            fsync=(get("FSYNC") or "1") not in {"0", "false", "no"},
        )

    @property
    def loopback_only(self) -> bool:
        """True when no token is configured: the server may then only bind to loopback."""
        return self.internal_token is None

    def check_bind(self) -> None:
        """Refuse a non-loopback bind without a token."""
        if self.loopback_only and not is_loopback(self.host):
            raise SettingsError(
                f"{PREFIX}HOST={self.host} is not a loopback address and no "
                f"{PREFIX}INTERNAL_TOKEN is set; refusing to serve without authentication"
            )


def load_settings() -> Settings:
    """Settings from this process's environment."""
    return Settings.from_env(os.environ)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _port(value: str | None, default: int) -> int:
    if value is None:
        return default
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise SettingsError(f"{PREFIX}PORT must be a port number, got {value!r}")
    return int(value)


def _backend(value: str | None) -> Backend:
    if value is None or value.lower() in {"file", "local"}:
        return Backend.FILE
    if value.lower() == "neo4j":
        return Backend.NEO4J
    raise SettingsError(f"{PREFIX}BACKEND must be file or neo4j, got {value!r}")
