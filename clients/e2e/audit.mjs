// Runs the GraphQL-over-HTTP audit suite of the `graphql-http` package against a server.
// Usage: node e2e/audit.mjs <graphql url> [bearer token]
// Prints one JSON line: {results: [{id, name, status, reason?}]}; `status` is ok, notice
// (MAY), warn (SHOULD) or error (MUST).
import { auditServer } from "graphql-http";

const [url, token] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const authorised = (input, init = {}) =>
  fetch(input, { ...init, headers: { ...headers, ...Object.fromEntries(new Headers(init.headers)) } });

const results = await auditServer({ url, fetchFn: authorised });
console.log(
  JSON.stringify({
    results: results.map(({ id, name, status, reason }) => ({ id, name, status, reason })),
  }),
);
