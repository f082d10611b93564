"""A small session with every node label and edge type, recorded through GraphQL mutations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests import builders as b

if TYPE_CHECKING:
    from tests.conftest import GraphQLClient

SESSION = "s-export"
DOI = "https://doi.org/10.1/x"


async def record_sample_session(gql: GraphQLClient, session: str = SESSION) -> None:
    """Goal fed by an upload; two runs writing a figure twice (v2 reads the upload); a search
    finding a paper; evidence; a subagent scope with a step; a claim stated in a report."""
    await b.upload(gql, session, "data.csv")
    await b.first_message(gql, session, 'Study "TP53" <#1>')
    await b.execution(gql, session, "exec-1", 10, artifacts=[b.artifact("fig", 1)])
    await b.execution(
        gql,
        session,
        "exec-2",
        20,
        artifacts=[b.artifact("fig", 2)],
        inputSourceFiles=[b.file_id(session, "data.csv")],
    )
    await b.tool_call(gql, session, "subtask:mcp:inv-1", 30, papers=[b.paper(DOI)])
    evidence = await b.evidence(gql, session, link=DOI)
    await b.subagent(gql, session, "sub-1", started=40)
    await b.execution(gql, session, "exec-3", 45, parentSubagentId="sub-1")
    await b.execution(gql, session, "exec-4", 50, artifacts=[b.artifact("report", 1)])
    await b.claim(
        gql,
        session,
        evidence_ids=[evidence["evidenceId"]],
        artifacts=[("fig", 2)],
        artifactId="report",
        artifactVersion=1,
    )
