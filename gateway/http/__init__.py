"""The HTTP edge: the Starlette app and its middleware, GraphQL over HTTP, the playground, the
explorer, and the uvicorn protocol the server runs."""
