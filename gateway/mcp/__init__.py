"""The agent's tools over the Model Context Protocol (SPEC §10).

* ``arguments`` — each tool's input as a pydantic model: its JSON schema and its validation;
* ``tools`` — the tools (names, descriptions written for an LLM, which role may see them) and
  the call that runs one: it validates the arguments, calls the same use case as the GraphQL
  field and turns a ``DomainError`` into a structured tool error;
* ``server`` — the MCP server for stdio (``science-memory mcp``) and for streamable HTTP
  (mounted on the gateway at ``/mcp``, behind the same bearer tokens).
"""
