"""Hostile values in every field of every mutation input (SPEC §8).

Each example takes a valid input of one mutation, replaces ONE field (found by walking the
input type, nested objects and the first item of lists included) with a hostile value — huge
or empty strings, invalid Unicode, escapes, ids with path separators and control characters,
wrong enum values, negative and enormous numbers, empty and huge lists, wrong types, deep
nesting — and runs it against a seeded session. The answer must be a success, a GraphQL
validation error, ``DeclareRejected``, or ``InvalidInput`` naming exactly that field; anything
but a success must leave the store as it was, to the byte; nothing is written outside the data
directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLScalarType,
    get_nullable_type,
)
from hypothesis import example, given
from hypothesis import strategies as st

from gateway.schema import build_schema
from resolvers.validate import MAX_ID_LENGTH, MAX_LIST_LENGTH, MAX_TEXT_LENGTH, camel
from tests import builders as b
from tests.conftest import GraphQLClient
from tests.fuzz.conftest import FUZZ, Sandbox, execute, fresh_runtime, tree, unexpected

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

SCHEMA = build_schema()
TYPES = SCHEMA._schema.type_map
PAPER = "https://doi.org/10.1/a"
PDF = b.file_id("s1", "paper.pdf")
CSV = b.file_id("s1", "data.csv")
Path_ = tuple[str | int, ...]

# --- hostile values ---------------------------------------------------------------------------

# Big values are drawn as placeholders (short reprs in hypothesis' reports), expanded by `big`.
BIG = {
    "<huge text>": "x" * (MAX_TEXT_LENGTH + 1),
    "<long id>": "i" * (MAX_ID_LENGTH + 1),
    "<huge list>": ["x"] * (MAX_LIST_LENGTH + 1),
}
TEXT = st.one_of(
    st.sampled_from(
        [
            "",
            " ",
            "\t",
            "../",
            "../../etc/passwd",
            "/",
            "/etc/passwd",
            "\\",
            "..\\..\\x",
            "a/b",
            "C:\\x",
            "\x00",
            "a\x00b",
            "\n",
            "\r\n",
            "\x1b[31m",
            "\x7f",
            "\u202e",
            "\u2028",
            "\ufeff",
            "\ud800",
            "a\udfffb",
            "\\u0000",
            "\\ud800",
            "%00",
            "%2e%2e%2f",
            '"',
            "'; MATCH (n) DETACH DELETE n //",
            "${x}",
            "😀",
            "\uff46\uff55\uff4c\uff4c",
            "null",
            "NaN",
            "<long id>",
            "<huge text>",
        ]
    ),
    st.text(st.characters(codec=None), max_size=40),
)
INT = st.one_of(
    st.sampled_from(
        [-1, 0, 1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**53, 2**53 + 1, 2**63, -(2**63)]
    ),
    st.integers(),
)
TIME = st.sampled_from(
    [
        "",
        "now",
        "2026-13-40T00:00:00Z",
        "2026-01-01T00:00:00",
        "9999-12-31T23:59:59Z",
        "0001-01-01T00:00:00+00:00",
        "2026-01-01T00:00:00+25:00",
        "1e9",
        "2026-01-01",
    ]
) | st.datetimes().map(lambda moment: moment.isoformat() + "Z")
DEEP: Any = "leaf"
for _ in range(200):
    DEEP = {"a": [DEEP]}
WRONG_TYPE = st.sampled_from([None, True, 3.5, {}, [], {"a": 1}, DEEP, [[["x"]]]])


def values_for(type_: GraphQLInputType) -> st.SearchStrategy[Any]:
    """Hostile values for a field of GraphQL type ``type_``."""
    named = get_nullable_type(type_)
    if isinstance(named, GraphQLList):
        item = values_for(named.of_type)
        return st.one_of(
            st.just([]),
            st.lists(item, min_size=1, max_size=3),
            st.just("<huge list>"),
            WRONG_TYPE,
        )
    if isinstance(named, GraphQLEnumType):
        return st.sampled_from([*named.values, "", "nope", "neo4j", "high"]) | WRONG_TYPE
    if isinstance(named, GraphQLInputObjectType):
        return st.just({}) | WRONG_TYPE
    assert isinstance(named, GraphQLScalarType)
    scalars = {"String": TEXT, "ID": TEXT, "Int": INT, "Boolean": st.booleans(), "DateTime": TIME}
    return scalars.get(named.name, TEXT | TIME) | WRONG_TYPE


# --- the mutations and their valid inputs -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mutation:
    field: str
    input_type: str  # the type of the `input` argument
    valid: dict[str, Any]

    @property
    def document(self) -> str:
        return (
            f"mutation($input: {self.input_type}!) {{ {self.field}(input: $input) {{ __typename "
            "... on InvalidInput { field } ... on Error { code message } } }"
        )


EXECUTION = {
    "executionId": "e2",
    "sessionId": "s1",
    "turnId": "t1",
    "tool": "run_python",
    "codeHash": "h2",
    "status": "succeeded",
    "startedAt": b.at(20),
    "finishedAt": b.at(21),
    "language": "python",
    "exitCode": 0,
    "toolName": "python",
    "producedArtifacts": [
        {
            "artifactId": "fig",
            "version": 2,
            "path": "fig.png",
            "mediaType": "image/png",
            "logicalName": "figure",
            "projectId": "p1",
            "turnId": "t1",
            "contentHash": "c",
            "inputArtifactVersions": [{"artifactId": "report", "version": 1}],
        }
    ],
    "stdoutHash": "o",
    "stderrHash": "e",
    "envHash": "v",
    "inputSourceFiles": [PDF],
}
MUTATIONS = [
    Mutation(
        "observeUploadFile",
        "ObserveUploadFileInput",
        {
            "sessionId": "s1",
            "fileId": b.file_id("s1", "a.csv"),
            "name": "a.csv",
            "path": "a.csv",
            "createdAt": b.at(1),
            "mediaType": "text/csv",
            "size": 10,
            "contentHash": "h",
        },
    ),
    Mutation(
        "observeSessionFirstMessage",
        "ObserveSessionFirstMessageInput",
        {
            "sessionId": "s2",
            "goalId": "goal:session:s2",
            "coreObjective": "TP53",
            "createdAt": b.at(0),
            "domain": "oncology",
            "topicScope": ["tp53"],
        },
    ),
    Mutation("observeExecution", "ObserveExecutionInput", EXECUTION),
    Mutation(
        "observeMcpSearch",
        "ObserveMcpSearchInput",
        {
            "invocationId": "q2",
            "sessionId": "s1",
            "turnId": "t1",
            "source": "europe-pmc",
            "retrievedAt": b.at(30),
            "records": [
                {
                    "url": "doi:10.1/B",
                    "title": "B",
                    "identifier": "10.1/b",
                    "identifierType": "doi",
                    "year": "2024",
                    "authors": ["A. B"],
                    "abstract": "x",
                    "source": "pmc",
                }
            ],
        },
    ),
    Mutation(
        "observeToolCall",
        "ObserveToolCallInput",
        {
            "taskId": "subtask:web:2",
            "sessionId": "s1",
            "toolName": "web_fetch",
            "toolType": "fetch",
            "turnId": "t1",
            "source": "web",
            "status": "completed",
            "resultCount": 1,
            "retrievedAt": b.at(40),
            "products": [{"link": "https://x.org/c", "title": "C", "authors": ["C. D"]}],
        },
    ),
    Mutation(
        "observeSubagent",
        "ObserveSubagentInput",
        {
            "subagentId": "sa1",
            "sessionId": "s1",
            "turnId": "t1",
            "objective": "read",
            "createdAt": b.at(50),
            "status": "completed",
            "subagentType": "literature",
            "finishedAt": b.at(55),
            "summary": "done",
        },
    ),
    Mutation(
        "declareArtifact",
        "DeclareArtifactInput",
        {
            "sessionId": "s1",
            "executionId": "e1",
            "artifact": {"artifactId": "table", "version": 1, "path": "t.csv"},
        },
    ),
    Mutation(
        "declareEvidence",
        "DeclareEvidenceInput",
        {
            "sessionId": "s1",
            "content": "TP53 is mutated",
            "locator": "p. 4",
            "evidenceType": "quote",
            "confidence": "high",
            "strength": "strong",
            "sourcePaperLink": PAPER,
        },
    ),
    Mutation(
        "declareClaim",
        "DeclareClaimInput",
        {
            "sessionId": "s1",
            "content": "TP53 matters",
            "claimType": "finding",
            "confidence": "high",
            "locator": "§1",
            "citesEvidence": [{"alias": "e0", "id": "EVIDENCE"}],
            "citesArtifacts": [{"alias": "a0", "artifactId": "report", "version": 1}],
            "citesSourceFiles": [{"alias": "f0", "id": CSV}],
            "artifactId": "report",
            "artifactVersion": 1,
        },
    ),
    Mutation(
        "linkClaimsToReport",
        "LinkClaimsToReportInput",
        {"sessionId": "s1", "artifactId": "report", "artifactVersion": 1, "claimIds": ["CLAIM"]},
    ),
    Mutation(
        "recordMemory",
        "MemoryRecordInput",
        {
            "finding": {
                "project": "p",
                "tags": ["t"],
                "date": "2026-01-01",
                "sessionId": "s1",
                "finding": "f",
                "significance": "s",
                "gene": "TP53",
                "disease": "x",
                "sources": ["pmid:1"],
            }
        },
    ),
    Mutation(
        "recordMemory",
        "MemoryRecordInput",
        {"ideation": {"project": "p", "direction": "d", "feasibility": "HIGH", "reason": "r"}},
    ),
]


def attack_points(
    type_: GraphQLInputObjectType, valid: dict[str, Any], at: Path_ = ()
) -> list[tuple[Path_, GraphQLInputType]]:
    """Every field of ``type_`` (and of nested objects and first list items ``valid`` has)."""
    points: list[tuple[Path_, GraphQLInputType]] = []
    for name, field in type_.fields.items():
        points.append(((*at, name), field.type))
        named = get_nullable_type(field.type)
        item = get_nullable_type(named.of_type) if isinstance(named, GraphQLList) else None
        value = valid.get(name)
        if isinstance(item, GraphQLInputObjectType) and value:
            points += attack_points(item, value[0], (*at, name, 0))
        elif isinstance(named, GraphQLInputObjectType) and isinstance(value, dict):
            points += attack_points(named, value, (*at, name))
    return points


POINTS = [
    (mutation, path, type_)
    for mutation in MUTATIONS
    for path, type_ in attack_points(TYPES[mutation.input_type], mutation.valid)  # type: ignore[arg-type]
]


@st.composite
def attacks(draw: st.DrawFn) -> tuple[Mutation, Path_, Any]:
    mutation, path, type_ = draw(st.sampled_from(POINTS))
    return mutation, path, draw(values_for(type_))


# --- running one attack -----------------------------------------------------------------------


async def seed(gql: GraphQLClient) -> dict[str, str]:
    """A session with a goal, a report, a found paper, uploads, evidence and a claim."""
    await b.first_message(gql, "s1")
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("report")])
    await b.tool_call(gql, "s1", "subtask:mcp:q1", papers=[b.paper(PAPER)])
    await b.upload(gql, "s1", "paper.pdf", "application/pdf")
    await b.upload(gql, "s1", "data.csv")
    evidence = (await b.evidence(gql, "s1", link=PAPER))["evidenceId"]
    claim = (await b.claim(gql, "s1", evidence_ids=[evidence]))["claimId"]
    return {"EVIDENCE": evidence, "CLAIM": claim}


def filled(value: Any, ids: dict[str, Any]) -> Any:
    """``value`` with placeholders filled in: seeded ids (``EVIDENCE``, ``CLAIM``), ``BIG``."""
    if isinstance(value, dict):
        return {key: filled(item, ids) for key, item in value.items()}
    if isinstance(value, list):
        return [filled(item, ids) for item in value]
    return ids.get(value, value) if isinstance(value, str) else value


def with_field(value: Any, path: Path_, new: Any) -> Any:
    """A copy of ``value`` with the field at ``path`` set to ``new``."""
    head, *rest = path
    copy = list(value) if isinstance(value, list) else dict(value)
    copy[head] = with_field(copy[head], tuple(rest), new) if rest else new  # type: ignore[index]
    return copy


def field_name(mutation: Mutation, path: Path_) -> str:
    """How an ``InvalidInput`` must name the field at ``path``."""
    text = "".join(f"[{part}]" if isinstance(part, int) else f".{camel(part)}" for part in path)
    if mutation.field == "recordMemory":
        return text[1:]  # the memory names its fields by record kind: `finding.project`
    return "sessionId" if path == ("sessionId",) else f"input{text}"


async def state(sandbox: Sandbox) -> tuple[Any, ...]:
    """Everything stored: the graph's records, its log's size, the research memory."""
    captured = sandbox.store.capture()
    nodes = {node.id: node for node in captured.nodes}
    edges = {edge.identity: edge for edge in captured.edges}
    memory = await sandbox.runtime.memory.all_records()
    count = await sandbox.store.count_nodes()
    return count, nodes, edges, captured.seq, sandbox.store.stored_bytes(), memory


SUCCESSES = {
    "Observed",
    "ArtifactRegistered",
    "EvidenceDeclared",
    "ClaimDeclared",
    "ClaimsLinked",
    "MemoryRecorded",
}


# A rule between two fields names one of them, whichever was made hostile: a start later than
# the finish is refused as ``finishedAt`` (resolvers.validate._check_order).
ORDERED_BEFORE_FINISH = ("startedAt", "createdAt")


def related(name: str) -> set[str]:
    """The fields a refusal of a hostile ``name`` may name."""
    prefix, _, last = name.rpartition(".")
    # A goal or upload key names its session: a new sessionId may contradict it.
    if name == "sessionId":
        return {name, "input.goalId", "input.fileId"}
    if last in ORDERED_BEFORE_FINISH:
        return {name, f"{prefix}.finishedAt" if prefix else "finishedAt"}
    return {name}


async def attack(mutation: Mutation, path: Path_, value: Any, directory: Path) -> None:
    async with fresh_runtime(directory / "data") as sandbox:
        ids = await seed(GraphQLClient(SCHEMA, sandbox.runtime))
        before = await state(sandbox)

        hostile = with_field(filled(mutation.valid, ids), path, filled(value, BIG))
        result = await execute(SCHEMA, sandbox.runtime, mutation.document, input=hostile)
        after = await state(sandbox)

    assert unexpected(result) == []
    answer = (result.data or {}).get(mutation.field) or {}
    kind = answer.get("__typename")
    if kind == "InvalidInput":  # the field itself, or a part of it (an item, a nested field)
        expected = field_name(mutation, path)
        assert answer["field"] in related(expected) or answer["field"].startswith(
            (f"{expected}[", f"{expected}.")
        ), answer
    if result.errors or kind in {"InvalidInput", "DeclareRejected", "KeyOwnedByOtherSession"}:
        assert after == before, "a refused mutation wrote something"
    else:
        assert kind in SUCCESSES, answer
    assert {entry.split("/")[0] for entry in tree(directory)} <= {"data"}


@FUZZ
@given(hostile=attacks())
@example(hostile=(MUTATIONS[0], ("fileId",), "../../outside"))
# Found by this test, then fixed: text that cannot be stored as UTF-8 (it reached the log and
# failed there, after the change was applied in memory); errors naming a derived field.
@example(hostile=(MUTATIONS[1], ("coreObjective",), "\ud800"))
@example(hostile=(MUTATIONS[10], ("finding", "gene"), "a\udfffb"))
@example(hostile=(MUTATIONS[3], ("records", 0, "title"), "\x00"))
@example(hostile=(MUTATIONS[3], ("source",), "\x1f"))
@example(hostile=(MUTATIONS[3], ("invocationId",), "\n"))
@example(hostile=(MUTATIONS[2], ("producedArtifacts", 0, "version"), 2**53 + 1))
@example(hostile=(MUTATIONS[0], ("sessionId",), "../"))  # the upload key then names another session
async def test_a_hostile_field_is_refused_by_name_or_accepted_and_nothing_else_is_written(
    hostile: tuple[Mutation, Path_, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    mutation, path, value = hostile
    await attack(mutation, path, value, tmp_path_factory.mktemp("attack"))


async def test_every_valid_input_succeeds_as_is(tmp_path: Path) -> None:
    answers: dict[int, Any] = {}
    for index, mutation in enumerate(MUTATIONS):
        async with fresh_runtime(tmp_path / str(index)) as sandbox:
            ids = await seed(GraphQLClient(SCHEMA, sandbox.runtime))
            valid = filled(mutation.valid, ids)
            result = await execute(SCHEMA, sandbox.runtime, mutation.document, input=valid)
        answers[index] = (result.data or {}).get(mutation.field, {}).get("__typename")

    assert answers == {
        index: "Observed"
        if mutation.field.startswith("observe")
        else SUCCESSES_BY_FIELD[mutation.field]
        for index, mutation in enumerate(MUTATIONS)
    }


SUCCESSES_BY_FIELD = {
    "declareArtifact": "ArtifactRegistered",
    "declareEvidence": "EvidenceDeclared",
    "declareClaim": "ClaimDeclared",
    "linkClaimsToReport": "ClaimsLinked",
    "recordMemory": "MemoryRecorded",
}


# --- arguments outside input objects, and the runtime settings --------------------------------

CLEANUPS = {
    "cleanupSession": ("mutation($v: String!) { cleanupSession(sessionId: $v) {", "sessionId"),
    "cleanupProject": ("mutation($v: String!) { cleanupProject(projectId: $v) {", "projectId"),
    "cleanupProjectSessions": (
        'mutation($v: [String!]) { cleanupProject(projectId: "p9", sessionIds: $v) {',
        "sessionIds",
    ),
}
RESULT = "__typename ... on InvalidInput { field } ... on Error { code } } }"


@FUZZ
@given(
    name=st.sampled_from(sorted(CLEANUPS)),
    value=TEXT | st.lists(TEXT, max_size=3) | WRONG_TYPE,
)
async def test_hostile_cleanup_arguments_are_refused_by_name_or_change_nothing_else(
    name: str, value: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    head, argument = CLEANUPS[name]
    directory = tmp_path_factory.mktemp("cleanup")
    async with fresh_runtime(directory / "data") as sandbox:
        await seed(GraphQLClient(SCHEMA, sandbox.runtime))
        before = await state(sandbox)

        result = await execute(SCHEMA, sandbox.runtime, head + RESULT, v=filled(value, BIG))
        after = await state(sandbox)

    assert unexpected(result) == []
    (answer,) = (result.data or {"": {}}).values()
    if answer.get("__typename") == "InvalidInput":
        assert answer["field"].startswith(argument)
    if result.errors or answer.get("__typename") == "InvalidInput":
        assert after == before, "a refused cleanup wrote something"
    else:
        assert answer["__typename"] == "Cleanup"


CONFIGURE = """mutation($input: MemoryGraphSettingsInput!) { configureMemoryGraph(input: $input) {
  __typename ... on InvalidInput { field } ... on Error { code } } }"""
# Valid URIs only ever point at a closed loopback port: no connection leaves the machine.
URIS = TEXT | st.sampled_from(
    [
        "bolt://127.0.0.1:9",
        "neo4j://127.0.0.1:9",
        "http://127.0.0.1:9",
        "bolt://127.0.0.1:99999",
        # Hosts the resolver refuses to encode (an empty label, one over 63 characters).
        "bolt://a..b:7687",
        "bolt://.a:7687",
        "neo4j://" + "a" * 64 + ":7687",
        "bolt://" + "\u00e9" * 70 + ":7687",
        "bolt://127.0.0.1:9/" + "x" * 5000,
    ]
)


@FUZZ
@given(
    uri=URIS | st.none(),
    user=TEXT | st.none(),
    password=TEXT | st.none(),
    backend=st.sampled_from(["FILE", "NEO4J", "neo4j", "", None]),
    enabled=st.sampled_from([True, False, None, "yes"]),
)
async def test_hostile_runtime_settings_are_refused_by_name_and_not_saved(
    uri: str | None,
    user: str | None,
    password: str | None,
    backend: str | None,
    enabled: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    directory = tmp_path_factory.mktemp("configure")
    settings = {
        "neo4jUri": uri,
        "neo4jUser": user,
        "neo4jPassword": password,
        "backend": backend,
        "enabled": enabled,
    }
    async with fresh_runtime(directory / "data") as sandbox:
        result = await execute(SCHEMA, sandbox.runtime, CONFIGURE, input=filled(settings, BIG))

    assert unexpected(result) == []
    answer = (result.data or {}).get("configureMemoryGraph") or {}
    if answer.get("__typename") == "InvalidInput":
        assert answer["field"] in {"input.neo4jUri", "input.neo4jUser", "input.neo4jPassword"}
    if result.errors or answer.get("__typename") == "InvalidInput":
        assert not (directory / "data" / "gateway.json").exists()
    else:
        assert answer["__typename"] == "Health"
    assert {entry.split("/")[0] for entry in tree(directory)} <= {"data"}
