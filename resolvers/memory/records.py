"""The four memory record types, their validation, identity and stored form.

* Records are frozen: ``prepare_record`` returns the normalised copy that is stored (text
  stripped, empty optional text dropped, tags de-duplicated) with its id, or raises
  ``InvalidInputError`` naming the field as the GraphQL input names it (``finding.significance``).
* Identity: a record's ``id`` is a UUID-5 over its normalised content (type, date, project, sorted
  tags and the per-type fields; not the session), so recording or importing the same record twice
  stores it once. An id already present (read from a file) is kept.
* Stored form (``record_to_dict`` / ``record_from_dict``): the established ``findings.jsonl``
  object — ``type`` (finding|ideation|strategy|pitfall), ``date`` (YYYY-MM-DD), ``tags``,
  ``project``, the per-type fields in snake_case, optional ``session_id`` and ``id``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeAlias, TypeVar

from resolvers.errors import InvalidInputError
from resolvers.validate import MAX_ID_LENGTH, check_characters, check_unicode

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

MAX_TEXT = 20_000
MAX_TAGS = 50
MAX_TAG = 100
MAX_LIST = 200
MAX_SESSION_ID = MAX_ID_LENGTH  # any session id the graph takes

_ID_NAMESPACE = uuid.UUID("6f1c1f0e-5b7a-4d0e-9a43-3c6a2a8f7e10")


class MemoryRecordType(StrEnum):
    FINDING = "finding"
    IDEATION = "ideation"
    STRATEGY = "strategy"
    PITFALL = "pitfall"


class Feasibility(StrEnum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"
    DEAD_END = "DEAD_END"

    @classmethod
    def parse(cls, value: str) -> Feasibility:
        """Accepts any case and ``dead-end`` / ``dead end`` spellings."""
        name = "_".join(value.strip().upper().replace("-", " ").split())
        try:
            return cls[name]
        except KeyError:
            allowed = ", ".join(member.value for member in cls)
            raise InvalidInputError("ideation.feasibility", f"must be one of {allowed}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRecordBase:
    """The fields every record has. ``id`` is empty until ``prepare_record`` assigns it."""

    type: ClassVar[MemoryRecordType]

    date: dt.date
    project: str
    tags: tuple[str, ...] = ()
    session_id: str | None = None
    id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class FindingRecord(MemoryRecordBase):
    type: ClassVar[MemoryRecordType] = MemoryRecordType.FINDING

    finding: str
    significance: str
    gene: str | None = None
    disease: str | None = None
    sources: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class IdeationRecord(MemoryRecordBase):
    type: ClassVar[MemoryRecordType] = MemoryRecordType.IDEATION

    direction: str
    feasibility: Feasibility
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyRecord(MemoryRecordBase):
    type: ClassVar[MemoryRecordType] = MemoryRecordType.STRATEGY

    task: str
    strategy: str
    outcome: str
    tools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PitfallRecord(MemoryRecordBase):
    type: ClassVar[MemoryRecordType] = MemoryRecordType.PITFALL

    context: str
    issue: str
    fix: str


MemoryRecord: TypeAlias = FindingRecord | IdeationRecord | StrategyRecord | PitfallRecord

RECORD_CLASSES: Mapping[MemoryRecordType, type[MemoryRecord]] = {
    MemoryRecordType.FINDING: FindingRecord,
    MemoryRecordType.IDEATION: IdeationRecord,
    MemoryRecordType.STRATEGY: StrategyRecord,
    MemoryRecordType.PITFALL: PitfallRecord,
}

# Per-type fields. Their names are single words, so snake_case and camelCase agree.
REQUIRED_TEXT: Mapping[MemoryRecordType, tuple[str, ...]] = {
    MemoryRecordType.FINDING: ("finding", "significance"),
    MemoryRecordType.IDEATION: ("direction", "reason"),
    MemoryRecordType.STRATEGY: ("task", "strategy", "outcome"),
    MemoryRecordType.PITFALL: ("context", "issue", "fix"),
}
OPTIONAL_TEXT: Mapping[MemoryRecordType, tuple[str, ...]] = {
    MemoryRecordType.FINDING: ("gene", "disease"),
}
TEXT_LISTS: Mapping[MemoryRecordType, tuple[str, ...]] = {
    MemoryRecordType.FINDING: ("sources",),
    MemoryRecordType.STRATEGY: ("tools",),
}


AnyRecord = TypeVar("AnyRecord", bound=MemoryRecord)


def prepare_record(record: AnyRecord, *, new: bool = True) -> AnyRecord:
    """The normalised, validated record with its id; raises ``InvalidInputError``. A ``new``
    record (recorded, imported) is also refused a date outside ``EARLIEST_DATE`` .. tomorrow
    (UTC: a record is dated when it was learnt; a future date would stay "the most recent"
    for ever) and control characters in its text (a terminal would run them as escapes when
    ``recall`` prints it); a record the store already holds is read as it was written."""
    kind = record.type.value
    changes: dict[str, Any] = {
        "project": _required(record.project, f"{kind}.project"),
        "tags": _tags(record.tags, f"{kind}.tags"),
        "session_id": _optional(record.session_id, f"{kind}.sessionId", MAX_SESSION_ID),
    }
    for name in REQUIRED_TEXT[record.type]:
        changes[name] = _required(getattr(record, name), f"{kind}.{name}")
    for name in OPTIONAL_TEXT.get(record.type, ()):
        changes[name] = _optional(getattr(record, name), f"{kind}.{name}", MAX_TEXT)
    for name in TEXT_LISTS.get(record.type, ()):
        changes[name] = _text_list(getattr(record, name), f"{kind}.{name}")
    prepared = dataclasses.replace(record, **changes)
    if new:
        _check_new(prepared)
    return prepared if prepared.id else dataclasses.replace(prepared, id=record_id(prepared))


EARLIEST_DATE: Final = dt.date(1970, 1, 1)


def _check_new(record: MemoryRecord) -> None:
    kind = record.type.value
    latest = dt.datetime.now(dt.UTC).date() + dt.timedelta(days=1)
    if not EARLIEST_DATE <= record.date <= latest:
        raise InvalidInputError(
            "date", f"must be between {EARLIEST_DATE} and tomorrow ({latest}, UTC)"
        )
    lines = {"project": [record.project], "tags": list(record.tags)}
    if record.session_id is not None:
        lines["sessionId"] = [record.session_id]
    texts: dict[str, list[str]] = {}
    for name in (*REQUIRED_TEXT[record.type], *OPTIONAL_TEXT.get(record.type, ())):
        texts[name] = [getattr(record, name) or ""]
    for name in TEXT_LISTS.get(record.type, ()):
        texts[name] = list(getattr(record, name))
    for single_line, fields in ((True, lines), (False, texts)):
        for name, values in fields.items():
            for value in values:
                check_characters(value, f"{kind}.{name}", single_line=single_line)
                if single_line and "\t" in value:
                    raise InvalidInputError(f"{kind}.{name}", "contains control characters")


def record_id(record: MemoryRecord) -> str:
    """The deterministic id of a (normalised) record's content."""
    content = record_to_dict(record)
    content.pop("id", None)
    content.pop("session_id", None)
    content["tags"] = sorted(content["tags"])
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return str(uuid.uuid5(_ID_NAMESPACE, canonical))


