"""Gateway settings: a frozen dataclass built from a mapping (the only reader of the environment).

Environment variables (all optional), each named ``SCIENCE_AGENT_MEMORY_GRAPH_<name>``:

==============  ===============================  =============================
name            meaning                          default
==============  ===============================  =============================
HOST            bind address                     127.0.0.1
PORT            bind port                        17674
INTERNAL_TOKEN  bearer token granting all        (none: loopback only)
READ_TOKEN      bearer token for queries only    (none)
REVIEWER_TOKEN  queries only; on ``/mcp`` the    (none)
                reviewer's tools
BACKEND         file | neo4j (``local`` = file)  file
FILE_ENGINE     the file backend's engine:       sqlite
                sqlite (``gateway.stores.sqlite``;
                migrates a log directory on
                first start) or log
                (``gateway.stores.file``)
DATA_DIR        data directory                   ~/.science-agent/memory-graph
NEO4J_URI       Bolt URI                         bolt://127.0.0.1:7687
NEO4J_USER      Neo4j user                       neo4j
NEO4J_PASSWORD  Neo4j password                   (none)
NEO4J_TIMEOUT   seconds to connect to Neo4j, and 3
                a statement's slack beyond
                QUERY_TIMEOUT_SECONDS
LOG_LEVEL       logging level                    INFO
FSYNC           1 = fsync before acknowledging   1
LOG_FORMAT      text | json (JSON lines)         text
CORS_ORIGINS    browser origins allowed to call  (none: no cross-origin access)
                the API, comma-separated
                ``scheme://host[:port]``, or ``*``
CORS_MAX_AGE    seconds a browser may cache a    600
                preflight answer
==============  ===============================  =============================

Request limits (SPEC §8), same prefix. Body size, depth, aliases and tokens are checked before
anything runs; a query's root field still running when the time budget is spent answers
``QueryLimitExceeded`` (mutations are never cut short: a write is not abandoned halfway):

=====================  ========================================  ==========================
name                   meaning                                   default
=====================  ========================================  ==========================
MAX_DEPTH              deepest selection nesting                 12
MAX_ALIASES            aliases in one document                   30
MAX_TOKENS             lexical tokens in one document            4000
MAX_BODY_BYTES         largest HTTP request body (else 413)      4194304 (4 MiB)
QUERY_TIMEOUT_SECONDS  time budget of a query's root fields      10
INTROSPECTION          0 = refuse introspection queries          1
MAX_COST               worst-case field values of one operation  200000
                       (``gateway.schema.cost``)
MAX_COST_READ          the same for the read token               100000
HEAVY_READERS          queries over 1,000 field values running   4
                       at once (others wait; writes never do)
HEADER_TIMEOUT_SECONDS time to receive a request head, from the   10
                       connection or the previous response
                       (else closed; ``gateway.http.serving``)
BODY_TIMEOUT_SECONDS   time to receive a request body (else 408) 10
KEEP_ALIVE_SECONDS     idle keep-alive connection closed after   5
MAX_CONNECTIONS        open connections and tasks; beyond, 503   4096
MAX_HEADER_BYTES       largest incomplete request head (h11)     16384
=====================  ========================================  ==========================

Times are accepted in 1970-01-01 .. 2999-12-31 UTC (``resolvers.validate``).

A backend choice or Neo4j connection saved at runtime (``configureMemoryGraph``) in the data
directory takes precedence over these defaults on the next start.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from resolvers.records import Backend

if TYPE_CHECKING:
    from collections.abc import Mapping

PREFIX = "SCIENCE_AGENT_MEMORY_GRAPH_"
DEFAULT_PORT = 17674
DEFAULT_DATA_DIR = Path("~/.science-agent/memory-graph").expanduser()
# The embedded backend's engine when FILE_ENGINE is not set (``gateway.stores.embedded``).
DEFAULT_FILE_ENGINE = "sqlite"
# What a browser sends in ``Origin``: a scheme, a host (a name, an IPv4 or a bracketed IPv6
# address) and an optional port; lower-case, as browsers serialise it.
ORIGIN = re.compile(r"https?://(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9.-]*[a-z0-9])?)(:[0-9]{1,5})?")


class SettingsError(ValueError):
    """A configuration value is invalid; the message names the variable."""


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    # Secrets stay out of repr() so a logged or printed Settings never shows them.
    internal_token: str | None = field(default=None, repr=False)
    read_token: str | None = field(default=None, repr=False)
    reviewer_token: str | None = field(default=None, repr=False)
    backend: Backend = Backend.FILE
    file_engine: str = DEFAULT_FILE_ENGINE
    data_dir: Path = DEFAULT_DATA_DIR
    neo4j_uri: str = "bolt://127.0.0.1:7687"
    neo4j_user: str = "neo4j"
    neo4j_password: str | None = field(default=None, repr=False)
    log_level: str = "INFO"
    fsync: bool = True
    link_wait_seconds: float = 3.0
    neo4j_timeout: float = 3.0
    reconnect_seconds: float = 1.0
    max_depth: int = 12
    max_aliases: int = 30
    max_tokens: int = 4000
    max_body_bytes: int = 4 * 1024 * 1024
    query_timeout_seconds: float = 10.0
    introspection: bool = True
    max_cost: int = 200_000
    max_cost_read: int = 100_000
    heavy_readers: int = 4
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 10.0
    keep_alive_seconds: float = 5.0
    max_connections: int = 4096
    max_header_bytes: int = 16 * 1024
    log_format: str = "text"
    # "otlp" or "console" when OpenTelemetry tracing is configured (the standard OTEL_* names:
    # OTEL_EXPORTER_OTLP[_TRACES]_ENDPOINT, or OTEL_TRACES_EXPORTER=console), else None.
    otel_exporter: str | None = None
    # Origins a browser page may call the API from (CORS); credentials are never allowed, the
    # bearer token travels in the Authorization header that the preflight admits.
    cors_origins: tuple[str, ...] = ()
    cors_max_age: int = 600

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        def get(name: str) -> str | None:
            value = environ.get(PREFIX + name, "").strip()
            return value or None

        defaults = cls()
        for lesser in ("READ_TOKEN", "REVIEWER_TOKEN"):
            if get(lesser) and not get("INTERNAL_TOKEN"):
                raise SettingsError(
                    f"{PREFIX}{lesser} is set without {PREFIX}INTERNAL_TOKEN; set both "
                    "(it alone would leave mutations unauthenticated)"
                )
        return cls(
            host=get("HOST") or defaults.host,
            port=_port(get("PORT"), defaults.port),
            internal_token=get("INTERNAL_TOKEN"),
            read_token=get("READ_TOKEN"),
            reviewer_token=get("REVIEWER_TOKEN"),
            backend=_backend(get("BACKEND")),
            file_engine=_file_engine(get("FILE_ENGINE")),
            data_dir=Path(get("DATA_DIR") or defaults.data_dir).expanduser(),
            neo4j_uri=_neo4j_uri(get("NEO4J_URI"), defaults.neo4j_uri),
            neo4j_user=get("NEO4J_USER") or defaults.neo4j_user,
            neo4j_password=get("NEO4J_PASSWORD"),
            neo4j_timeout=_seconds("NEO4J_TIMEOUT", get("NEO4J_TIMEOUT"), defaults.neo4j_timeout),
            log_level=(get("LOG_LEVEL") or defaults.log_level).upper(),
            fsync=(get("FSYNC") or "1") not in {"0", "false", "no"},
            max_depth=_positive_int("MAX_DEPTH", get("MAX_DEPTH"), defaults.max_depth),
            max_aliases=_positive_int("MAX_ALIASES", get("MAX_ALIASES"), defaults.max_aliases),
            max_tokens=_positive_int("MAX_TOKENS", get("MAX_TOKENS"), defaults.max_tokens),
            max_body_bytes=_positive_int(
                "MAX_BODY_BYTES", get("MAX_BODY_BYTES"), defaults.max_body_bytes
            ),
            query_timeout_seconds=_seconds(
                "QUERY_TIMEOUT_SECONDS",
                get("QUERY_TIMEOUT_SECONDS"),
                defaults.query_timeout_seconds,
            ),
            introspection=(get("INTROSPECTION") or "1") not in {"0", "false", "no"},
            max_cost=_positive_int("MAX_COST", get("MAX_COST"), defaults.max_cost),
            max_cost_read=_positive_int(
                "MAX_COST_READ", get("MAX_COST_READ"), defaults.max_cost_read
            ),
            heavy_readers=_positive_int(
                "HEAVY_READERS", get("HEAVY_READERS"), defaults.heavy_readers
            ),
            header_timeout_seconds=_seconds(
                "HEADER_TIMEOUT_SECONDS",
                get("HEADER_TIMEOUT_SECONDS"),
                defaults.header_timeout_seconds,
            ),
            body_timeout_seconds=_seconds(
                "BODY_TIMEOUT_SECONDS", get("BODY_TIMEOUT_SECONDS"), defaults.body_timeout_seconds
            ),
            keep_alive_seconds=_seconds(
                "KEEP_ALIVE_SECONDS", get("KEEP_ALIVE_SECONDS"), defaults.keep_alive_seconds
            ),
            max_connections=_positive_int(
                "MAX_CONNECTIONS", get("MAX_CONNECTIONS"), defaults.max_connections
            ),
            max_header_bytes=_positive_int(
                "MAX_HEADER_BYTES", get("MAX_HEADER_BYTES"), defaults.max_header_bytes
            ),
            log_format=_log_format(get("LOG_FORMAT")),
            otel_exporter=_otel_exporter(environ),
            cors_origins=_origins(get("CORS_ORIGINS")),
            cors_max_age=_whole("CORS_MAX_AGE", get("CORS_MAX_AGE"), defaults.cors_max_age),
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


NEO4J_SCHEMES = frozenset({"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"})


# Far longer than any server address; the driver would otherwise take a URI of any size.
MAX_NEO4J_URI_LENGTH = 2048


def is_bolt_uri(uri: str) -> bool:
    """Whether the driver could open ``uri``: at most ``MAX_NEO4J_URI_LENGTH`` characters, a
    Neo4j scheme, a port in range and a host the resolver can encode (IDNA: no empty label,
    none over 63 characters), which it checks only when it connects."""
    if len(uri) > MAX_NEO4J_URI_LENGTH:
        return False
    try:
        parts = urlsplit(uri.strip())
        parts.port  # noqa: B018  (raises ValueError for a port out of range)
        host = parts.hostname
        if host:
            host.encode("idna")  # UnicodeError, a ValueError, as getaddrinfo would raise
    except ValueError:
        return False
    return parts.scheme.lower() in NEO4J_SCHEMES and bool(host)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _neo4j_uri(value: str | None, default: str) -> str:
    if value is None:
        return default
    if not is_bolt_uri(value):
        raise SettingsError(
            f"{PREFIX}NEO4J_URI must be a Bolt URI with a host the resolver accepts, e.g. "
            f"bolt://127.0.0.1:7687 (schemes: {', '.join(sorted(NEO4J_SCHEMES))}; at most "
            f"{MAX_NEO4J_URI_LENGTH} characters)"
        )
    return value


def _port(value: str | None, default: int) -> int:
    if value is None:
        return default
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise SettingsError(f"{PREFIX}PORT must be a port number, got {value!r}")
    return int(value)


def _positive_int(name: str, value: str | None, default: int) -> int:
    if value is None:
        return default
    if not value.isdigit() or int(value) < 1:
        raise SettingsError(f"{PREFIX}{name} must be a whole number of 1 or more, got {value!r}")
    return int(value)


def _whole(name: str, value: str | None, default: int) -> int:
    if value is None:
        return default
    if not value.isdigit():
        raise SettingsError(f"{PREFIX}{name} must be a whole number of 0 or more, got {value!r}")
    return int(value)


def _origins(value: str | None) -> tuple[str, ...]:
    """Comma-separated browser origins (``scheme://host[:port]``, as a browser sends them in
    ``Origin``), or ``*`` for any; each is checked so a typo fails at start, not in a browser."""
    origins = tuple(part.strip() for part in (value or "").split(",") if part.strip())
    for origin in origins:
        if origin != "*" and not ORIGIN.fullmatch(origin):
            raise SettingsError(
                f"{PREFIX}CORS_ORIGINS: {origin!r} is not an origin such as "
                "https://app.example.org or http://127.0.0.1:5173 (no path, no trailing /)"
            )
    return origins


def _seconds(name: str, value: str | None, default: float) -> float:
    if value is None:
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise SettingsError(f"{PREFIX}{name} must be a positive number of seconds, got {value!r}")
    return seconds


FILE_ENGINES = ("log", "sqlite")


def _file_engine(value: str | None) -> str:
    if value is None:
        return DEFAULT_FILE_ENGINE
    if value.lower() not in FILE_ENGINES:
        raise SettingsError(f"{PREFIX}FILE_ENGINE must be log or sqlite, got {value!r}")
    return value.lower()


def _backend(value: str | None) -> Backend:
    if value is None or value.lower() in {"file", "local"}:
        return Backend.FILE
    if value.lower() == "neo4j":
        return Backend.NEO4J
    raise SettingsError(f"{PREFIX}BACKEND must be file or neo4j, got {value!r}")


def _log_format(value: str | None) -> str:
    if value is None or value.lower() in {"text", "json"}:
        return (value or "text").lower()
    raise SettingsError(f"{PREFIX}LOG_FORMAT must be text or json, got {value!r}")


def _otel_exporter(environ: Mapping[str, str]) -> str | None:
    """Tracing is on only when the standard OpenTelemetry variables ask for an exporter."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return None
    if exporter == "console":
        return "console"
    endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    return "otlp" if any(environ.get(name, "").strip() for name in endpoints) else None
