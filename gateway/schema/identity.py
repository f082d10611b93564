"""What was made from an object that never changes, kept for that very object.

The stores hand out the same record objects while the stored rows are unchanged (the SQLite
engine's decoded rows, the log engine's graph in memory), and a client asks for the same
session again and again: the explorer and the workspace panel redraw it as it grows. What the
schema makes of a record — its GraphQL object, then that object's completed fields — depends
only on the record and on what the request selects, so it is made once and reused.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Hashable

V = TypeVar("V")


class IdentityCache(Generic[V]):
    """Values kept per source object and key (a source may be asked with several: one per
    selection), for as long as the source lives: an entry holds its source weakly and goes
    when it does (what a request makes of its own short-lived records is gone with them, and
    nothing it kept ages in the collector's old generations). A value is given back only for
    the very object it was made from and an equal key; the sources must never be changed
    after a value is made. Bounded: the oldest source's entry goes when ``capacity`` sources
    are held. Used from the event loop only."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        # Ordered: the oldest entry is found at once however many went before it (a dict's
        # first live entry is searched for past every one removed).
        self._entries: OrderedDict[int, tuple[weakref.ref[Any], dict[Hashable, V]]] = OrderedDict()

    def get(self, source: object, key: Hashable) -> V | None:
        entry = self._entries.get(id(source))
        if entry is None or entry[0]() is not source:
            return None
        return entry[1].get(key)

    def put(self, source: object, key: Hashable, value: V) -> V:
        entries = self._entries
        identity = id(source)
        entry = entries.get(identity)
        if entry is None or entry[0]() is not source:
            # The callback runs when the source dies, before its id can be anyone else's.
            entry = (_Ref(source, self._forget, identity), {})
            entries[identity] = entry
            if len(entries) > self._capacity:
                entries.popitem(last=False)
        entry[1][key] = value
        return value

    def _forget(self, ref: _Ref) -> None:
        self._entries.pop(ref.identity, None)

    def __len__(self) -> int:
        return len(self._entries)


class _Ref(weakref.ref):  # type: ignore[type-arg]
    """A weak reference that knows its source's id: one bound callback serves every entry
    (a closure each was three more objects for the collector to walk)."""

    __slots__ = ("identity",)
    identity: int

    def __new__(cls, source: object, callback: Any, identity: int) -> _Ref:
        made = super().__new__(cls, source, callback)
        made.identity = identity
        return made

    def __init__(self, source: object, callback: Any, identity: int) -> None:
        pass  # all made in ``__new__`` (``weakref.ref`` takes no third argument)
