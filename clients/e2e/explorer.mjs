// Opens the session explorer in headless Chromium with every non-loopback request blocked, on a
// session the caller recorded, and drives it like a person: open the session with the read
// token, click the report, run a chain, run a trace, unfold the scopes, watch it grow.
// Usage: node e2e/explorer.mjs <gateway url> <session> <read token> <internal token>
//          <report id> <screenshot prefix>
// Prints one JSON line with what it saw and how long each step took; exits 1 on failure.
import { chromium } from "playwright-core";

const [base, session, readToken, internalToken, reportId, prefix] = process.argv.slice(2);
const WAIT_MS = 120_000; // a bound, not an expectation
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];

async function graphql(query, variables) {
  const response = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${internalToken}` },
    body: JSON.stringify({ query, variables }),
  });
  return response.json();
}

// Clicks the node where it is drawn, as a person would (not through the page's hooks).
async function clickNode(page, id) {
  const box = await page.locator("#graph").boundingBox();
  const at = await page.evaluate((nodeId) => {
    const cy = window.explorer.cy;
    const node = cy.getElementById(nodeId);
    cy.center(node);
    cy.zoom({ level: Math.max(cy.zoom(), 0.9), renderedPosition: node.renderedPosition() });
    return node.renderedPosition();
  }, id);
  const started = Date.now();
  await page.mouse.click(box.x + at.x, box.y + at.y);
  await page.waitForFunction((nodeId) => document.getElementById("panel").dataset.ready === nodeId, id);
  return Date.now() - started;
}

const browser = await chromium.launch({
  executablePath: process.env.GATEWAY_TEST_CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: FLAGS,
  timeout: WAIT_MS,
});
try {
  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  const blocked = [];
  const loadedFrom = new Set();
  const tokensSent = new Set();
  await context.route("**/*", (route) => {
    const target = new URL(route.request().url());
    if (target.hostname !== "127.0.0.1") {
      blocked.push(target.href);
      return route.abort("internetdisconnected");
    }
    loadedFrom.add(target.pathname);
    const authorization = route.request().headers().authorization;
    if (authorization) tokensSent.add(authorization);
    return route.continue();
  });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  const pageErrors = [];
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  page.on("console", (message) => message.type() === "error" && pageErrors.push(message.text()));

  await page.goto(`${base}/explorer/`, { waitUntil: "load" });
  await page.waitForFunction(() => window.explorer !== undefined);
  await page.fill("#token", readToken);
  await page.dispatchEvent("#token", "change");
  await page.fill("#session", session);
  const opening = Date.now();
  await page.click("#open");
  await page.waitForFunction((s) => window.explorer.state.session === s, session);
  const openMs = Date.now() - opening;
  const drawn = await page.evaluate(() => ({
    firstRenderMs: window.explorer.firstRenderMs,
    timings: window.explorer.timings,
    nodes: window.explorer.cy.nodes().length,
    edges: window.explorer.cy.edges().length,
    model: window.explorer.state.nodes.size,
    folded: window.explorer.cy.nodes(".folded").length,
  }));
  await page.screenshot({ path: `${prefix}-overview.png` });

  const clickMs = await clickNode(page, reportId);
  // chainExists answers after the panel is drawn; then the buttons are greyed or not.
  await page.waitForFunction((id) => document.getElementById("panel").dataset.checked === id, reportId);
  const buttons = await page.$$eval("#panel .actions button", (all) =>
    all.map((b) => ({ kind: b.dataset.kind, enabled: !b.disabled })),
  );
  const chainStarted = Date.now();
  await page.click('#panel button[data-kind="VIEW_CITED_PAPER"]');
  await page.waitForFunction(() => window.explorer.lastChain !== undefined);
  const chainMs = Date.now() - chainStarted;
  const chain = await page.evaluate(() => ({
    nodes: window.explorer.lastChain.nodes.map((n) => n.id),
    lit: window.explorer.cy.elements(".hl").length,
  }));
  await page.waitForTimeout(400);
  await page.screenshot({ path: `${prefix}-chain.png` });

  const traceStarted = Date.now();
  await page.click("#panel button.trace");
  await page.waitForFunction(() => window.explorer.lastTrace !== undefined);
  const traceMs = Date.now() - traceStarted;
  await page.waitForTimeout(400);
  const trace = await page.evaluate(() => ({
    broken: window.explorer.lastTrace.broken,
    truncated: window.explorer.lastTrace.truncated,
    reason: window.explorer.lastTrace.reason,
    withPath: window.explorer.lastTrace.withPath,
    steps: (window.explorer.lastTrace.path || window.explorer.lastTrace.chain).map((s) => s.node.id),
    litNodes: window.explorer.cy.nodes(".hl").map((n) => n.id()),
    litEdges: window.explorer.cy.edges(".hl").length,
    verdict: document.querySelector("#result .verdict").textContent,
  }));
  await page.screenshot({ path: `${prefix}-trace.png` });

  await page.click("#clear");
  const unfoldStarted = Date.now();
  await page.click("#fold");
  await page.waitForFunction(() => window.explorer.cy.nodes(":parent").length > 0 || window.explorer.cy.nodes(".folded").length === 0);
  const unfoldMs = Date.now() - unfoldStarted;
  const unfolded = await page.evaluate(() => ({
    timings: window.explorer.timings,
    boxes: window.explorer.cy.nodes(":parent").length,
    folded: window.explorer.cy.nodes(".folded").length,
    nodes: window.explorer.cy.nodes().length,
  }));
  await page.evaluate(() => window.explorer.cy.fit(undefined, 30));
  await page.screenshot({ path: `${prefix}-unfolded.png` });

  // Live growth: the agent's control plane records a new step while the page is open.
  await page.waitForFunction(() => window.explorer.live === true);
  const liveStarted = Date.now();
  const observed = await graphql(
    `mutation($input: ObserveExecutionInput!) { observeExecution(input: $input) { __typename } }`,
    {
      input: {
        sessionId: session, executionId: "live-exec", turnId: "t-live", tool: "run_python",
        codeHash: "sha256:live", status: "succeeded", startedAt: "2027-01-01T00:00:00Z",
        finishedAt: "2027-01-01T00:00:01Z",
        producedArtifacts: [{ artifactId: "live-figure", version: 1 }],
      },
    },
  );
  await page.waitForFunction(() => window.explorer.cy.getElementById("Artifact:live-figure#v1").nonempty());
  const liveMs = Date.now() - liveStarted;
  await page.evaluate(() => {
    const cy = window.explorer.cy;
    const grown = ["ToolCall:subtask:live-exec", "Code:live-exec", "Artifact:live-figure#v1"]
      .reduce((all, id) => all.union(cy.getElementById(id)), cy.collection());
    cy.fit(grown, 250);
  });
  await page.screenshot({ path: `${prefix}-live.png` });

  console.log(JSON.stringify({
    blocked, loadedFrom: [...loadedFrom].sort(), tokensSent: [...tokensSent], pageErrors,
    openMs, drawn, clickMs, buttons, chainMs, chain, traceMs, trace, unfoldMs, unfolded,
    observed, liveMs,
  }));
} finally {
  await browser.close();
}
