// Federation for real: composes the ScienceMemory subgraph (its `_service { sdl }`) with a small
// "reviews" subgraph that extends `Artifact @key(fields: "id")`, and runs Apollo Gateway over
// both, everything on 127.0.0.1.
// Usage: node federation/supergraph.mjs <ScienceMemory /graphql url> <reviews JSON>
//   reviews JSON: {"<Artifact id>": [{"score": 4, "comment": "…"}], …}
// Prints one JSON line {gateway, reviews} once both servers listen (or {errors} when the
// composition fails, exit 1), then serves until it is terminated.
import { composeServices } from "@apollo/composition";
import { ApolloGateway } from "@apollo/gateway";
import { ApolloServer } from "@apollo/server";
import { ApolloServerPluginInlineTraceDisabled } from "@apollo/server/plugin/disabled";
import { startStandaloneServer } from "@apollo/server/standalone";
import { buildSubgraphSchema } from "@apollo/subgraph";
import { parse } from "graphql";

const [memoryUrl, reviewsJson] = process.argv.slice(2);
const reviewsByArtifact = JSON.parse(reviewsJson);
const LOOPBACK = { host: "127.0.0.1", port: 0 };

const REVIEWS_SDL = parse(`
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])

  type Query {
    "Every review, in the order they were written."
    reviews: [Review!]!
  }

  type Review {
    score: Int!
    comment: String!
    artifact: Artifact!
  }

  type Artifact @key(fields: "id") {
    id: ID!
    reviews: [Review!]!
  }
`);

function reviewsOf(id) {
  return (reviewsByArtifact[id] ?? []).map((review) => ({ ...review, artifact: { id } }));
}

const reviewResolvers = {
  Query: {
    reviews: () => Object.keys(reviewsByArtifact).flatMap(reviewsOf),
  },
  Artifact: {
    __resolveReference: (reference) => ({ id: reference.id }),
    reviews: (artifact) => reviewsOf(artifact.id),
  },
};

async function memorySdl() {
  const response = await fetch(memoryUrl, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ query: "{ _service { sdl } }" }),
  });
  const body = await response.json();
  if (body.errors) throw new Error(`_service failed: ${JSON.stringify(body.errors)}`);
  return body.data._service.sdl;
}

const reviewsServer = new ApolloServer({
  schema: buildSubgraphSchema({ typeDefs: REVIEWS_SDL, resolvers: reviewResolvers }),
  plugins: [ApolloServerPluginInlineTraceDisabled()],
});
const reviews = await startStandaloneServer(reviewsServer, { listen: LOOPBACK });

const composed = composeServices([
  { name: "memory", typeDefs: parse(await memorySdl()), url: memoryUrl },
  { name: "reviews", typeDefs: REVIEWS_SDL, url: reviews.url },
]);
if (composed.errors) {
  console.log(JSON.stringify({ errors: composed.errors.map((error) => error.message) }));
  await reviewsServer.stop();
  process.exit(1);
}

const gatewayServer = new ApolloServer({
  gateway: new ApolloGateway({ supergraphSdl: composed.supergraphSdl }),
});
const gateway = await startStandaloneServer(gatewayServer, { listen: LOOPBACK });
console.log(JSON.stringify({ gateway: gateway.url, reviews: reviews.url }));

async function shutdown() {
  await gatewayServer.stop();
  await reviewsServer.stop();
  process.exit(0);
}
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
