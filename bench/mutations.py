"""How an event travels over HTTP: the mutation field, its input type and its input value.

``graphql_input`` turns a ``resolvers.events`` object into the variables of the mutation whose
resolver builds that same event (``gateway/schema/inputs.py`` in reverse), so the generator
writes each event once and both write paths of the benchmark send the same thing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from resolvers.events import (
    ArtifactDeclared,
    ClaimDeclared,
    ClaimsLinked,
    Event,
    EvidenceDeclared,
    ExecutionObserved,
    FirstMessageObserved,
    SubagentObserved,
    ToolCallObserved,
    UploadFileObserved,
)
from resolvers.validate import camel

if TYPE_CHECKING:
    from collections.abc import Mapping


@dataclass(frozen=True, slots=True)
class Field:
    """How one event type is sent over GraphQL."""

    name: str
    input_type: str
    success: str
    renames: Mapping[str, str] = field(default_factory=dict)

    @property
    def document(self) -> str:
        return (
            f"mutation($input: {self.input_type}!) {{ {self.name}(input: $input) "
            "{ __typename ... on Error { code message } } }"
        )


FIELDS: Mapping[type[Event], Field] = {
    UploadFileObserved: Field(
        "observeUploadFile", "ObserveUploadFileInput", "Observed", {"uploaded_at": "createdAt"}
    ),
    FirstMessageObserved: Field(
        "observeSessionFirstMessage",
        "ObserveSessionFirstMessageInput",
        "Observed",
        {"sent_at": "createdAt"},
    ),
    ExecutionObserved: Field("observeExecution", "ObserveExecutionInput", "Observed"),
    ToolCallObserved: Field("observeToolCall", "ObserveToolCallInput", "Observed"),
    SubagentObserved: Field(
        "observeSubagent", "ObserveSubagentInput", "Observed", {"started_at": "createdAt"}
    ),
    ArtifactDeclared: Field("declareArtifact", "DeclareArtifactInput", "ArtifactRegistered"),
    EvidenceDeclared: Field("declareEvidence", "DeclareEvidenceInput", "EvidenceDeclared"),
    ClaimDeclared: Field("declareClaim", "DeclareClaimInput", "ClaimDeclared"),
    ClaimsLinked: Field("linkClaimsToReport", "LinkClaimsToReportInput", "ClaimsLinked"),
}


@dataclass(frozen=True, slots=True)
class Mutation:
    """One write: the event and the session step (steps recorded so far) it belongs to."""

    event: Event
    step: int

    @property
    def field(self) -> Field:
        return FIELDS[type(self.event)]

    @property
    def variables(self) -> dict[str, Any]:
        return {"input": graphql_input(self.event, self.field.renames)}


def graphql_input(event: Event, renames: Mapping[str, str]) -> dict[str, Any]:
    """The mutation input equivalent to ``event`` (camelCase, absent values left out)."""
    return {
        renames.get(f.name, camel(f.name)): _plain(value)
        for f in dataclasses.fields(event)
        if f.name != "received_at" and (value := getattr(event, f.name)) not in (None, ())
    }


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return graphql_input(value, {})  # type: ignore[arg-type]
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value
