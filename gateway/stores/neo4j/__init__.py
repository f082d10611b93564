"""The Neo4j backend: ``Neo4jStore`` over the official async driver."""

from gateway.stores.neo4j.store import Neo4jStore

__all__ = ["Neo4jStore"]
