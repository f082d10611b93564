"""Session exports: PROV-JSON, PROV-JSON-LD, GraphML and Mermaid."""
