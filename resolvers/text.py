"""Text rules shared by every backend: search tokens and searchable fields (links: ``links``)."""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping


def _mark_ranges() -> str:
    """A regex class body of every combining mark (Unicode category M): in the first two
    planes, and the variation selectors of plane 14 (none lie elsewhere)."""
    ranges: list[list[int]] = []
    for code in (*range(0x20000), *range(0xE0100, 0xE01F0)):
        if unicodedata.category(chr(code)).startswith("M"):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return "".join(f"{chr(first)}-{chr(last)}" for first, last in ranges)


# Split on runs of characters that are neither word characters nor combining marks, and on
# underscores. Unicode-aware: CJK stays in tokens, and so do the marks no letter composes with
# (a Devanagari vowel sign, a Hebrew point, the dot "İ" folds to): "İzmir" is one token, not
# "i" and "zmir".
_SPLIT = re.compile(f"[^\\w{_mark_ranges()}]+|_+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_MAX_SUFFIXES = 32
# The longest token kept, and the longest query term: a longer run of letters (a hash, an
# encoded blob, a word repeated without spaces) is indexed by its first characters, so that
# one field of long text cannot put a token of its whole length in every index.
MAX_TOKEN = 64

# Searchable fields, best rank first (lower = a better place to match).
SEARCH_FIELDS: Mapping[str, int] = {
    "title": 0,
    "abstract": 1,
    "core_objective": 2,
    "objective": 3,
    "summary": 3,
    "content": 4,
    "subagent_type": 5,
    "tool_type": 5,
    "task_type": 5,
    "path": 5,
    "name": 5,
    "tool": 5,
    "source": 5,
    "identifier": 5,
    "link": 5,
    "tool_name": 5,
    "logical_name": 5,
    "domain": 5,
}


def fold(text: str) -> str:
    """``text`` as search compares it: compatibility-normalised and case-folded (NFKC, full
    case folding), so that one word matches however it was typed: "É" composed or as "E" and
    a combining accent, "STRASSE" and "Straße", a final sigma, full-width letters. The dot that
    folding leaves on the "i" of a capital "İ" is dropped, so "İstanbul", "ISTANBUL" and
    "istanbul" are one word (the dotless i, U+0131, stays a letter of its own, as accents
    do). ASCII text is only lower-cased (which is the same)."""
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return folded.replace(_DOTTED_I, "i")


_DOTTED_I = "i\u0307"  # "İ".casefold()


def is_token(text: str) -> bool:
    """Whether ``text`` could be (the start of) an index token: one word, nothing that
    ``tokens`` splits on."""
    return bool(text) and _SPLIT.search(text) is None


def query_terms(query: str) -> list[str]:
    """The distinct folded terms of a search query (``fold``), in order."""
    seen: dict[str, None] = {}
    for token in _SPLIT.split(fold(query)):
        if token:
            seen.setdefault(token[:MAX_TOKEN], None)
    return list(seen)


def tokens(text: str) -> set[str]:
    """The index tokens of a text. A term matches when it is a prefix of one of them.

    Words are tokens as they are, their first ``MAX_TOKEN`` characters (a query's terms are
    cut alike); a run containing CJK characters (written without spaces) also contributes its
    suffixes, so a CJK term matches anywhere inside the run.
    """
    lowered = fold(text)
    words = set(_SPLIT.split(lowered))
    words.discard("")
    result = {word[:MAX_TOKEN] for word in words}
    if _CJK.search(lowered) is None:  # most texts: no word to look into
        return result
    for word in words:
        if _CJK.search(word):
            for start in range(1, min(len(word), _MAX_SUFFIXES)):
                result.add(word[start : start + MAX_TOKEN])
    return result


def searchable_text(props: Mapping[str, Any]) -> str:
    """The text of a node's searchable fields, space separated."""
    return " ".join(_field_text(props.get(name)) for name in SEARCH_FIELDS if props.get(name))


def token_ranks(props: Mapping[str, Any]) -> dict[str, int]:
    """Every index token of a node's searchable fields (``tokens(searchable_text(props))``),
    with the best rank of a field it occurs in."""
    ranks: dict[str, int] = {}
    for name, rank in SEARCH_FIELDS.items():  # best rank first
        value = props.get(name)
        if value:
            for token in tokens(_field_text(value)):
                ranks.setdefault(token, rank)
    return ranks


def match_rank(terms: Iterable[str], ranks: Mapping[str, int]) -> tuple[int, int]:
    """``(terms matched, best field rank of a match)`` of a node with these ``token_ranks``:
    a term matches a token it is a prefix of; the rank is 5 when nothing matched."""
    matched, best = 0, 5
    for term in terms:
        found = [rank for token, rank in ranks.items() if token.startswith(term)]
        if found:
            matched += 1
            best = min(best, *found)
    return matched, best


def _field_text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return " ".join(str(item) for item in value)
    return str(value)
