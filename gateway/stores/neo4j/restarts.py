"""Plans made again after a restart of the server that the driver reconnected to unseen.

Neo4j plans a statement the first time it sees its text (on a busy machine a second or more for
a chain walk) and keeps the plan until it stops. The write and trace statements are planned at
connect (``Neo4jStore._warm_plans``); a read statement (a walk of some kind from some label, a
listing) is planned by the first request that sends it. On a server that restarted, every
statement is planned again that way: ``chainExists`` of all 22 kinds took 5-10 s and ran out
of its time (``QueryLimitExceeded``) three times in four. The driver reconnects to a restarted
server without telling, and a quick restart with no request meanwhile is never seen as an
outage. So the store asks the server when it started (every ``CHECK_SECONDS``); when that
changed, it plans again what it planned at connect and the read statements it sent lately
(``RecentReads``), the most recent first, but those a request sent again meanwhile: each is
sent again as it was last sent (the plan cache keys on the types and
sizes of its parameters, and a plan made by ``EXPLAIN`` is cached apart from the one its run
uses), a read like any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from typing import LiteralString

CHECK_SECONDS: Final = 2.0
"""How often the server is asked when it started."""

RECENT: Final = 256
"""How many distinct read statements are kept to be planned again: chainExists of every kind
from three labels sends 66."""

STARTED: Final[LiteralString] = (
    "CALL dbms.queryJmx('java.lang:type=Runtime') YIELD attributes "
    "RETURN attributes.StartTime.value AS started"
)
"""When the server's JVM started (milliseconds since the epoch): another value, another start."""


class RecentReads:
    """The read statements sent lately, each with the parameters and access mode it was last
    sent with; the least recently sent is forgotten first. ``restarted`` marks a restart: a
    statement sent after it (``sent_again``) was planned again by its own request."""

    def __init__(self, size: int = RECENT) -> None:
        self._size = size
        self._sent: dict[LiteralString, tuple[dict[str, Any], str, int]] = {}
        self._restarts = 0

    def note(self, statement: LiteralString, params: dict[str, Any], access: str) -> None:
        self._sent.pop(statement, None)
        self._sent[statement] = (params, access, self._restarts)
        if len(self._sent) > self._size:
            del self._sent[next(iter(self._sent))]

    def restarted(self) -> list[tuple[LiteralString, dict[str, Any], str]]:
        """Mark a restart; the statements sent before it, the most recent first."""
        self._restarts += 1
        return [
            (statement, params, access)
            for statement, (params, access, _) in reversed(self._sent.items())
        ]

    def sent_again(self, statement: LiteralString) -> bool:
        sent = self._sent.get(statement)
        return sent is not None and sent[2] == self._restarts
