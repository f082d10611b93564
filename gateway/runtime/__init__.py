"""The running gateway's state: the active store and its toggle, the outbox that keeps writes while
Neo4j is unreachable, their replay, and the settings saved across restarts."""
