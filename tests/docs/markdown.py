"""The GraphQL examples of the Markdown docs, with the markers that steer how they run.

A fenced block opened with ```` ```graphql ```` is an example. The HTML comment on the line
just before its fence (blank lines between are allowed) may say:

* ``<!-- not-run: <reason> -->`` — the block is not run (a subscription, a placeholder
  password); the reason is required and reported.
* ``<!-- expect: <TypeName>[, <TypeName>…] -->`` — the ``__typename`` every root field must
  answer, instead of the default "any member that is not an ``Error``".

Any other comment before a block is an error, so a typo never silently skips a block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

FENCE = re.compile(r"^```graphql\s*$")
CLOSE = re.compile(r"^```\s*$")
MARKER = re.compile(r"^<!--\s*(?P<name>[a-z-]+)\s*:\s*(?P<value>.*?)\s*-->$")
NOT_RUN, EXPECT = "not-run", "expect"


class MarkerError(ValueError):
    """A marker the docs cannot use: unknown, or a not-run without a reason."""


@dataclass(frozen=True, slots=True)
class Example:
    path: Path
    line: int  # of the opening fence, 1-based
    document: str
    not_run: str | None = None  # the reason
    expect: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"


def examples(path: Path) -> list[Example]:
    """Every ```` ```graphql ```` block of ``path``, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    index = 0
    while index < len(lines):
        if not FENCE.match(lines[index]):
            index += 1
            continue
        end = next((i for i in range(index + 1, len(lines)) if CLOSE.match(lines[i])), None)
        if end is None:
            raise MarkerError(f"{path.name}:{index + 1}: the graphql block is never closed")
        found.append(_example(path, index, "\n".join(lines[index + 1 : end]), lines))
        index = end + 1
    return found


def _example(path: Path, fence: int, document: str, lines: list[str]) -> Example:
    before = fence - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    comment = lines[before].strip() if before >= 0 else ""
    if not comment.startswith("<!--"):
        return Example(path, fence + 1, document)
    marker = MARKER.match(comment)
    where = f"{path.name}:{before + 1}"
    if marker is None or marker["name"] not in {NOT_RUN, EXPECT}:
        raise MarkerError(f"{where}: {comment!r} is not a marker (`not-run: …` or `expect: …`)")
    if not marker["value"]:
        raise MarkerError(f"{where}: `{marker['name']}:` needs a value")
    if marker["name"] == NOT_RUN:
        return Example(path, fence + 1, document, not_run=marker["value"])
    expected = tuple(name.strip() for name in marker["value"].split(","))
    return Example(path, fence + 1, document, expect=expected)
