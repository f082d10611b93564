"""Merge rules: facts never depend on arrival order (SPEC §3.2, §3.9). Every rule, in one place.

When two events describe one node, the stored facts are chosen by the events' own times and
version numbers, with ties broken by the content itself, never by which event arrived first:

* **Execution** (its ToolCall and Code): the observation with the greatest
  ``(terminal status, finishedAt, content)`` supplies every field, so a terminal status never
  regresses, a later finish wins, and two observations with equal times pick by content. Its
  ``startedAt`` is the winner's. The step's chain position is the winner's ``finishedAt``: a
  re-observed step moves (``resolvers.steps.place_step``).
* **Search / tool call**: the same, by ``(terminal status, retrievedAt or receive time,
  content)``; ``chain_at`` follows the winner.
* **Subagent scope**: start fields (objective, type, ``startedAt``) come from the event with
  the greatest ``(startedAt, content)``, start or terminal; end fields (status, ``finishedAt``,
  summary) from the greatest terminal ``(finishedAt, content)``; a terminal status never
  regresses. Its chain position is the start time, so it moves with the start fields.
* **Paper** (one per session and link): each metadata field (title, identifier, year,
  authors, abstract, source) comes from the earliest retrieval — by ``(retrievedAt, ToolCall
  id, content)`` — that supplied a value for it; ``metadata_from`` records, per field, that
  retrieval. ``first_retrieved_at`` is the earliest retrieval, ``retrieved_at`` the latest,
  ``retrieval_count`` the number of distinct finding ToolCalls.
* **SourceFile** (re-uploads of one file id): each field comes from the latest upload — by
  ``(uploadedAt, content)``, an upload without ``uploadedAt`` older than any with one — that
  supplied it; ``fields_from`` records, per field, that upload. Size, hash and ``uploaded_at``
  thus come from one upload whenever it states them, and a media type known from an earlier
  upload is kept when the latest does not say.
* **Artifact version** (the same version mirrored twice): the record with the most fields,
  then the greatest content, supplies every field.
* **ResearchGoal**: the greatest ``(sentAt, content)`` first message supplies every field.

* **``limit 1`` picks** of a chain hop, and the producer of an artifact: the newest by
  ``newest`` — version, then the node's own time (a step's chain time, a Code's finish, a
  Paper's latest retrieval, an upload's time, an artifact version's ``produced_at``: the finish
  of the execution that mirrored it), then id — never by arrival.

"Content" is the canonical JSON of the fields compared, so the same set of events always picks
the same winner whatever their order, duplicates included. The ranks (``*_rank``) are computed
from an event's fields and from a stored node's props alike, so a node needs no record of
which event won; only the field-by-field rules (Paper, SourceFile) keep, per field, the rank
it came from.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from resolvers.records import NodeRecord

TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "timed_out", "error"})

OWN_TIME_FIELDS = ("chain_at", "finished_at", "retrieved_at", "uploaded_at", "produced_at")
"""A node's own time for ``newest``: the first of these it has."""

PAPER_METADATA = ("title", "identifier", "identifier_type", "year", "authors", "abstract", "source")


def content(fields: Mapping[str, Any], names: Iterable[str] | None = None) -> str:
    """Canonical text of ``fields`` (only ``names`` when given; absent and ``None`` alike)."""
    chosen = fields if names is None else {name: fields.get(name) for name in names}
    present = {name: value for name, value in chosen.items() if value is not None}
    return json.dumps(present, sort_keys=True, separators=(",", ":"), default=str)


def wins(new: tuple[Any, ...], stored: tuple[Any, ...] | None) -> bool:
    """Whether an observation ranked ``new`` replaces the stored one ranked ``stored``
    (``None``: nothing stored yet). Equal ranks mean equal content: nothing changes."""
    return stored is None or new > stored


def newest(node: NodeRecord) -> tuple[int, str, str]:
    """The order of ``limit 1`` picks, larger = newer: version, own time, id."""
    version = node.get("version")
    own = next((node.props[name] for name in OWN_TIME_FIELDS if name in node.props), "")
    return int(version) if isinstance(version, int) else 0, str(own), node.id


