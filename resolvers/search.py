"""Node search and typed listings (SPEC §4; reference §5.1-5.3, improving on §8.3 items 24-25).

A search term matches a node when it is a prefix of one of the node's index tokens
(``resolvers.text``): whole words rather than substrings ("on" does not hit "mention"), while a
CJK term still matches inside a run of CJK text. Results rank by the number of matched terms,
then the best field any term matched in, then recency, then id, and page with an opaque cursor.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import heapq
import re
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from resolvers.errors import InvalidInputError
from resolvers.records import Label, NodeRecord, Page, SearchHit
from resolvers.resolve import in_scope
from resolvers.store import RankedSearch
from resolvers.text import query_terms
from resolvers.validate import check_first, check_unicode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from resolvers.records import EdgeRecord, EdgeType
    from resolvers.store import GraphReader

DEFAULT_FIRST = 100
MAX_FIRST = 500
MAX_TERMS = 32
ORDER_STEP = 1000  # hits ranked between two yields to the event loop
# No listing holds more items than this; a cursor past it was not issued by this API.
MAX_OFFSET = 2**53

_CURSOR_PREFIX = "offset:"
_DIGITS = re.compile(r"[0-9]{1,16}")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


class MatchMode(StrEnum):
    ANY_TERM = "any_term"
    ALL_TERMS = "all_terms"


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{offset}".encode()).decode()


def decode_cursor(after: str | None) -> int:
    """The offset an ``after`` cursor points at; ``0`` for ``None``."""
    if after is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(after.encode("ascii")).decode("ascii")
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise InvalidInputError("after", "is not a cursor returned by this API") from exc
    digits = text.removeprefix(_CURSOR_PREFIX)
    # ASCII digits only (``str.isdigit`` also accepts "²"), and few enough to convert.
    if not text.startswith(_CURSOR_PREFIX) or not _DIGITS.fullmatch(digits):
        raise InvalidInputError("after", "is not a cursor returned by this API")
    offset = int(digits)
    if offset > MAX_OFFSET:
        raise InvalidInputError("after", "is not a cursor returned by this API")
    return offset


def _paged(page: Page[NodeRecord] | Page[EdgeRecord], offset: int) -> str | None:
    return encode_cursor(offset + len(page.items)) if page.truncated else None


async def search_nodes(
    store: GraphReader,
    query: str,
    *,
    mode: MatchMode = MatchMode.ANY_TERM,
    session_id: str | None = None,
    labels: Sequence[Label] | None = None,
    first: int | None = None,
    after: str | None = None,
) -> Page[NodeRecord]:
    """Live nodes matching the query's terms, best first."""
    first = check_first(first, MAX_FIRST, DEFAULT_FIRST)
    check_unicode(query, "query")
    if session_id is not None:
        check_unicode(session_id, "sessionId")
    offset = decode_cursor(after)
    wanted = _labels(labels) if labels is not None else None
    terms = query_terms(query)
    if len(terms) > MAX_TERMS:
        raise InvalidInputError("query", f"at most {MAX_TERMS} distinct terms")
    if not terms:
        return Page([], 0, False)
    if isinstance(store, RankedSearch):
        page = await store.search_ranked(
            terms,
            session_id=session_id,
            labels=wanted,
            require_all=mode is MatchMode.ALL_TERMS,
            limit=first,
            offset=offset,
        )
        return Page(page.items, page.total, page.truncated, _paged(page, offset))
    hits = await store.search(
        terms, session_id=session_id, labels=wanted, require_all=mode is MatchMode.ALL_TERMS
    )
    # Only the pages up to this one are ordered: O(matches · log(offset + first)).
    keyed = []
    for count, hit in enumerate(hits):
        if count and count % ORDER_STEP == 0:
            await asyncio.sleep(0)  # other requests run between steps of a large ranking
        keyed.append((_order(hit), count))
    best = [hits[index] for _, index in heapq.nsmallest(offset + first, keyed)]
    items = [hit.node for hit in best[offset:]]
    truncated = offset + len(items) < len(hits)
    cursor = encode_cursor(offset + len(items)) if truncated else None
    return Page(items, len(hits), truncated, cursor)


def _order(hit: SearchHit) -> tuple[int, int, int, str]:
    """More terms matched, then a better field, then newer, then by id."""
    age = (_EPOCH - hit.node.created_at) // _MICROSECOND  # exact, unlike a float timestamp
    return -hit.matched, hit.rank, age, hit.node.id


async def nodes_by_type(
    store: GraphReader,
    labels: Sequence[Label],
    *,
    session_id: str | None = None,
    first: int | None = None,
    after: str | None = None,
) -> Page[NodeRecord]:
    """Live nodes of any of ``labels``, newest first."""
    first = check_first(first, MAX_FIRST, DEFAULT_FIRST)
    offset = decode_cursor(after)
    page = await store.list_nodes(
        labels=_labels(labels), session_id=session_id, limit=first, offset=offset
    )
    return Page(page.items, page.total, page.truncated, _paged(page, offset))


async def edges_by_type(
    store: GraphReader,
    types: Sequence[EdgeType],
    *,
    session_id: str | None = None,
    first: int | None = None,
    after: str | None = None,
) -> tuple[Page[EdgeRecord], list[NodeRecord]]:
    """Edges of any of ``types`` between live nodes (of ``session_id``), newest first, with
    their de-duplicated endpoints."""
    first = check_first(first, MAX_FIRST, DEFAULT_FIRST)
    offset = decode_cursor(after)
    if not types:
        raise InvalidInputError("types", "must not be empty")
    page = await store.list_edges(
        list(dict.fromkeys(types)), session_id=session_id, limit=first, offset=offset
    )
    ends = list(dict.fromkeys(end for edge in page.items for end in (edge.source, edge.target)))
    nodes = [node for node in await store.get_nodes(ends) if in_scope(node, None)]
    return Page(page.items, page.total, page.truncated, _paged(page, offset)), nodes


def _labels(labels: Sequence[Label]) -> list[Label]:
    if not labels:
        raise InvalidInputError("labels", "must not be empty")
    return list(dict.fromkeys(labels))
