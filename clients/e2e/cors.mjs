// Calls the gateway from pages on other loopback origins in headless Chromium, as a frontend
// would: a POST with a bearer token and a JSON body, which needs a CORS preflight.
// Usage: node e2e/cors.mjs <graphql url> <token> <page url>...
// Prints one JSON line: {calls: [{page, ok, status, body, error}]}, two calls per page (the
// second may reuse the cached preflight).
import { chromium } from "playwright-core";

const [graphql, token, ...pages] = process.argv.slice(2);
const WAIT_MS = 30_000; // a bound, not an expectation
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];

const browser = await chromium.launch({
  executablePath: process.env.GATEWAY_TEST_CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: FLAGS,
  timeout: WAIT_MS,
});
try {
  const calls = [];
  for (const url of pages) {
    const page = await browser.newPage();
    page.setDefaultTimeout(WAIT_MS);
    await page.goto(url, { waitUntil: "load" });
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const call = await page.evaluate(
        async ([endpoint, bearer]) => {
          try {
            const response = await fetch(endpoint, {
              method: "POST",
              headers: { "Content-Type": "application/json", Authorization: `Bearer ${bearer}` },
              body: JSON.stringify({ query: "{ health { status } }" }),
            });
            return { ok: true, status: response.status, body: await response.json() };
          } catch (error) {
            return { ok: false, error: String(error) };
          }
        },
        [graphql, token],
      );
      calls.push({ page: url, ...call });
    }
    await page.close();
  }
  console.log(JSON.stringify({ calls }));
} finally {
  await browser.close();
}