def record_text(record: MemoryRecord) -> str:
    """Everything searchable in a record: its per-type text, tags and project."""
    parts: list[str] = [record.project, *record.tags]
    for name in (*REQUIRED_TEXT[record.type], *OPTIONAL_TEXT.get(record.type, ())):
        parts.append(getattr(record, name) or "")
    for name in TEXT_LISTS.get(record.type, ()):
        parts.extend(getattr(record, name))
    return " ".join(part for part in parts if part)


def headline(record: MemoryRecord) -> str:
    """A one-line human summary of a record."""
    match record:
        case FindingRecord():
            subject = " / ".join(part for part in (record.gene, record.disease) if part)
            prefix = f"{subject}: " if subject else ""
            return f"{prefix}{record.finding} — {record.significance}"
        case IdeationRecord():
            return f"{record.direction} [{record.feasibility.value}] — {record.reason}"
        case StrategyRecord():
            return f"{record.task}: {record.strategy} → {record.outcome}"
        case PitfallRecord():
            return f"{record.context}: {record.issue} → fix: {record.fix}"


def record_to_dict(record: MemoryRecord) -> dict[str, Any]:
    """The stored JSON object of a record (absent optional values are left out)."""
    data: dict[str, Any] = {
        "type": record.type.value,
        "date": record.date.isoformat(),
        "tags": list(record.tags),
        "project": record.project,
    }
    for name in (*REQUIRED_TEXT[record.type], *OPTIONAL_TEXT.get(record.type, ())):
        value = getattr(record, name)
        if value is not None:
            data[name] = value
    for name in TEXT_LISTS.get(record.type, ()):
        data[name] = list(getattr(record, name))
    if isinstance(record, IdeationRecord):
        data["feasibility"] = record.feasibility.value
    if record.session_id is not None:
        data["session_id"] = record.session_id
    if record.id:
        data["id"] = record.id
    return data


