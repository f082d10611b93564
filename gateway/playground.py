"""The GraphiQL playground page, opened with a query that explores one session."""

from __future__ import annotations

import json

DEFAULT_QUERY = """# ScienceMemory playground. Set the Authorization header below when a token is configured:
#   { "Authorization": "Bearer <token>" }
# Replace the session id, then run. Every root field answers a union: success or an Error.

query SessionChain($sessionId: String! = "demo-session") {
  health { status backend enabled pendingWrites }
  session(sessionId: $sessionId) {
    ... on Session {
      goal { ... on ResearchGoal { coreObjective } }
      chain {
        __typename
        id
        excerpt
        ... on ToolCall { toolName status finishedAt products { __typename id excerpt } }
        ... on Task { objective status firstChild { id excerpt } }
      }
    }
    ... on Error { code message }
  }
}
"""


def playground_html(base_html: str) -> str:
    """Strawberry's GraphiQL page with our default document."""
    return base_html.replace(
        "fetcher: fetcher,",
        f"fetcher: fetcher,\n          defaultQuery: {json.dumps(DEFAULT_QUERY)},",
        1,
    )
