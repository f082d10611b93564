"""Session and project cleanup; soft-deleted artifacts (SPEC §3.6, reference §7.1 53-57)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from resolvers.records import Direction, EdgeType
from tests import builders as b

if TYPE_CHECKING:
    from resolvers.store import GraphStore
    from tests.conftest import GraphQLClient

FIG = "Artifact:fig#v1"


async def reported_session(gql: GraphQLClient, session: str = "s1", project: str = "p1") -> str:
    """Goal, a figure and a report (one execution each) and a claim stated in the report."""
    await b.first_message(gql, session)
    await b.execution(
        gql, session, f"{session}-e1", 10, artifacts=[b.artifact("fig", projectId=project)]
    )
    report = b.artifact(f"{session}-report", projectId=project)
    await b.execution(gql, session, f"{session}-e2", 20, artifacts=[report])
    claim = await b.claim(
        gql,
        session,
        artifacts=[("fig", 1)],
        artifactId=f"{session}-report",
        artifactVersion=1,
    )
    return f"Claim:{claim['claimId']}"


async def test_session_cleanup_marks_artifacts_and_deletes_the_rest(
    gql: GraphQLClient, store: GraphStore
) -> None:
    claim = await reported_session(gql)

    result = await b.cleanup_session(gql, "s1")

    report = "Artifact:s1-report#v1"
    kept = await store.get_nodes([FIG, report, "Code:s1-e1", claim])
    assert result == {"__typename": "Cleanup", "marked": 2, "deleted": 6}
    assert [node is not None and node.deleted for node in kept[:2]] == [True, True]
    assert kept[2:] == [None, None]
    assert await store.expand([report], EdgeType.STATED_IN, Direction.IN) == []
    assert await store.expand([FIG], EdgeType.PRODUCES, Direction.IN) == []


async def test_cleaning_a_session_twice_changes_nothing(gql: GraphQLClient) -> None:
    await reported_session(gql)
    await b.cleanup_session(gql, "s1")

    again = await b.cleanup_session(gql, "s1")

    assert again == {"__typename": "Cleanup", "marked": 0, "deleted": 0}


async def test_a_cleaned_session_reads_as_empty(gql: GraphQLClient) -> None:
    await reported_session(gql)

    await b.cleanup_session(gql, "s1")

    graph = await b.subgraph(gql, "s1")
    assert (graph["total"], graph["nodes"], graph["edges"]) == (0, [], [])
    session = await gql.execute(b.SESSION_CHAIN, s="s1")
    assert session["session"]["__typename"] == "NodeNotFound"


LISTS = """query { nodesByType(labels: [ARTIFACT]) { ... on NodeList { total nodes { id } } }
  edgesByType(types: [PRODUCES, SUPPORTS]) { ... on EdgeList { total } }
  searchNodes(query: "fig") { ... on NodeList { total } } }"""

PROVENANCE = """query { artifactProvenance(artifactId: "fig", version: 1) { __typename } }"""


async def test_soft_deleted_artifacts_are_filtered_from_every_read(gql: GraphQLClient) -> None:
    await reported_session(gql)

    await b.cleanup_session(gql, "s1")

    lists = await gql.execute(LISTS)
    assert lists["nodesByType"] == {"total": 0, "nodes": []}
    assert lists["edgesByType"]["total"] == 0
    assert lists["searchNodes"]["total"] == 0
    for node_id in ("fig", FIG, "fig#v1"):
        assert (await b.node(gql, node_id))["__typename"] == "NodeNotFound"
    assert (await b.chain(gql, "fig", "VIEW_PRODUCING_CODE"))["__typename"] == "NodeNotFound"
    assert (await b.trace(gql, "fig"))["__typename"] == "NodeNotFound"
    provenance = (await gql.execute(PROVENANCE))["artifactProvenance"]
    assert provenance["__typename"] == "NodeNotFound"


INPUTS = """query { node(nodeId: "Code:d-e1") { ... on Code { inputs { id } } } }"""


async def test_a_later_session_still_reads_a_soft_deleted_artifact_as_input(
    gql: GraphQLClient, store: GraphStore
) -> None:
    await reported_session(gql)
    await b.cleanup_session(gql, "s1")
    reads = [{"artifactId": "fig", "version": 1}]

    await b.execution(
        gql, "d", "d-e1", 30, artifacts=[b.artifact("out", inputArtifactVersions=reads)]
    )

    edges = await store.expand(["Code:d-e1"], EdgeType.INPUT, Direction.IN)
    (fig,) = await store.get_nodes([FIG])
    assert [edge.source for edge in edges] == [FIG]
    assert fig is not None
    assert fig.deleted
    assert (await gql.execute(INPUTS))["node"] == {"inputs": []}


async def test_a_later_session_cannot_cite_a_soft_deleted_artifact(gql: GraphQLClient) -> None:
    await reported_session(gql)
    await b.cleanup_session(gql, "s1")

    result = await b.claim(gql, "d", artifacts=[("fig", 1)])

    assert (result["__typename"], result["code"]) == (
        "DeclareRejected",
        "ARTIFACT_VERSION_NOT_FOUND",
    )


async def test_its_own_session_producing_a_soft_deleted_version_again_revives_it(
    gql: GraphQLClient,
) -> None:
    """A write the gateway acknowledges is readable: a late event of a cleaned session that
    produces one of its soft-marked versions again brings that version back, whole."""
    await reported_session(gql)
    await b.execution(gql, "s1", "s1-e3", 30, artifacts=[b.artifact("fig", 2)])
    await b.cleanup_session(gql, "s1")

    observed = await b.execution(gql, "s1", "s1-e1", 10, artifacts=[b.artifact("fig")])

    assert FIG in observed["nodeIds"]
    assert (await b.node(gql, FIG, "s1"))["id"] == FIG
    lists = await gql.execute(LISTS)
    assert lists["nodesByType"] == {"total": 1, "nodes": [{"id": FIG}]}
    assert (lists["edgesByType"]["total"], lists["searchNodes"]["total"]) == (2, 1)
    assert (await b.chain(gql, "fig", "VIEW_PRODUCING_CODE"))["__typename"] == "Chain"
    assert (await b.node(gql, "Artifact:fig#v2", "s1"))["__typename"] == "NodeNotFound"
    cited = await b.claim(gql, "s1", artifacts=[("fig", 1)])
    assert cited["__typename"] == "ClaimDeclared"
    redeclared = await b.declare_artifact(gql, "s1", "s1-e3", b.artifact("fig", 2))
    assert redeclared["artifact"] == {"id": "Artifact:fig#v2"}
    assert (await b.node(gql, "Artifact:fig#v2", "s1"))["id"] == "Artifact:fig#v2"


LINEAGE = """query { edgesByType(types: [SUPERSEDES], sessionId: "s1") {
  ... on EdgeList { edges { source target } } } }"""


async def test_revived_versions_are_linked_to_the_nearest_live_ones(gql: GraphQLClient) -> None:
    runs = [(f"e{n}", b.artifact("fig", n)) for n in (1, 2, 3)]
    for number, (execution, version) in enumerate(runs, start=1):
        await b.execution(gql, "s1", execution, 10 * number, artifacts=[version])
    await b.cleanup_session(gql, "s1")

    async def revive(number: int) -> set[tuple[str, str]]:
        execution, version = runs[number - 1]
        await b.execution(gql, "s1", execution, 10 * number, artifacts=[version])
        edges = (await gql.execute(LINEAGE))["edgesByType"]["edges"]
        return {
            tuple(e[end].removeprefix("Artifact:") for end in ("source", "target")) for e in edges
        }

    assert await revive(3) == set()
    assert await revive(1) == {("fig#v3", "fig#v1")}
    assert await revive(2) == {("fig#v3", "fig#v2"), ("fig#v2", "fig#v1")}


async def test_a_cleaned_session_declaring_a_soft_deleted_version_revives_it(
    gql: GraphQLClient,
) -> None:
    await reported_session(gql)
    await b.cleanup_session(gql, "s1")

    declared = await b.declare_artifact(gql, "s1", "s1-e1", b.artifact("fig"))

    assert declared["__typename"] == "ArtifactRegistered"
    assert (await b.node(gql, FIG, "s1"))["id"] == FIG
    assert (await b.subgraph(gql, "s1"))["total"] == 1


async def test_project_cleanup_deletes_every_node_of_its_sessions(
    gql: GraphQLClient, store: GraphStore
) -> None:
    await reported_session(gql, "s1")
    await b.execution(gql, "s2", "s2-e1", 10, artifacts=[b.artifact("table", projectId="p1")])

    result = await b.cleanup_project(gql, "p1", ["s1", "s2"])

    assert result["deleted"] == 11
    assert await store.session_node_ids("s1") == await store.session_node_ids("s2") == []
    assert await store.get_nodes([FIG, "Artifact:table#v1"]) == [None, None]


async def test_project_cleanup_removes_soft_deleted_artifacts_left_behind(
    gql: GraphQLClient, store: GraphStore
) -> None:
    await b.execution(gql, "s1", "e1", 10, artifacts=[b.artifact("fig", projectId="p1")])
    await b.cleanup_session(gql, "s1")

    result = await b.cleanup_project(gql, "p1", [])

    assert result["deleted"] == 1
    assert await store.get_nodes([FIG]) == [None]


async def test_cleanup_without_a_session_id_is_invalid_input(gql: GraphQLClient) -> None:
    result = await b.cleanup_session(gql, " ")

    assert (result["__typename"], result["code"]) == ("InvalidInput", "INVALID_INPUT")
