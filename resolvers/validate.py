"""Input validation shared by every write: lengths, identifiers, required text, numbers, times.

Times (every ``…At`` argument) must lie in ``EARLIEST_TIME .. LATEST_TIME`` (UTC, inclusive):
1970-01-01T00:00:00Z to 2999-12-31T23:59:59.999999Z. Stored as fixed-width text, so text order
stays time order (a year before 1000 would be written with three digits and sort wrong). A time
must name its zone (``Z`` or ``±hh:mm``): ISO-8601 reads a zone-less time as local time, which
the server cannot know, and SPEC §3.5 keeps every time in UTC. A step cannot finish before it
started.

Lengths: identifiers (``…Id``, ``…Hash``, aliases, versions, and the ids listed in
``inputSourceFiles``) at most ``MAX_ID_LENGTH``; a ``year`` at most ``MAX_YEAR_LENGTH``; names of
kinds (status, tool, language, media type, confidence…) at most ``MAX_LABEL_LENGTH``; names,
paths, links, titles, identifiers, locators and each author or topic at most
``MAX_NAME_LENGTH``, and a link also at most ``MAX_LINK_BYTES`` in UTF-8; prose (objectives,
abstracts, contents, summaries) at most ``MAX_TEXT_LENGTH``. A list's text items may never be
empty.

Numbers are finite: a ``NaN`` or infinity anywhere inside a value (``resolvers.values``) is
refused, as JSON has none to answer with.

Links (a Paper ``link``, ``sourcePaperLink``) are clickable in the playground and explorer: one
whose scheme runs code or reads the viewer's machine (``javascript:``, ``data:``…) is refused.

Errors name the offending field as the GraphQL client wrote it (``input.executionId``,
``input.producedArtifacts[0].version``), so an agent can fix exactly that.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from resolvers.errors import InvalidInputError
from resolvers.links import normalize_link
from resolvers.records import Label, split_artifact_key
from resolvers.steps import CHILD_SEPARATOR, SCOPE_PREFIX
from resolvers.values import check_finite

if TYPE_CHECKING:
    from resolvers.events import ToolCallObserved

MAX_ID_LENGTH = 512
MAX_YEAR_LENGTH = 32
MAX_LABEL_LENGTH = 256
MAX_NAME_LENGTH = 4_096
# A Paper's id holds its link and is indexed: Neo4j indexes a text of at most ~8,160 bytes, and
# the id (``Paper:<sessionId>|<link>``) must fit whatever the characters.
MAX_LINK_BYTES = 4_096
MAX_TEXT_LENGTH = 200_000
# Every item of a write's list is a few nodes and edges of one Neo4j transaction, whose memory the
# server bounds (a retried 4,000-artifact execution ran out of it on a 1 GB heap).
MAX_LIST_LENGTH = 1_000
EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_TIME = datetime(2999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Separates a Paper id's session from its link (``Paper:<sessionId>|<link>``, SPEC §2.1).
SESSION_SEPARATOR = "|"
KEY_SEPARATOR = ":"
# A surrogate code point in a str is half of a UTF-16 pair: it cannot be stored as UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")
_ID_FIELDS = re.compile(r"(^|_)(id|ids|hash|alias|version)$|^input_source_files$")
_LIMITS: dict[str, int] = {
    "year": MAX_YEAR_LENGTH,
    **dict.fromkeys(
        (
            "status",
            "tool",
            "language",
            "tool_type",
            "tool_name",
            "identifier_type",
            "source",
            "task_type",
            "subagent_type",
            "media_type",
            "domain",
            "evidence_type",
            "confidence",
            "strength",
            "claim_type",
        ),
        MAX_LABEL_LENGTH,
    ),
    **dict.fromkeys(
        (
            "name",
            "path",
            "link",
            "source_paper_link",
            "title",
            "identifier",
            "logical_name",
            "locator",
            "authors",
            "topic_scope",
        ),
        MAX_NAME_LENGTH,
    ),
}
_LINK_FIELDS = frozenset({"link", "source_paper_link"})
# Schemes a browser would run or resolve on the viewer's machine when the link is clicked.
_UNSAFE_SCHEME = re.compile(r"^(javascript|vbscript|data|file|blob|filesystem):", re.IGNORECASE)
_BLANKS = re.compile(r"[\s\x00-\x1f]+")

# Fields that may never be empty (whitespace counts as empty).
REQUIRED: frozenset[str] = frozenset(
    {
        "session_id",
        "file_id",
        "goal_id",
        "core_objective",
        "execution_id",
        "tool",
        "code_hash",
        "status",
        "task_id",
        "invocation_id",
        "tool_name",
        "tool_type",
        "subagent_id",
        "objective",
        "artifact_id",
        "content",
        "alias",
        "id",
        "link",
    }
)
# Lists that must name at least one item.
_NON_EMPTY_LISTS = frozenset({"claim_ids"})
_POSITIVE = frozenset({"version", "artifact_version"})
_NON_NEGATIVE = frozenset({"size", "result_count"})


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def validate_event(event: Any, prefix: str = "input") -> None:
    """Raise ``InvalidInputError`` for the first field of ``event`` that breaks a rule."""
    # An event field that its GraphQL input spells differently (``createdAt`` → ``started_at``).
    names: dict[str, str] = getattr(type(event), "input_names", {})
    for field in dataclasses.fields(event):
        if field.name == "received_at":
            continue
        name = names.get(field.name) or camel(field.name)
        path = "sessionId" if field.name == "session_id" else f"{prefix}.{name}"
        _check(field.name, getattr(event, field.name), path)
    _check_order(event, names, prefix)
    _check_own_session(event, names, prefix)


# Keys whose form names a session (SPEC §2): a write may create one only under its own, so no
# session can take another's goal or upload key before it is written (that session's own
# writes would then be refused as another session's).
_SESSION_KEYS = {"goal_id": "goal:session:", "file_id": "source_file:session:"}


def names_other_session(name: str, value: str, session_id: str) -> bool:
    """Whether the key ``value`` of the field ``name`` (``goal_id``, ``file_id``) has the form
    that names a session (``goal:session:<id>``, ``source_file:session:<id>:<path>``) and names
    another one than ``session_id``."""
    head = _SESSION_KEYS.get(name)
    if head is None or not value.startswith(head):
        return False
    rest = value[len(head) :]
    own = rest == session_id if name == "goal_id" else rest.startswith(session_id + ":")
    return not own


# What an ``executionId`` may not begin with: ``subtask:<executionId>`` would be another step's.
_OTHER_STEPS = ("subagent:", "mcp:")
# Ids that end a node's key, which a lookup by key reads as a version when it ends in
# ``#v<digits>`` (a goal's and an upload's keys end in a session id or a path: not theirs);
# ids that are a whole key, which a lookup reads as a global id when it begins with a label, or
# as a tool call's when it begins ``subtask:``; a subagent's, inside its steps' keys.
_SUBAGENT_IDS = frozenset({"subagent_id", "parent_subagent_id"})
_LOOSE_KEYS = frozenset({"execution_id", "artifact_id", "goal_id", "file_id"})
_KEY_IDS = _SUBAGENT_IDS | {"execution_id", "artifact_id", "task_id", "invocation_id"}
_GLOBAL_ID_HEADS = tuple(f"{label.value}:" for label in Label)
STEP_PREFIX = "subtask:"
# Fields whose value is (the start of) a new node's key: a goal's or an upload's key form there
# would make a lookup of that goal's or upload's key find the new node.
_NEW_KEYS = frozenset({"task_id", "execution_id", "artifact_id"})


def check_key_form(name: str, value: str, path: str) -> None:
    """Refuse an id whose key a lookup would read as another kind of node's (SPEC §2.1), so
    that one key names one kind of node: an id ending in a version suffix
    (``<artifactId>#v<n>`` names version n of an artifact); an ``executionId``,
    ``artifactId``, ``goalId`` or ``fileId`` of a global id's form (``<Label>:…``) or of a
    tool call's key (``subtask:…``); a ``taskId`` not of a tool call's key form, or of a
    subagent's; a ``goalId`` or ``fileId`` of the other's form; an ``executionId`` whose tool
    call's key would be another kind of step's; a subagent id holding a step's separator
    (``:exec:``); and a new node's key of the form of a goal's or an upload's key.
    ``import-graph`` applies the same rules to the keys of the nodes these ids name
    (``resolvers.integrity``)."""
    if name in _KEY_IDS and split_artifact_key(value)[1] is not None:
        raise InvalidInputError(
            path, "must not end in #v<digits>: `<artifactId>#v<n>` names version n of an artifact"
        )
    if name in _LOOSE_KEYS and value.startswith(_GLOBAL_ID_HEADS):
        raise InvalidInputError(
            path, "must not begin with a label and a colon (`<Label>:…` is a node's global id)"
        )
    if name in _LOOSE_KEYS and value.startswith(STEP_PREFIX):
        raise InvalidInputError(path, f"must not begin with {STEP_PREFIX}: a tool call's key")
    other = [head for key, head in _SESSION_KEYS.items() if key != name]
    if name in _SESSION_KEYS and value.startswith(tuple(other)):
        raise InvalidInputError(path, f"must not take the form of another kind's key ({other[0]}…)")
    if name in _SUBAGENT_IDS and CHILD_SEPARATOR in value:
        raise InvalidInputError(
            path,
            f"must not contain {CHILD_SEPARATOR!r}: {SCOPE_PREFIX}<a>{CHILD_SEPARATOR}<b> names "
            "step b of subagent a",
        )
    if name == "task_id" and value.startswith(SCOPE_PREFIX):
        # A subagent's scope and steps are named by the gateway from the subagent's id.
        raise InvalidInputError(
            path,
            f"must not take the form of a subagent's key ({SCOPE_PREFIX}…): the steps of a "
            "subagent are named from parentSubagentId",
        )
    if name == "execution_id" and value.startswith(_OTHER_STEPS):
        raise InvalidInputError(
            path,
            "must not begin with subagent: or mcp: (its tool call's key, subtask:<executionId>, "
            "would be a subagent's or an MCP search's)",
        )
    if name in _NEW_KEYS and value.startswith(tuple(_SESSION_KEYS.values())):
        forms = " or ".join(f"{head}…" for head in _SESSION_KEYS.values())
        raise InvalidInputError(
            path, f"must not take the form of a goal's or an upload's key ({forms})"
        )
    if name == "task_id" and not value.startswith(STEP_PREFIX):
        raise InvalidInputError(
            path, f"must begin with {STEP_PREFIX} (a tool call's key: {STEP_PREFIX}<scheme>:<id>)"
        )


def _check_own_session(event: Any, names: dict[str, str], prefix: str) -> None:
    session_id = getattr(event, "session_id", None)
    if not isinstance(session_id, str):
        return
    for name, head in _SESSION_KEYS.items():
        value = getattr(event, name, None)
        if isinstance(value, str) and names_other_session(name, value, session_id):
            form = head + "<sessionId>" + (":<path>" if name == "file_id" else "")
            raise InvalidInputError(
                f"{prefix}.{names.get(name) or camel(name)}",
                f"names another session: a key of the form {form} takes this event's sessionId",
            )


def _check_order(event: Any, names: dict[str, str], prefix: str) -> None:
    started, finished = getattr(event, "started_at", None), getattr(event, "finished_at", None)
    if isinstance(started, datetime) and isinstance(finished, datetime) and finished < started:
        start = names.get("started_at") or "startedAt"
        raise InvalidInputError(f"{prefix}.finishedAt", f"must not be before {start}")


def _check(name: str, value: Any, path: str) -> None:
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, datetime):
        check_time(value, path)
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        validate_event(value, path)
    elif isinstance(value, str):
        check_text(name, value, path)
    elif isinstance(value, int):
        _check_number(name, value, path)
    elif isinstance(value, float | Mapping):
        check_finite(value, path)
    elif isinstance(value, tuple | list):
        if len(value) > MAX_LIST_LENGTH:
            raise InvalidInputError(path, f"at most {MAX_LIST_LENGTH} items")
        if name in _NON_EMPTY_LISTS and not value:
            raise InvalidInputError(path, "must not be empty")
        for index, item in enumerate(value):
            if isinstance(item, str) and not item.strip():
                raise InvalidInputError(f"{path}[{index}]", "must not be empty")
            _check(name, item, f"{path}[{index}]")


def check_text(name: str, value: str, path: str) -> None:
    identifier = bool(_ID_FIELDS.search(name))
    limit = MAX_ID_LENGTH if identifier else _LIMITS.get(name, MAX_TEXT_LENGTH)
    if name in REQUIRED and not value.strip():
        raise InvalidInputError(path, "must not be empty")
    if len(value) > limit:
        raise InvalidInputError(path, f"at most {limit} characters")
    if identifier and value != value.strip():
        # A key is matched exactly: one that ends in a space is not found by one that does not.
        raise InvalidInputError(path, "must not begin or end with whitespace")
    check_key_form(name, value, path)
    if name == "session_id" and SESSION_SEPARATOR in value:
        raise InvalidInputError(path, f"must not contain {SESSION_SEPARATOR!r} (Paper ids use it)")
    if name == "session_id" and KEY_SEPARATOR in value:
        # ``source_file:session:<sessionId>:<path>`` would not say where the session ends: session
        # "a" with path "b:c" and session "a:b" with path "c" would name one file.
        raise InvalidInputError(path, f"must not contain {KEY_SEPARATOR!r} (file ids use it)")
    check_characters(value, path, single_line=identifier)
    if name in _LINK_FIELDS and len(value.encode()) > MAX_LINK_BYTES:
        raise InvalidInputError(path, f"at most {MAX_LINK_BYTES} bytes in UTF-8")
    if name in _LINK_FIELDS and len(normalize_link(value).encode()) > MAX_LINK_BYTES:
        # Normalising escapes spaces and non-ASCII (one byte may become three): the stored form,
        # which the Paper's id holds, must fit too.
        raise InvalidInputError(path, f"at most {MAX_LINK_BYTES} bytes in UTF-8 once normalised")
    if name in _LINK_FIELDS and _UNSAFE_SCHEME.match(_BLANKS.sub("", value)):
        raise InvalidInputError(path, "must not use a scheme that runs code or reads local files")


def check_characters(value: str, path: str, *, single_line: bool = False) -> None:
    """Refuse text that is not valid Unicode or holds C0 or C1 control characters (tab,
    newline and carriage return are allowed unless ``single_line``)."""
    check_unicode(value, path)
    if _CONTROL.search(value) or (single_line and ("\n" in value or "\r" in value)):
        raise InvalidInputError(path, "contains control characters")


def check_unicode(value: str, path: str) -> None:
    """Refuse text that cannot be stored as UTF-8 (a lone surrogate, e.g. from a JSON escape)."""
    if _SURROGATE.search(value):
        raise InvalidInputError(path, "is not valid Unicode (a lone surrogate)")


def check_time(value: datetime, path: str) -> None:
    """Refuse a time without a zone, or outside ``EARLIEST_TIME .. LATEST_TIME``."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(path, "must name its time zone (Z or ±hh:mm)")
    # The naive year first: converting a time near datetime's own limits to UTC can overflow.
    in_range = (
        EARLIEST_TIME.year - 1 <= value.year <= LATEST_TIME.year + 1
        and EARLIEST_TIME <= value <= LATEST_TIME
    )
    if not in_range:
        raise InvalidInputError(
            path, f"must be between {EARLIEST_TIME:%Y-%m-%d} and {LATEST_TIME:%Y-%m-%d} (UTC)"
        )


def _check_number(name: str, value: int, path: str) -> None:
    if name in _POSITIVE and value < 1:
        raise InvalidInputError(path, "must be 1 or more")
    if name in _NON_NEGATIVE and value < 0:
        raise InvalidInputError(path, "must not be negative")
    if abs(value) > 2**53:
        raise InvalidInputError(path, "out of range")


@dataclass(frozen=True, slots=True)
class RejectedRecord:
    """One record of a batch left out of the write: its ``index`` in the batch, the ``field``
    at fault (as the client wrote it) and why."""

    index: int
    field: str
    message: str


def accept_products(
    event: ToolCallObserved, *, prefix: str = "input.products", link_field: str = "link"
) -> tuple[ToolCallObserved, tuple[RejectedRecord, ...]]:
    """SPEC §3.10, batches accept what is valid: the search without its invalid records (a
    field breaking a rule, or a link that identifies nothing) and the records left out.

    The search itself (its task id, times, status) is validated whole, as any event: a bad
    field there is ``InvalidInput`` for the whole mutation. Runs at intake, before the event
    is applied or journalled, so a replay applies exactly what was accepted."""
    kept: list[Any] = []
    rejected: list[RejectedRecord] = []
    for index, product in enumerate(event.products):
        path = f"{prefix}[{index}]"
        try:
            check_text("link", product.link, f"{path}.{link_field}")
            validate_event(product, path)
            if not normalize_link(product.link):
                raise InvalidInputError(f"{path}.{link_field}", "identifies nothing")
        except InvalidInputError as exc:
            rejected.append(RejectedRecord(index, exc.field or path, exc.reason))
        else:
            kept.append(product)
    return dataclasses.replace(event, products=tuple(kept)), tuple(rejected)


def check_first(first: int | None, maximum: int, default: int, field: str = "first") -> int:
    """A page size: ``default`` when absent, else within ``1..maximum``."""
    if first is None:
        return default
    if not 1 <= first <= maximum:
        raise InvalidInputError(field, f"must be between 1 and {maximum}")
    return first
