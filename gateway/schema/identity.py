"""What was made from an object that never changes, kept for that very object.

The stores hand out the same record objects while the stored rows are unchanged (the SQLite
engine's decoded rows, the log engine's graph in memory), and a client asks for the same
session again and again: the explorer and the workspace panel redraw it as it grows. What the
schema makes of a record — its GraphQL object, then that object's completed fields — depends
only on the record and on what the request selects, so it is made once and reused.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")


class IdentityCache(Generic[V]):
    """Values kept per source object and key. A value is given back only for the very object it
    was made from (the entry holds the object, so its ``id`` is not reused meanwhile) and an
    equal key; the sources must never be changed after the value is made. Bounded: the
    oldest entry goes when ``capacity`` are held. Used from the event loop only."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        # Ordered: the oldest entry is found at once however many went before it (a dict's
        # first live entry is searched for past every one removed).
        self._entries: OrderedDict[int, tuple[object, object, V]] = OrderedDict()

    def get(self, source: object, key: object) -> V | None:
        entry = self._entries.get(id(source))
        if entry is not None and entry[0] is source and (entry[1] is key or entry[1] == key):
            return entry[2]
        return None

    def put(self, source: object, key: object, value: V) -> V:
        entries = self._entries
        entries.pop(id(source), None)
        entries[id(source)] = (source, key, value)  # the newest, last
        if len(entries) > self._capacity:
            entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)
