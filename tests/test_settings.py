"""Settings from a mapping (never the process environment)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.settings import PREFIX, Settings, SettingsError
from resolvers.records import Backend


def from_env(**variables: str) -> Settings:
    return Settings.from_env({PREFIX + name: value for name, value in variables.items()})


def test_an_empty_environment_gives_the_defaults() -> None:
    settings = Settings.from_env({})

    assert settings == Settings()
    assert (settings.host, settings.port) == ("127.0.0.1", 17674)
    assert settings.backend is Backend.FILE
    assert settings.data_dir == Path.home() / ".science-agent" / "memory-graph"
    assert (settings.internal_token, settings.read_token, settings.neo4j_password) == (None,) * 3
    assert (settings.log_level, settings.fsync) == ("INFO", True)


def test_every_variable_is_read() -> None:
    settings = from_env(
        HOST="0.0.0.0",
        PORT="8080",
        INTERNAL_TOKEN="internal",
        READ_TOKEN="read",
        REVIEWER_TOKEN="review",
        BACKEND="neo4j",
        DATA_DIR="/srv/memory",
        NEO4J_URI="bolt://db:7687",
        NEO4J_USER="scientist",
        NEO4J_PASSWORD="secret",
        LOG_LEVEL="debug",
        FSYNC="0",
    )

    assert settings == Settings(
        host="0.0.0.0",
        port=8080,
        internal_token="internal",
        read_token="read",
        reviewer_token="review",
        backend=Backend.NEO4J,
        data_dir=Path("/srv/memory"),
        neo4j_uri="bolt://db:7687",
        neo4j_user="scientist",
        neo4j_password="secret",
        log_level="DEBUG",
        fsync=False,
    )


def test_blank_values_count_as_unset() -> None:
    settings = from_env(HOST="  ", INTERNAL_TOKEN="", PORT=" ")

    assert (settings.host, settings.internal_token, settings.port) == ("127.0.0.1", None, 17674)


def test_data_dir_expands_the_home_directory() -> None:
    assert from_env(DATA_DIR="~/graph").data_dir == Path.home() / "graph"


@pytest.mark.parametrize("value", ["local", "LOCAL", "file", "File"])
def test_local_and_file_select_the_file_backend(value: str) -> None:
    assert from_env(BACKEND=value).backend is Backend.FILE


@pytest.mark.parametrize("value", ["http", "-1", "0", "65536", "80.5"])
def test_a_bad_port_names_the_variable(value: str) -> None:
    with pytest.raises(SettingsError, match=f"{PREFIX}PORT"):
        from_env(PORT=value)


BAD_NEO4J_URIS = [
    "bolt://a..b:7687",
    "bolt://" + "a" * 64 + ":7687",
    "http://127.0.0.1:7687",
    "bolt://127.0.0.1:7687/" + "x" * 3000,
]


@pytest.mark.parametrize("value", BAD_NEO4J_URIS)
def test_a_neo4j_uri_the_driver_cannot_open_names_the_variable(value: str) -> None:
    with pytest.raises(SettingsError, match=f"{PREFIX}NEO4J_URI"):
        from_env(NEO4J_URI=value)


@pytest.mark.parametrize(
    "value", ["bolt://127.0.0.1:7687", "neo4j+s://db.example.org", "bolt://[::1]:7687"]
)
def test_a_neo4j_uri_is_read(value: str) -> None:
    assert from_env(NEO4J_URI=value).neo4j_uri == value


def test_a_bad_backend_names_the_variable() -> None:
    with pytest.raises(SettingsError, match=f"{PREFIX}BACKEND .*'sqlite'"):
        from_env(BACKEND="sqlite")


@pytest.mark.parametrize(("value", "engine"), [("log", "log"), ("SQLite", "sqlite")])
def test_the_file_engine_is_read(value: str, engine: str) -> None:
    assert from_env(FILE_ENGINE=value).file_engine == engine


def test_the_default_file_engine_is_sqlite() -> None:
    assert from_env().file_engine == "sqlite"
    assert from_env(FILE_ENGINE="  ").file_engine == "sqlite"
    assert Settings().file_engine == "sqlite"


def test_a_bad_file_engine_names_the_variable() -> None:
    with pytest.raises(SettingsError, match=f"{PREFIX}FILE_ENGINE .*'lmdb'"):
        from_env(FILE_ENGINE="lmdb")


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.org"])
def test_check_bind_refuses_a_non_loopback_host_without_a_token(host: str) -> None:
    with pytest.raises(SettingsError, match=f"{PREFIX}HOST.*{PREFIX}INTERNAL_TOKEN"):
        Settings(host=host).check_bind()


@pytest.mark.parametrize("host", ["0.0.0.0", "example.org"])
def test_check_bind_accepts_a_non_loopback_host_with_a_token(host: str) -> None:
    Settings(host=host, internal_token="internal").check_bind()


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_check_bind_accepts_loopback_without_a_token(host: str) -> None:
    Settings(host=host).check_bind()


def test_secrets_stay_out_of_the_repr() -> None:
    settings = Settings(internal_token="tok-int", read_token="tok-read", neo4j_password="pw-neo")

    text = repr(settings)

    assert "tok-int" not in text
    assert "tok-read" not in text
    assert "pw-neo" not in text


@pytest.mark.parametrize("name", ["READ_TOKEN", "REVIEWER_TOKEN"])
def test_a_lesser_token_without_an_internal_token_is_refused(name: str) -> None:
    environ = {f"SCIENCE_AGENT_MEMORY_GRAPH_{name}": "lesser-secret"}

    with pytest.raises(SettingsError, match="INTERNAL_TOKEN"):
        Settings.from_env(environ)


def test_the_limits_default_to_values_the_playground_fits_in() -> None:
    settings = Settings.from_env({})

    assert (settings.max_depth, settings.max_aliases, settings.max_tokens) == (12, 30, 4000)
    assert settings.max_body_bytes == 4 * 1024 * 1024
    assert (settings.query_timeout_seconds, settings.introspection) == (10.0, True)


def test_every_limit_is_read() -> None:
    settings = from_env(
        MAX_DEPTH="5",
        MAX_ALIASES="6",
        MAX_TOKENS="700",
        MAX_BODY_BYTES="8000",
        QUERY_TIMEOUT_SECONDS="2.5",
        INTROSPECTION="0",
        NEO4J_TIMEOUT="1.5",
    )

    assert (settings.max_depth, settings.max_aliases, settings.max_tokens) == (5, 6, 700)
    assert (settings.max_body_bytes, settings.query_timeout_seconds) == (8000, 2.5)
    assert settings.introspection is False
    assert settings.neo4j_timeout == 1.5


@pytest.mark.parametrize("name", ["MAX_DEPTH", "MAX_ALIASES", "MAX_TOKENS", "MAX_BODY_BYTES"])
@pytest.mark.parametrize("value", ["0", "-3", "1.5", "many"])
def test_a_limit_must_be_a_whole_number_of_1_or_more(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=f"{PREFIX}{name} .*{value!r}"):
        from_env(**{name: value})


@pytest.mark.parametrize("name", ["QUERY_TIMEOUT_SECONDS", "NEO4J_TIMEOUT"])
@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_a_timeout_must_be_a_positive_number_of_seconds(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=f"{PREFIX}{name}"):
        from_env(**{name: value})


def test_every_isolation_setting_is_read() -> None:
    settings = from_env(
        MAX_COST="900",
        MAX_COST_READ="300",
        HEAVY_READERS="2",
        HEADER_TIMEOUT_SECONDS="1.5",
        BODY_TIMEOUT_SECONDS="2.5",
        KEEP_ALIVE_SECONDS="3",
        MAX_CONNECTIONS="50",
        MAX_HEADER_BYTES="4096",
    )

    assert (settings.max_cost, settings.max_cost_read, settings.heavy_readers) == (900, 300, 2)
    assert (settings.header_timeout_seconds, settings.body_timeout_seconds) == (1.5, 2.5)
    assert settings.keep_alive_seconds == 3.0
    assert (settings.max_connections, settings.max_header_bytes) == (50, 4096)


@pytest.mark.parametrize(
    "name", ["MAX_COST", "MAX_COST_READ", "HEAVY_READERS", "MAX_CONNECTIONS", "MAX_HEADER_BYTES"]
)
def test_an_isolation_limit_must_be_a_whole_number(name: str) -> None:
    with pytest.raises(SettingsError, match=f"{PREFIX}{name}"):
        from_env(**{name: "0"})


@pytest.mark.parametrize(
    "name", ["HEADER_TIMEOUT_SECONDS", "BODY_TIMEOUT_SECONDS", "KEEP_ALIVE_SECONDS"]
)
def test_a_connection_timeout_must_be_positive(name: str) -> None:
    with pytest.raises(SettingsError, match=f"{PREFIX}{name}"):
        from_env(**{name: "-1"})


def test_cors_origins_are_a_comma_separated_list_of_origins() -> None:
    settings = from_env(
        CORS_ORIGINS=" https://app.example.org, http://127.0.0.1:5173 ,", CORS_MAX_AGE="60"
    )

    assert settings.cors_origins == ("https://app.example.org", "http://127.0.0.1:5173")
    assert settings.cors_max_age == 60
    assert Settings.from_env({}).cors_origins == ()


@pytest.mark.parametrize(
    "origin", ["https://app.example.org/", "app.example.org", "ftp://x.org", "https://x.org/path"]
)
def test_a_cors_origin_that_a_browser_never_sends_is_refused(origin: str) -> None:
    with pytest.raises(SettingsError, match="CORS_ORIGINS"):
        from_env(CORS_ORIGINS=origin)


def test_any_origin_may_be_allowed_explicitly() -> None:
    assert from_env(CORS_ORIGINS="*").cors_origins == ("*",)
