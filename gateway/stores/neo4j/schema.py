"""Constraints and indexes of the Neo4j store, ensured idempotently on every connect.

Every statement is named and uses ``IF NOT EXISTS``; ``ensure_schema`` first reads the names
that exist (two cheap ``SHOW`` statements), creates only what is missing and then waits until
the new indexes are online (the fulltext index answers queries only once it is online; on a
large store the wait may end first, and search fails until the index is populated).

* per label: ``id`` unique (the port addresses nodes by global id), the domain ``key`` unique
  (a Paper's ``(session_id, key)``, plus a plain ``key`` index for cross-session lookups),
  ``session_id`` and the insertion order ``_sm_order`` indexed;
* steps (Task, ToolCall): ``parent_subtask_id`` and the chain position
  ``(session_id, _sm_scope, _sm_pos)``;
* Artifact: ``artifact_id`` and ``project_id``;
* ``SessionCounter.session_id`` unique; ``ParkedEdge`` unique per
  ``(waiting_for, type, source, target)`` and indexed by ``waiting_for``;
* the change feed: ``FeedHead.session_id`` unique, ``ChangeFeed`` unique per
  ``(session_id, seq)`` and indexed by its commit time ``at`` (for trimming);
* per relationship type: ``_sm_session`` and ``_sm_order``;
* ``sm_fulltext``: a fulltext index (whitespace analyzer) over ``_sm_text`` (the search tokens)
  and ``_sm_sess`` (the session's digest token) of the nine labels; it replaces ``sm_search``
  (``_sm_text`` only), which is dropped when found.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, LiteralString

from neo4j.exceptions import ClientError

from gateway.stores.neo4j.cypher import EDGE_TYPES, LABELS, STEP_LABELS
from gateway.stores.neo4j.records import node_properties, to_node
from resolvers.errors import StoreUnavailableError
from resolvers.text import SEARCH_FIELDS

logger = logging.getLogger(__name__)

Run = Callable[[LiteralString], Awaitable[list[dict[str, Any]]]]

INDEX_WAIT_SECONDS: Final = 60


def _label_statements(label: LiteralString) -> list[tuple[LiteralString, LiteralString]]:
    def name(suffix: LiteralString) -> LiteralString:
        return "sm_" + label + "_" + suffix

    statements: list[tuple[LiteralString, LiteralString]] = [
        (name("id"), f"FOR (n:{label}) REQUIRE n.id IS UNIQUE"),
        (name("session"), f"FOR (n:{label}) ON (n.session_id)"),
        (name("order"), f"FOR (n:{label}) ON (n._sm_order)"),
    ]
    if label == "Paper":
        statements += [
            (name("key"), f"FOR (n:{label}) REQUIRE (n.session_id, n.key) IS UNIQUE"),
            (name("link"), f"FOR (n:{label}) ON (n.key)"),
        ]
    else:
        statements.append((name("key"), f"FOR (n:{label}) REQUIRE n.key IS UNIQUE"))
    if label in STEP_LABELS:
        statements += [
            (name("parent"), f"FOR (n:{label}) ON (n.parent_subtask_id)"),
            (name("chain"), f"FOR (n:{label}) ON (n.session_id, n._sm_scope, n._sm_pos)"),
        ]
    if label == "Artifact":
        statements += [
            (name("artifact_id"), f"FOR (n:{label}) ON (n.artifact_id)"),
            (name("project"), f"FOR (n:{label}) ON (n.project_id)"),
        ]
    return statements


def _type_statements(edge_type: LiteralString) -> list[tuple[LiteralString, LiteralString]]:
    return [
        ("sm_" + edge_type + "_session", f"FOR ()-[r:{edge_type}]-() ON (r._sm_session)"),
        ("sm_" + edge_type + "_order", f"FOR ()-[r:{edge_type}]-() ON (r._sm_order)"),
    ]


def _statements() -> list[tuple[LiteralString, LiteralString]]:
    specs: list[tuple[LiteralString, LiteralString]] = []
    for label in LABELS:
        specs += _label_statements(label)
    for edge_type in EDGE_TYPES:
        specs += _type_statements(edge_type)
    specs += [
        ("sm_counter_session", "FOR (c:SessionCounter) REQUIRE c.session_id IS UNIQUE"),
        ("sm_project_cleanup", "FOR (p:ProjectCleanup) REQUIRE p.project_id IS UNIQUE"),
        ("sm_cleaned_artifact", "FOR (t:CleanedArtifact) REQUIRE t.id IS UNIQUE"),
        (
            "sm_parked_edge",
            "FOR (p:ParkedEdge) REQUIRE (p.waiting_for, p.type, p.source, p.target) IS UNIQUE",
        ),
        ("sm_parked_waiting", "FOR (p:ParkedEdge) ON (p.waiting_for)"),
        ("sm_feed_head", "FOR (h:FeedHead) REQUIRE h.session_id IS UNIQUE"),
        ("sm_feed_entry", "FOR (f:ChangeFeed) REQUIRE (f.session_id, f.seq) IS UNIQUE"),
        ("sm_feed_at", "FOR (f:ChangeFeed) ON (f.at)"),
    ]
    result: list[tuple[LiteralString, LiteralString]] = []
    for name, body in specs:
        kind: LiteralString = "CONSTRAINT" if " REQUIRE " in body else "INDEX"
        result.append((name, f"CREATE {kind} {name} IF NOT EXISTS {body}"))
    fulltext_labels = "|".join(LABELS)
    result.append(
        (
            "sm_fulltext",
            f"CREATE FULLTEXT INDEX sm_fulltext IF NOT EXISTS FOR (n:{fulltext_labels}) "
            "ON EACH [n._sm_text, n._sm_sess] OPTIONS {indexConfig: "
            "{`fulltext.analyzer`: 'whitespace', `fulltext.eventually_consistent`: false}}",
        )
    )
    return result


SCHEMA: Final[tuple[tuple[LiteralString, LiteralString], ...]] = tuple(_statements())
"""``(name, CREATE … IF NOT EXISTS statement)`` of every constraint and index."""

OLD_SEARCH_INDEX: Final = "sm_search"
DROP_OLD_SEARCH_INDEX: Final[LiteralString] = "DROP INDEX sm_search IF EXISTS"
UNRANKED_NODES: Final[LiteralString] = (
    "MATCH (n) WHERE n._sm_tokens IS NOT NULL AND n._sm_sess IS NULL "
    "RETURN elementId(n) AS element, n {.*, _sm_label: labels(n)[0]} AS node LIMIT 1000"
)
SET_RANKS: Final[LiteralString] = (
    "UNWIND $rows AS row MATCH (n) WHERE elementId(n) = row.element "
    "SET n._sm_ranks = row.ranks, n._sm_sess = row.sess"
)


async def upgrade_search(
    read: Run, write: Callable[[LiteralString, dict[str, Any]], Awaitable[object]]
) -> int:
    """Give nodes written before ``_sm_ranks`` and ``_sm_sess`` existed those fields, then drop
    the index they were searched with. Runs while that index exists, so an upgrade cut short
    resumes on the next connect. Returns the number of nodes upgraded."""
    if OLD_SEARCH_INDEX not in {row["name"] for row in await read(SHOW_INDEXES)}:
        return 0
    upgraded = 0
    while rows := await read(UNRANKED_NODES):
        updates = []
        for row in rows:
            values = node_properties(to_node(row["node"]))
            ranks, sess = values.get("_sm_ranks", []), values.get("_sm_sess", "")
            updates.append({"element": row["element"], "ranks": ranks, "sess": sess})
        await write(SET_RANKS, {"rows": updates})
        upgraded += len(updates)
    await write(DROP_OLD_SEARCH_INDEX, {})
    return upgraded


SEARCH_FOLD: Final = 2
"""The search text's form: 1 is folded (``resolvers.text.fold``); nodes written before it was
(no mark) hold lower-cased tokens, which differ for non-ASCII text only. 2 drops the dot a
folded "İ" leaves on its "i", which changes the tokens of text with an "İ" or a combining dot
above only."""
FOLD_MARK: Final[LiteralString] = "MATCH (m:SmSchema {name: 'search'}) RETURN m.fold AS fold"
UNFOLDED_NODES: Final[LiteralString] = (
    "MATCH (n) WHERE n._sm_text IS NOT NULL AND any(k IN $fields WHERE "
    "(n[k] IS :: STRING AND n[k] =~ $changed) OR "
    "(n[k] IS :: LIST<STRING NOT NULL> AND any(x IN n[k] WHERE x =~ $changed))) "
    "RETURN elementId(n) AS element"
)
NODES_BY_ELEMENT: Final[LiteralString] = (
    "UNWIND $elements AS element MATCH (n) WHERE elementId(n) = element "
    "RETURN element, n {.*, _sm_label: labels(n)[0]} AS node"
)
SET_TOKENS: Final[LiteralString] = (
    "UNWIND $rows AS row MATCH (n) WHERE elementId(n) = row.element "
    "SET n._sm_tokens = row.tokens, n._sm_ranks = row.ranks, n._sm_text = row.text"
)
MARK_FOLDED: Final[LiteralString] = "MERGE (m:SmSchema {name: 'search'}) SET m.fold = $fold"
# Matched whole (``=~``), so ``.`` must cross line breaks too (``(?s)``).
_NON_ASCII = r"(?s).*[^\x00-\x7F].*"
_DOTTED = r"(?s).*[\u0130\u0307].*"
_FOLD_BATCH = 1000


async def fold_search(
    read: Callable[[LiteralString, dict[str, Any]], Awaitable[list[dict[str, Any]]]],
    write: Callable[[LiteralString, dict[str, Any]], Awaitable[object]],
) -> int:
    """Give the nodes written before search folded its text as it does now their tokens, once:
    those whose searchable fields hold text the change gives other tokens (any non-ASCII text
    without a mark, an "İ" or a combining dot above after mark 1), in batches, then the mark.
    Cut short, it starts over on the next connect (a node done twice gets the same tokens).
    Returns the nodes re-indexed."""
    marks = await read(FOLD_MARK, {})
    fold = marks[0]["fold"] if marks else None
    if fold is not None and fold >= SEARCH_FOLD:
        return 0
    # Their searchable text, not their tokens: a combining accent split a word in two ASCII
    # tokens (a decomposed "éclair" gave "e" and "clair").
    changed = _NON_ASCII if fold is None else _DOTTED
    found = await read(UNFOLDED_NODES, {"fields": list(SEARCH_FIELDS), "changed": changed})
    elements = [row["element"] for row in found]
    for start in range(0, len(elements), _FOLD_BATCH):
        batch = elements[start : start + _FOLD_BATCH]
        rows = []
        for row in await read(NODES_BY_ELEMENT, {"elements": batch}):
            values = node_properties(to_node(row["node"]))
            rows.append(
                {
                    "element": row["element"],
                    "tokens": values.get("_sm_tokens"),
                    "ranks": values.get("_sm_ranks"),
                    "text": values.get("_sm_text"),
                }
            )
        await write(SET_TOKENS, {"rows": rows})
    await write(MARK_FOLDED, {"fold": SEARCH_FOLD})
    return len(elements)


ALREADY_EXISTS: Final = (
    "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
    "Neo.ClientError.Schema.ConstraintAlreadyExists",
    "Neo.ClientError.Schema.IndexAlreadyExists",
)
CREATE_ATTEMPTS: Final = 5
CREATE_PAUSE: Final = 0.2  # seconds, times the attempt number
SHOW_CONSTRAINTS: Final[LiteralString] = "SHOW CONSTRAINTS YIELD name"
SHOW_INDEXES: Final[LiteralString] = "SHOW INDEXES YIELD name"
AWAIT_INDEXES: Final[LiteralString] = f"CALL db.awaitIndexes({INDEX_WAIT_SECONDS})"


async def _create(run: Run, name: str, statement: LiteralString) -> bool:
    """One ``CREATE … IF NOT EXISTS``, while other gateways may run the same at the same time
    (replicas starting together): Neo4j then refuses all but one as an equivalent rule that
    already exists — which is the state wanted — or as a deadlock, which is worth a retry.
    Whether this connection created it."""
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        try:
            await run(statement)
            return True
        except ClientError as exc:
            if not (exc.code or "").startswith(ALREADY_EXISTS):
                raise
            logger.info("Neo4j schema rule %s was created by another connection", name)
            return False
        except StoreUnavailableError as exc:
            if not exc.transient or attempt == CREATE_ATTEMPTS:
                raise
            await asyncio.sleep(CREATE_PAUSE * attempt)
    raise AssertionError("unreachable: the last attempt returns or raises")


async def ensure_schema(
    run: Run, schema: tuple[tuple[LiteralString, LiteralString], ...] = SCHEMA
) -> list[str]:
    """Create the missing constraints and indexes of ``schema`` (the graph's unless told);
    returns the names created."""
    existing = {row["name"] for row in await run(SHOW_CONSTRAINTS)}
    existing |= {row["name"] for row in await run(SHOW_INDEXES)}
    created = []
    for name, statement in schema:
        if name not in existing and await _create(run, name, statement):
            created.append(name)
    if created:
        try:
            await run(AWAIT_INDEXES)
        except ClientError as exc:
            # A large store populates new indexes for longer; they serve once online.
            logger.warning("new Neo4j indexes are still populating: %s", exc.message)
    return created