def record_from_dict(data: Mapping[str, Any]) -> MemoryRecord:
    """The record a stored JSON object describes (not yet validated: see ``prepare_record``).

    Tolerant of the variations found in existing files: feasibility in any case or spelt
    ``dead-end``, tags as a comma-separated string, a full ISO timestamp as the date.
    """
    kind = _record_type(data.get("type"))
    fields: dict[str, Any] = {
        "date": _date(data.get("date")),
        "project": _str(data, "project", kind, default=""),
        "tags": _str_list(data, "tags", kind),
        "session_id": _str(data, "session_id", kind, default=None),
        "id": _str(data, "id", kind, default=""),
    }
    for name in REQUIRED_TEXT[kind]:
        fields[name] = _str(data, name, kind, default="")
    for name in OPTIONAL_TEXT.get(kind, ()):
        fields[name] = _str(data, name, kind, default=None)
    for name in TEXT_LISTS.get(kind, ()):
        fields[name] = _str_list(data, name, kind)
    if kind is MemoryRecordType.IDEATION:
        fields["feasibility"] = Feasibility.parse(_str(data, "feasibility", kind, default=""))
    return RECORD_CLASSES[kind](**fields)


def newest_first(records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """Records by date, newest first; of one date, the last stored first (recency order)."""
    # sorted() is stable, also with reverse=True: reversing first puts later writes first.
    return sorted(reversed(records), key=lambda record: record.date, reverse=True)


# --- validation helpers -------------------------------------------------------------------


def _required(value: str, field: str) -> str:
    text = value.strip()
    if not text:
        raise InvalidInputError(field, "must not be empty")
    return _bounded(text, field, MAX_TEXT)


def _optional(value: str | None, field: str, limit: int) -> str | None:
    text = (value or "").strip()
    return _bounded(text, field, limit) if text else None


def _bounded(text: str, field: str, limit: int) -> str:
    if len(text) > limit:
        raise InvalidInputError(field, f"must be at most {limit} characters")
    check_unicode(text, field)
    return text


def _tags(values: tuple[str, ...], field: str) -> tuple[str, ...]:
    tags = tuple(dict.fromkeys(_bounded(tag.strip(), field, MAX_TAG) for tag in values))
    tags = tuple(tag for tag in tags if tag)
    if len(tags) > MAX_TAGS:
        raise InvalidInputError(field, f"at most {MAX_TAGS} tags")
    return tags


def _text_list(values: tuple[str, ...], field: str) -> tuple[str, ...]:
    items = tuple(_bounded(item.strip(), field, MAX_TEXT) for item in values)
    items = tuple(item for item in items if item)
    if len(items) > MAX_LIST:
        raise InvalidInputError(field, f"at most {MAX_LIST} items")
    return items


# --- stored-form helpers ------------------------------------------------------------------


def _record_type(value: Any) -> MemoryRecordType:
    try:
        return MemoryRecordType(str(value).strip().lower())
    except ValueError:
        allowed = ", ".join(member.value for member in MemoryRecordType)
        raise InvalidInputError("type", f"must be one of {allowed}, got {value!r}") from None


def _date(value: Any) -> dt.date:
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
        try:
            return dt.datetime.fromisoformat(value.strip()).date()
        except ValueError:
            pass
    raise InvalidInputError("date", f"must be a YYYY-MM-DD date, got {value!r}")


def _str(data: Mapping[str, Any], name: str, kind: MemoryRecordType, *, default: Any) -> Any:
    value = data.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise InvalidInputError(f"{kind.value}.{name}", "must be a string")
    return value


def _str_list(data: Mapping[str, Any], name: str, kind: MemoryRecordType) -> tuple[str, ...]:
    value = data.get(name)
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split(","))
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidInputError(f"{kind.value}.{name}", "must be a list of strings")
    return tuple(value)
