// Opens the gateway's playground in headless Chromium with every non-loopback request blocked,
// runs the default document and keeps a screenshot.
// Usage: node e2e/playground.mjs <playground url> <text the result must show> <screenshot.png>
// Prints one JSON line: {loadedFrom, blocked, result, shown}; exits 1 on failure (the page
// fails to load, the schema's introspection fails, the result never shows).
import { chromium } from "playwright-core";

const [url, expected, screenshot] = process.argv.slice(2);
const WAIT_MS = 30_000; // a bound, not an expectation

// As root on this machine Chromium needs these flags; the background-networking ones stop its
// own calls home, and the resolver rule makes any non-loopback name unresolvable.
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

const browser = await chromium.launch({
  executablePath: process.env.GATEWAY_TEST_CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: FLAGS,
  timeout: WAIT_MS,
});
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const blocked = [];
  const loadedFrom = new Set();
  await context.route("**/*", (route) => {
    const target = new URL(route.request().url());
    if (target.hostname === "127.0.0.1") {
      loadedFrom.add(target.pathname);
      return route.continue();
    }
    blocked.push(target.href);
    return route.abort("internetdisconnected");
  });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  const pageErrors = [];
  page.on("pageerror", (error) => pageErrors.push(String(error)));

  const introspected = page.waitForResponse(
    (response) => (response.request().postData() ?? "").includes("IntrospectionQuery"),
  );
  await page.goto(url, { waitUntil: "load" });
  const schema = await (await introspected).json();
  if (schema.data?.__schema === undefined) {
    throw new Error(`introspection failed: ${JSON.stringify(schema)}`);
  }
  await page.locator(".graphiql-query-editor .CodeMirror").waitFor();
  const editor = await page.locator(".graphiql-query-editor .CodeMirror").innerText();
  if (!editor.includes("query SessionChain")) throw new Error(`no default document: ${editor}`);

  const answered = page.waitForResponse(
    (response) =>
      response.request().method() === "POST" &&
      (response.request().postData() ?? "").includes("SessionChain"),
  );
  await page.locator(".graphiql-execute-button").click();
  const result = await (await answered).json();
  const pane = page.locator(".graphiql-response .CodeMirror");
  await pane.filter({ hasText: expected }).waitFor();
  const shown = await pane.innerText();
  await page.screenshot({ path: screenshot });

  if (pageErrors.length > 0) throw new Error(`page errors: ${pageErrors.join("; ")}`);
  console.log(JSON.stringify({ loadedFrom: [...loadedFrom].sort(), blocked, result, shown }));
} finally {
  await browser.close();
}
