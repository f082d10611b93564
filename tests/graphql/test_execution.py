"""``LeanExecution`` answers exactly what graphql-core's own executor answers.

The schema completes plain leaf fields, interface types and paced lists on a short path
(``gateway.schema.execution``). Every answer is compared with the same document run by
strawberry's stock execution context: the same data, in the same key order, and the same errors.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

import strawberry
from graphql import GraphQLInterfaceType, GraphQLList, GraphQLNonNull, GraphQLObjectType
from strawberry.extensions import SchemaExtension
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from gateway.schema import build_schema
from gateway.schema.context import GraphContext
from gateway.schema.execution import LeanExecution
from gateway.schema.limits import Limits
from gateway.schema.nodes import NODE_TYPES
from gateway.schema.pacing import Paced
from tests import builders as b

if TYPE_CHECKING:
    from gateway.runtime.state import Runtime


def _stock(schema: strawberry.Schema) -> strawberry.Schema:
    schema.execution_context_class = StrawberryGraphQLCoreExecutionContext
    return schema


# The document below selects every field of every node type: far beyond the default limits.
# No time budget either: a slow first read of a just-started Neo4j must not tell them apart.
ROOMY = Limits(
    max_aliases=10_000,
    max_tokens=100_000,
    max_cost=10**9,
    max_cost_read=10**9,
    query_timeout_seconds=None,
)
LEAN, STOCK = build_schema(ROOMY), _stock(build_schema(ROOMY))


def _named(type_: Any) -> Any:
    while isinstance(type_, GraphQLNonNull | GraphQLList):
        type_ = type_.of_type
    return type_


def every_node_field() -> str:
    """A selection of every field of every node type (relationships: ``__typename id label``)."""
    graphql_schema = LEAN._schema
    fragments = []
    for cls in NODE_TYPES.values():
        name = cls.__strawberry_definition__.name  # type: ignore[attr-defined]
        fields = []
        for field_name, field in graphql_schema.type_map[name].fields.items():  # type: ignore[attr-defined]
            inner = _named(field.type)
            composite = isinstance(inner, GraphQLObjectType | GraphQLInterfaceType)
            # Aliased per type: ``source`` is a String on a ToolCall and a node on Evidence.
            alias = f"{name}_{field_name}: {field_name}"
            fields.append(f"{alias} {{ __typename id label }}" if composite else alias)
        fragments.append(f"... on {name} {{ {' '.join(fields)} }}")
    return "__typename " + " ".join(fragments)


NODE = every_node_field()
DOCUMENT = f"""query($s: String!, $yes: Boolean!, $no: Boolean!) {{
  folded: subgraph(sessionId: $s) {{ __typename ... on Subgraph {{
    total truncated nodes {{ {NODE} }} edges {{ __typename type source target properties }}
    groups {{ __typename id scopeId kind count members }} }} }}
  subgraph(sessionId: $s, fold: false) {{ ... on Subgraph {{ nodes {{
    first: id again: id @include(if: $yes) hidden: label @include(if: $no) key @skip(if: $no)
    ... on Artifact {{ label version }} }} }} }}
  traceProvenance(nodeId: "fig") {{ __typename ... on ProvenanceTrace {{ broken truncated
    chain {{ hop viaEdge isTerminal reachedFrom node {{ {NODE} }} }} }} }}
  searchNodes(query: "tp53", sessionId: $s) {{ __typename ... on NodeList {{ total
    nodes {{ id label excerpt }} }} }}
  session(sessionId: $s) {{ __typename ... on Session {{ sessionId goal {{ {NODE} }}
    nodes(first: 3) {{ total nodes {{ id createdAt }} }} }} }}
  missing: node(nodeId: "Artifact:nothing#v1") {{ __typename ... on Error {{ code }} }}
}}"""


async def record_every_label(gql: Any) -> None:
    await b.first_message(gql, "s1")
    await b.upload(gql, "s1", "data.csv")
    await b.subagent(gql, "s1", "sub-1")
    await b.execution(gql, "s1", "exec-1", 10, artifacts=[b.artifact("fig")])
    await b.tool_call(gql, "s1", "subtask:mcp:inv-1", 20, papers=[b.paper("doi:10.1/X")])
    evidence = await b.evidence(gql, "s1", link="https://doi.org/10.1/x")
    await b.claim(gql, "s1", evidence_ids=[evidence["evidenceId"]], artifacts=[("fig", None)])


async def both(
    runtime: Runtime, document: str, **variables: Any
) -> tuple[strawberry.types.ExecutionResult, strawberry.types.ExecutionResult]:
    results = [
        await schema.execute(
            document, variable_values=variables, context_value=GraphContext(runtime=runtime)
        )
        for schema in (LEAN, STOCK)
    ]
    return results[0], results[1]


async def test_every_node_field_answers_as_the_stock_executor_does(
    gql: Any, runtime: Runtime
) -> None:
    await record_every_label(gql)

    lean, stock = await both(runtime, DOCUMENT, s="s1", yes=True, no=False)

    assert lean.errors is None, lean.errors
    assert stock.errors is None, stock.errors
    assert json.dumps(lean.data) == json.dumps(stock.data)  # key order included
    assert lean.data is not None
    labels = {node["__typename"] for node in lean.data["folded"]["nodes"]}
    assert len(labels) == len(NODE_TYPES)


# --- a small schema of its own: errors and extensions ------------------------------------------


ROWS: list[dict[str, Any] | None] = []


@strawberry.type
class Thing:
    name: str
    note: str | None = None


@strawberry.type
class Query:
    @strawberry.field
    def things(self) -> list[Thing]:
        return [Thing(**row) for row in ROWS if row is not None]

    @strawberry.field
    def paced(self) -> list[Thing | None]:
        return Paced(Thing(**row) if row is not None else None for row in ROWS)


def small_schema(
    rows: list[dict[str, Any] | None], extensions: list[Any] | None = None, *, lean: bool = True
) -> strawberry.Schema:
    ROWS[:] = rows
    return strawberry.Schema(
        query=Query,
        extensions=extensions or [],
        execution_context_class=LeanExecution if lean else StrawberryGraphQLCoreExecutionContext,
    )


async def answers(schema: strawberry.Schema, document: str) -> tuple[Any, list[Any]]:
    result = await schema.execute(document)
    return result.data, [(e.message, e.path) for e in result.errors or ()]


async def test_a_null_in_a_non_null_field_fails_as_it_does_in_the_stock_executor() -> None:
    rows: list[dict[str, Any] | None] = [{"name": "a"}, {"name": None, "note": "x"}]
    document = "{ things { name note } }"

    lean = await answers(small_schema(rows), document)
    stock = await answers(small_schema(rows, lean=False), document)

    assert lean == stock
    assert lean[1] == [
        ("Cannot return null for non-nullable field Thing.name.", ["things", 1, "name"])
    ]


async def test_nulls_and_errors_in_a_paced_list_answer_as_in_the_stock_executor() -> None:
    rows: list[dict[str, Any] | None] = [{"name": "a"}, None, {"name": None}, {"name": "d"}]

    for document in ("{ paced { __typename } }", "{ paced { __typename name note } }"):
        lean = await answers(small_schema(rows), document)
        stock = await answers(small_schema(rows, lean=False), document)

        assert lean == stock
        assert lean[0] is not None
        assert lean[0]["paced"][0] is not None
        assert lean[0]["paced"][1] is None


class Shout(SchemaExtension):
    """A hook on every field: nested leaves must still go through it."""

    def resolve(self, _next: Any, root: Any, info: Any, *args: Any, **kwargs: Any) -> Any:
        value = _next(root, info, *args, **kwargs)
        return value.upper() if isinstance(value, str) else value


class CountRootFields(SchemaExtension):
    RESOLVES_ROOT_FIELDS_ONLY: ClassVar[bool] = True
    calls: ClassVar[list[str]] = []

    def resolve(self, _next: Any, root: Any, info: Any, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(info.field_name)
        return _next(root, info, *args, **kwargs)


async def test_an_extension_that_acts_on_every_field_still_sees_every_field() -> None:
    rows: list[dict[str, Any] | None] = [{"name": "a", "note": "quiet"}]

    data, errors = await answers(small_schema(rows, [Shout]), "{ things { name note } }")

    assert errors == []
    assert data == {"things": [{"name": "A", "note": "QUIET"}]}


async def test_an_extension_that_acts_on_root_fields_only_is_not_called_for_nested_leaves() -> None:
    rows: list[dict[str, Any] | None] = [{"name": "a"}, {"name": "b"}]
    CountRootFields.calls.clear()

    data, errors = await answers(small_schema(rows, [CountRootFields]), "{ things { name } }")

    assert errors == []
    assert data == {"things": [{"name": "a"}, {"name": "b"}]}
    assert CountRootFields.calls == ["things"]


# --- a paced list of several classes: what is found once per class, and what is not ------------


@strawberry.interface
class Animal:
    name: str
    sound: str | None = None


@strawberry.type
class Dog(Animal):
    pass


@strawberry.type
class Cat(Animal):
    lives: int = 9


@strawberry.type
class Picky:
    name: str

    @classmethod
    def is_type_of(cls, obj: Any, _info: Any) -> bool:
        return isinstance(obj, cls) and obj.name != "reject"


class Loud(str):
    """A str of a subclass: ``String`` takes it as it is, but not by the short cut for str."""


ANIMALS: list[Any] = []
PICKY: list[Picky] = []


@strawberry.type
class Zoo:
    @strawberry.field
    def animals(self) -> list[Animal]:
        return Paced(ANIMALS)

    @strawberry.field
    def picky(self) -> list[Picky]:
        return Paced(PICKY)


def zoo(*, lean: bool) -> strawberry.Schema:
    return strawberry.Schema(
        query=Zoo,
        types=[Dog, Cat],
        execution_context_class=LeanExecution if lean else StrawberryGraphQLCoreExecutionContext,
    )


def mimic() -> Dog:
    """A Dog cast to a Cat: its class says Dog, the cast says Cat."""
    dog = Dog(name="mimic")
    dog.lives = 1  # type: ignore[attr-defined]
    return strawberry.cast(Cat, dog)


async def test_a_paced_list_of_several_classes_answers_as_in_the_stock_executor() -> None:
    ANIMALS[:] = [
        Dog(name="rex", sound="woof"),
        Cat(name="tom", sound=5),  # type: ignore[arg-type]  # an int in a String field
        Dog(name=Loud("max")),
        mimic(),
        Cat(name="kit", lives=3),
    ]
    document = "{ animals { __typename name sound ... on Cat { lives } } }"

    lean = await answers(zoo(lean=True), document)
    stock = await answers(zoo(lean=False), document)

    assert lean == stock
    assert lean[1] == []
    assert lean[0]["animals"][3] == {
        "__typename": "Cat",
        "name": "mimic",
        "sound": None,
        "lives": 1,
    }
    assert lean[0]["animals"][1]["sound"] == "5"


async def test_a_type_of_its_own_is_asked_of_every_item_of_a_paced_list() -> None:
    PICKY[:] = [Picky(name="a"), Picky(name="reject"), Picky(name="b")]
    document = "{ picky { name } }"

    lean = await answers(zoo(lean=True), document)
    stock = await answers(zoo(lean=False), document)

    assert lean == stock
    assert lean[0] is None
    assert [path for _, path in lean[1]] == [["picky", 1]]
