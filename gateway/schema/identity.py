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
    are held. Used from the event loop only.

    An entry is one object (``_Entry``): the cyclic collector walks every entry of a full
    cache in each of its old-generation collections (a tuple, a dict and a bound method beside
    each weak reference would be three more objects an entry, 72,000 a full cache)."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        # Ordered: the oldest entry is found at once however many went before it (a dict's
        # first live entry is searched for past every one removed).
        self._entries: OrderedDict[int, _Entry[V]] = OrderedDict()
        self._gone = self._forget  # one bound method, every entry's callback

    def get(self, source: object, key: Hashable) -> V | None:
        entry = self._entries.get(id(source))
        if entry is None or entry() is not source:
            return None
        return entry.find(key)

    def put(self, source: object, key: Hashable, value: V) -> V:
        entries = self._entries
        identity = id(source)
        entry = entries.get(identity)
        if entry is None or entry() is not source:
            # The callback runs when the source dies, before its id can be anyone else's.
            entry = _Entry(source, self._gone, identity, key, value)
            entries[identity] = entry
            if len(entries) > self._capacity:
                entries.popitem(last=False)
        else:
            entry.keep(key, value)
        return value

    def _forget(self, entry: _Entry[V]) -> None:
        self._entries.pop(entry.identity, None)

    def __len__(self) -> int:
        return len(self._entries)


class _Entry(weakref.ref, Generic[V]):  # type: ignore[type-arg]
    """A source's entry: a weak reference to it that knows its id and holds its values, the
    first in slots (a source is nearly always asked with one key), any others in a dict."""

    __slots__ = ("identity", "key", "more", "value")
    identity: int
    key: Hashable
    value: V
    more: dict[Hashable, V] | None

    def __new__(
        cls, source: object, callback: Any, identity: int, key: Hashable, value: V
    ) -> _Entry[V]:
        made = super().__new__(cls, source, callback)
        made.identity, made.key, made.value, made.more = identity, key, value, None
        return made

    def __init__(self, *args: Any) -> None:
        pass  # all made in ``__new__`` (``weakref.ref`` takes no more arguments)

    def find(self, key: Hashable) -> V | None:
        if self.key is key or self.key == key:
            return self.value
        return None if self.more is None else self.more.get(key)

    def keep(self, key: Hashable, value: V) -> None:
        if self.key is key or self.key == key:
            self.value = value
        elif self.more is None:
            self.more = {key: value}
        else:
            self.more[key] = value
