// A typed client over the generated documents: the compiler checks variables and results
// against schema.graphql (`npm run codegen && npm run typecheck`).
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { print } from "graphql";

import {
  ChainDocument,
  DeclareClaimDocument,
  SessionGraphDocument,
  TraceDocument,
} from "./generated/graphql.js";

export class GatewayError extends Error {}

export async function request<TResult, TVariables>(
  url: string,
  document: TypedDocumentNode<TResult, TVariables>,
  variables: TVariables,
  token?: string,
): Promise<TResult> {
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  if (token !== undefined) headers["Authorization"] = `Bearer ${token}`;
  const response = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ query: print(document), variables }),
  });
  const body = (await response.json()) as { data?: TResult; errors?: { message: string }[] };
  if (body.errors !== undefined || body.data === undefined) {
    throw new GatewayError(body.errors?.map((error) => error.message).join("; ") ?? "no data");
  }
  return body.data;
}

/** Lists a session's steps, then asks whether one of its nodes traces back to the goal. */
export async function explore(url: string, sessionId: string, nodeId: string): Promise<string[]> {
  const { session } = await request(url, SessionGraphDocument, { sessionId, first: 50 });
  if (session.__typename !== "Session") throw new GatewayError(session.message);
  const lines = session.nodes.nodes.map((node) => `${node.label} ${node.id}: ${node.excerpt}`);

  const { getChain } = await request(url, ChainDocument, {
    nodeId,
    kind: "VIEW_PRODUCING_CODE",
    sessionId,
  });
  if (getChain.__typename === "Chain") lines.push(`producing code: ${getChain.total} node(s)`);

  const { traceProvenance } = await request(url, TraceDocument, { nodeId, sessionId });
  if (traceProvenance.__typename === "ProvenanceTrace") {
    // The witness: every stored edge from the node up to the goal.
    const hops = traceProvenance.path.map((step) => `${step.viaEdge}→${step.node.label}`);
    lines.push(`${traceProvenance.broken ? "broken" : "traceable"}: ${hops.join(" ")}`);
  }
  return lines;
}

/** Declares a claim citing one evidence passage; returns its id or the rejection to act on. */
export async function cite(url: string, sessionId: string, evidenceId: string): Promise<string> {
  const { declareClaim } = await request(url, DeclareClaimDocument, {
    input: {
      sessionId,
      content: "TP53 drives the effect",
      claimType: "finding",
      confidence: "high",
      locator: "§2",
      citesEvidence: [{ alias: "e1", id: evidenceId }],
    },
  });
  switch (declareClaim.__typename) {
    case "ClaimDeclared":
      return declareClaim.claimId;
    case "DeclareRejected":
      throw new GatewayError(declareClaim.instruction ?? declareClaim.message);
    default:
      throw new GatewayError(`${declareClaim.code}: ${declareClaim.message}`);
  }
}