def rank_text(*parts: str, fields: Mapping[str, Any]) -> str:
    """A rank as comparable text: ``parts`` (fixed-width times, ids), then a digest of the
    content of ``fields`` as the final tie-break."""
    digest = hashlib.sha256(content(fields).encode()).hexdigest()[:16]
    return " ".join((*parts, digest))


def pick_fields(
    stored: Mapping[str, Any] | None,
    fields: Mapping[str, Any],
    rank: str,
    *,
    origins: str,
    earliest: bool = False,
) -> dict[str, Any]:
    """The fields an observation ranked ``rank`` sets, field by field: each non-empty one of
    ``fields`` whose stored value came from a lower rank (a higher one with ``earliest``), or
    is absent. The prop ``origins`` records the rank each stored field came from, so the
    outcome is the same whatever order the observations arrive in."""
    ranks: dict[str, str] = dict((stored or {}).get(origins) or {})
    changes: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None or value in ("", []):
            continue
        old = ranks.get(name)
        if old is None or (rank < old if earliest else rank > old):
            ranks[name] = rank
            changes[name] = value
    if changes:
        changes[origins] = ranks
    return changes


def paper_metadata(
    stored: Mapping[str, Any] | None, metadata: Mapping[str, Any], at: str, call: str
) -> dict[str, Any]:
    """The metadata fields (and ``metadata_from``) a retrieval at ``at`` by the ToolCall
    ``call`` sets: each field it supplies that no earlier retrieval supplied."""
    chosen = {name: metadata.get(name) for name in PAPER_METADATA}
    rank = rank_text(at, call, fields=chosen)
    return pick_fields(stored, chosen, rank, origins="metadata_from", earliest=True)


# --- ranks of one label's observations (larger wins) ------------------------------------


def observation_rank(fields: Mapping[str, Any]) -> tuple[bool, str, str]:
    """An execution's or tool call's observation: terminal status, then its finish (for a
    search, its retrieval) time, then content."""
    terminal = fields.get("status") in TERMINAL_STATUSES
    return terminal, str(fields.get("finished_at", "")), content(fields, _RANKED)


_RANKED = (
    "tool",
    "tool_type",
    "tool_name",
    "source",
    "language",
    "code_hash",
    "exit_code",
    "status",
    "started_at",
    "finished_at",
    "stdout_hash",
    "stderr_hash",
    "env_hash",
    "turn_id",
    "result_count",
    "retrieved_at",
)


def goal_rank(fields: Mapping[str, Any]) -> tuple[str, str]:
    """A first message: its ``sentAt`` (none is oldest), then content."""
    names = ("core_objective", "domain", "topic_scope", "sent_at")
    return str(fields.get("sent_at") or ""), content(fields, names)


_ARTIFACT_FIELDS = (
    "produced_at",
    "path",
    "media_type",
    "logical_name",
    "project_id",
    "turn_id",
    "content_hash",
)


def artifact_rank(fields: Mapping[str, Any]) -> tuple[int, str]:
    """A mirror of one artifact version: how many fields it has, then content."""
    present = sum(fields.get(name) is not None for name in _ARTIFACT_FIELDS)
    return present, content(fields, _ARTIFACT_FIELDS)


_START_FIELDS = ("objective", "task_type", "subagent_type", "started_at", "turn_id")
_END_FIELDS = ("status", "finished_at", "summary", "failure_reason")


def start_rank(fields: Mapping[str, Any]) -> tuple[str, str]:
    """The start fields of a subagent event: ``startedAt``, then content."""
    return str(fields.get("started_at", "")), content(fields, _START_FIELDS)


def end_rank(fields: Mapping[str, Any]) -> tuple[str, str]:
    """The end fields of a terminal subagent event: ``finishedAt``, then content."""
    return str(fields.get("finished_at", "")), content(fields, _END_FIELDS)
