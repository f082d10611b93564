"""The schema explains itself to a frontend developer: every enum value and argument has a
description (what GraphiQL's docs pane and generated clients show)."""

from __future__ import annotations

from graphql import GraphQLEnumType, GraphQLObjectType, GraphQLSchema

from gateway.schema import build_schema


def graphql_schema() -> GraphQLSchema:
    return build_schema()._schema


def test_every_enum_value_has_a_description() -> None:
    schema = graphql_schema()

    undescribed = [
        f"{type_.name}.{name}"
        for type_ in schema.type_map.values()
        if isinstance(type_, GraphQLEnumType) and not type_.name.startswith(("__", "link__"))
        for name, value in type_.values.items()
        if not (value.description or "").strip()
    ]

    assert undescribed == []


def test_every_argument_has_a_description() -> None:
    schema = graphql_schema()

    undescribed = [
        f"{type_.name}.{field_name}({arg_name})"
        for type_ in schema.type_map.values()
        if isinstance(type_, GraphQLObjectType) and not type_.name.startswith("_")
        for field_name, field in type_.fields.items()
        if not field_name.startswith("_")
        for arg_name, arg in field.args.items()
        if not (arg.description or "").strip()
    ]

    assert undescribed == []


def test_a_chain_kind_says_which_button_of_which_label_it_is() -> None:
    kinds = graphql_schema().type_map["ChainKind"]

    assert isinstance(kinds, GraphQLEnumType)
    assert kinds.values["VIEW_CITED_PAPER"].description.startswith("From a report Artifact, button")
    assert kinds.values["VIEW_PREV_TASK"].description.startswith("From a step (ToolCall or Task)")
