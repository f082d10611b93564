"""``Groups``: members grouped under a key, each unique in its group by its own key; and
``discard`` for the indexes that keep every group a dict.

Most groups of the file store's indexes have one member — the one node with a domain key, the one
``next`` edge out of a step, the one ``produces`` edge into an artifact — and a dict per group
costs 184 bytes, more than the member's own record. So a group of one is held as the
member itself and becomes a dict (in insertion order, like a dict group always was) only once a
second member joins; it shrinks back when all but one leave.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Set

M = TypeVar("M")
V = TypeVar("V")


class Groups(Generic[M]):
    """``group -> members``, a member's key in its group being ``key_of(member)``.

    Members must not be dicts (a dict marks a group of several).
    """

    __slots__ = ("_groups", "_key_of")

    def __init__(self, key_of: Callable[[M], str]) -> None:
        self._groups: dict[str, M | dict[str, M]] = {}
        self._key_of = key_of

    def members(self, group: str) -> Collection[M]:
        """The members of ``group`` in the order they joined it (empty if there is none)."""
        found = self._groups.get(group)
        if found is None:
            return ()
        if isinstance(found, dict):
            return found.values()
        return (found,)

    def members_of(self, groups: Iterable[str]) -> list[M]:
        """The members of each of ``groups``, group after group (one call for many groups:
        walks read adjacency this way, so it costs a lookup per group and nothing more)."""
        found_all: list[M] = []
        lookup = self._groups.get
        for group in groups:
            found = lookup(group)
            if found is None:
                continue
            if isinstance(found, dict):
                found_all.extend(found.values())
            else:
                found_all.append(found)
        return found_all

    def members_in(self, groups: Set[str]) -> list[M]:
        """``members_of`` in no particular order: the groups that have members are found by a
        set intersection (in C), so the many without any cost next to nothing."""
        return self.members_of(self._groups.keys() & groups)

    def get(self, group: str, key: str) -> M | None:
        found = self._groups.get(group)
        if isinstance(found, dict):
            return found.get(key)
        return found if found is not None and self._key_of(found) == key else None

    def add(self, group: str, member: M) -> None:
        """Insert ``member``, replacing the one with the same key (which keeps its place)."""
        found = self._groups.get(group)
        if found is None:
            self._groups[group] = member
        elif isinstance(found, dict):
            found[self._key_of(member)] = member
        else:
            key, other = self._key_of(member), self._key_of(found)
            self._groups[group] = member if key == other else {other: found, key: member}

    def remove(self, group: str, key: str) -> None:
        """Drop the member with ``key`` from ``group``, if it is there."""
        found = self._groups.get(group)
        if isinstance(found, dict):
            found.pop(key, None)
            if len(found) == 1:
                self._groups[group] = next(iter(found.values()))
        elif found is not None and self._key_of(found) == key:
            del self._groups[group]


def discard(index: dict[str, dict[str, V]], group: str, key: str) -> None:
    """Drop ``key`` from the dict ``index[group]``, and the group once it is empty."""
    members = index.get(group)
    if members is not None:
        members.pop(key, None)
        if not members:
            del index[group]
