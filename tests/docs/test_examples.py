"""Every GraphQL example of README.md and docs/*.md runs, in order, as one story, against a
real server (uvicorn on a free loopback port, an empty file store): no errors, and each root
field answers a success member (or the member its ``expect:`` marker names).

A block's variables come from the answers of the blocks before it: ``$evidenceId`` is the
``evidenceId`` last answered, as a reader would copy it into GraphiQL's variables pane.
Markers: ``tests/docs/markdown.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from graphql import (
    FieldNode,
    GraphQLError,
    GraphQLInterfaceType,
    NameNode,
    OperationDefinitionNode,
    SelectionSetNode,
    parse,
    print_ast,
)

from gateway.http.app import create_app
from gateway.schema import build_schema
from gateway.settings import DEFAULT_FILE_ENGINE, Settings
from gateway.stores.sqlite.store import SqliteStore
from resolvers.records import Backend
from tests.conftest import neo4j_settings
from tests.docs.markdown import Example, MarkerError, examples
from tests.http.live import serving

if TYPE_CHECKING:
    from collections.abc import Iterator

    from resolvers.store import GraphStore

ROOT = Path(__file__).resolve().parents[2]
STORY_SECONDS = 120.0  # a bound for one example, not an expectation
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The newcomer's story, in the README's order (other blocks may come between).
STORY = [
    "observeSessionFirstMessage",
    "observeUploadFile",
    "observeExecution",
    "observeMcpSearch",
    "searchNodes",
    "declareEvidence",
    "declareClaim",
    "linkClaimsToReport",
    "getChain",
    "traceProvenance",
]


def error_types() -> frozenset[str]:
    schema = build_schema()._schema
    error = schema.type_map["Error"]
    assert isinstance(error, GraphQLInterfaceType)
    return frozenset(member.name for member in schema.get_possible_types(error))


class Story:
    """Runs examples one after the other against ``url``, carrying answered values forward."""

    def __init__(self, http: httpx.Client, url: str) -> None:
        self._http = http
        self._url = url
        self._errors = error_types()
        self.answered: dict[str, Any] = {}

    def run(self, example: Example) -> list[str]:
        """The problems of running ``example``; empty when it ran as documented."""
        try:
            document = parse(example.document)
        except GraphQLError as exc:
            return [f"{example.where}: does not parse: {exc.message}"]
        problems: list[str] = []
        for operation in document.definitions:
            if isinstance(operation, OperationDefinitionNode):
                problems += self._run_operation(example, operation)
        return problems

    def _run_operation(self, example: Example, operation: OperationDefinitionNode) -> list[str]:
        wanted = [v.variable.name.value for v in operation.variable_definitions or ()]
        unknown = [name for name in wanted if name not in self.answered]
        if unknown:
            return [f"{example.where}: no earlier example answered {unknown}"]
        query = print_ast(with_typenames(operation))
        variables = {name: self.answered[name] for name in wanted}
        response = self._http.post(self._url, json={"query": query, "variables": variables})
        body = response.json()
        if response.status_code != 200 or body.get("errors"):
            return [f"{example.where}: HTTP {response.status_code}: {body.get('errors')}"]
        self._remember(body["data"])
        return [
            f"{example.where}: {field} answered {typename}, expected {expected}"
            for field, typename in root_typenames(body["data"])
            if not self._as_documented(typename, example.expect)
            for expected in [", ".join(example.expect) or "a success member"]
        ]

    def _as_documented(self, typename: str | None, expect: tuple[str, ...]) -> bool:
        if expect:
            return typename in expect
        return typename not in self._errors

    def _remember(self, value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, str | int) and not isinstance(item, bool):
                    self.answered[key] = item
                self._remember(item)
        elif isinstance(value, list):
            for item in value:
                self._remember(item)


def with_typenames(operation: OperationDefinitionNode) -> OperationDefinitionNode:
    """``operation`` with ``__typename`` selected on every root field that has a selection."""
    typename = FieldNode(name=NameNode(value="__typename"), arguments=(), directives=())
    selections = []
    for selection in operation.selection_set.selections:
        if isinstance(selection, FieldNode) and selection.selection_set is not None:
            inner = (*selection.selection_set.selections, typename)
            selection = FieldNode(
                alias=selection.alias,
                name=selection.name,
                arguments=selection.arguments,
                directives=selection.directives,
                selection_set=SelectionSetNode(selections=inner),
            )
        selections.append(selection)
    return OperationDefinitionNode(
        operation=operation.operation,
        name=operation.name,
        variable_definitions=operation.variable_definitions,
        directives=operation.directives,
        selection_set=SelectionSetNode(selections=tuple(selections)),
    )


def root_typenames(data: dict[str, Any]) -> Iterator[tuple[str, str | None]]:
    for field, value in data.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict):
                yield field, item.get("__typename")


def runnable(paths: list[Path]) -> list[Example]:
    return [example for path in paths for example in examples(path) if example.not_run is None]


def root_fields(example: Example) -> list[str]:
    return [
        selection.name.value
        for operation in parse(example.document).definitions
        if isinstance(operation, OperationDefinitionNode)
        for selection in operation.selection_set.selections
        if isinstance(selection, FieldNode)
    ]


async def test_every_example_of_the_docs_runs_in_order_as_documented(
    store: GraphStore, tmp_path: Path
) -> None:
    backend = store.backend
    engine = "sqlite" if isinstance(store, SqliteStore) else "log"
    await store.aclose()  # emptied (Neo4j wiped); the server opens its own
    blocks = runnable(DOCS)

    problems = await asyncio.to_thread(run_story, blocks, serve_settings(backend, tmp_path, engine))

    assert len(blocks) >= len(STORY)
    assert problems == []


def serve_settings(backend: Backend, data_dir: Path, engine: str = DEFAULT_FILE_ENGINE) -> Settings:
    # The docs are checked for what they answer, not how fast: a loaded machine gets time.
    settings = Settings(
        data_dir=data_dir,
        fsync=False,
        backend=backend,
        file_engine=engine,
        query_timeout_seconds=STORY_SECONDS,
    )
    if backend is Backend.NEO4J:
        connection = neo4j_settings()
        assert connection is not None
        settings = dataclasses.replace(
            settings,
            neo4j_uri=connection["uri"],
            neo4j_user=connection["user"],
            neo4j_password=connection["password"],
        )
    return settings


def run_story(blocks: list[Example], settings: Settings) -> list[str]:
    with serving(create_app(settings)) as url, httpx.Client(timeout=STORY_SECONDS) as http:
        story = Story(http, f"{url}/graphql")
        return [problem for example in blocks for problem in story.run(example)]


def test_the_readme_tells_the_story_in_order() -> None:
    fields = [field for example in runnable(DOCS[:1]) for field in root_fields(example)]

    remaining = iter(fields)
    assert [step for step in STORY if step in remaining] == STORY, fields


def test_every_skipped_example_says_why() -> None:
    skipped = [example for path in DOCS for example in examples(path) if example.not_run]

    assert all(example.not_run for example in skipped)
    assert all(len(example.not_run or "") >= 10 for example in skipped)


@pytest.mark.parametrize(
    "comment",
    ["<!-- not-run -->", "<!-- not-run: -->", "<!-- norun: typo -->", "<!-- skip this -->"],
)
def test_a_comment_that_is_not_a_marker_is_refused(tmp_path: Path, comment: str) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"Text.\n\n{comment}\n\n```graphql\n{{ health {{ status }} }}\n```\n")

    with pytest.raises(MarkerError):
        examples(page)


def test_markers_steer_only_the_block_after_them(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- not-run: a subscription needs WebSocket -->\n```graphql\nsubscription { x }\n```\n"
        "<!-- expect: NodeNotFound -->\n```graphql\n{ a }\n```\n"
        "```graphql\n{ b }\n```\n"
    )

    found = examples(page)

    assert [(e.line, e.not_run, e.expect) for e in found] == [
        (2, "a subscription needs WebSocket", ()),
        (6, None, ("NodeNotFound",)),
        (9, None, ()),
    ]


def test_an_example_answering_an_error_member_fails_the_story(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text('```graphql\n{ node(nodeId: "nothing") { ... on Error { code } } }\n```\n')

    problems = run_story(examples(page), serve_settings(Backend.FILE, tmp_path / "data"))

    assert problems == ["page.md:1: node answered NodeNotFound, expected a success member"]
