"""Neo4j comparison (written once the adapter lands)."""
