// Uses a gateway's GraphiQL page in headless Chromium as a person would: opens it, waits
// for the editor, then for each operation puts it in the query editor, presses the run
// button and waits until the response pane holds an answer that stops changing (for a
// subscription: its last event). Prints one JSON object to stdout:
//   { "title": ..., "answers": [<response pane text per operation>], "errors": [<page
//     errors and console errors>], "screenshot": <path or null> }
// Usage: node graphiql.mjs URL OPERATION... [--wait-for TEXT]... [--screenshot PATH]
// `--wait-for` pairs with the operations in order: the answer must contain that text.
// CHROMIUM (default /usr/bin/chromium) names the browser.
import puppeteer from "puppeteer-core";

const args = process.argv.slice(2);
const url = args.shift();
const operations = [];
const waitFor = [];
let screenshot = null;
while (args.length) {
  const arg = args.shift();
  if (arg === "--wait-for") waitFor.push(args.shift());
  else if (arg === "--screenshot") screenshot = args.shift();
  else operations.push(arg);
}
if (!url || operations.length === 0) {
  console.error("usage: node graphiql.mjs URL OPERATION... [--wait-for TEXT]... [--screenshot PATH]");
  process.exit(2);
}

const errors = [];
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  // Root in a container has no user namespace for Chromium's sandbox.
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
});
// Every wait is bounded: the test fails with what it saw rather than hanging.
const killer = setTimeout(() => {
  console.error("graphiql.mjs: gave up after 90 s");
  process.exit(3);
}, 90_000);
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`);
  });
  page.on("requestfailed", (r) => errors.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`));
  page.on("response", (r) => {
    if (r.status() >= 400) errors.push(`status ${r.status()}: ${r.url()}`);
  });
  const response = await page.goto(url, { waitUntil: "load", timeout: 30_000 });
  if (!response || response.status() !== 200) {
    throw new Error(`GET ${url}: ${response ? response.status() : "no response"}`);
  }
  await page.waitForSelector(".graphiql-query-editor .CodeMirror", { timeout: 30_000 });
  const answers = [];
  for (const [i, operation] of operations.entries()) {
    await page.evaluate(() => {
      document.querySelector(".graphiql-response .CodeMirror").CodeMirror.setValue("");
    });
    await page.evaluate((text) => {
      document.querySelector(".graphiql-query-editor .CodeMirror").CodeMirror.setValue(text);
    }, operation);
    // GraphiQL parses the editor's text after a short debounce, and its fetcher picks
    // the WebSocket by that parse: run only once it has caught up.
    await new Promise((r) => setTimeout(r, 1000));
    await page.click(".graphiql-execute-button");
    answers.push(await settled(page, waitFor[i] ?? "{"));
  }
  if (screenshot) await page.screenshot({ path: screenshot });
  const title = await page.title();
  console.log(JSON.stringify({ title, answers, errors, screenshot }));
} finally {
  clearTimeout(killer);
  await browser.close();
}

// The response pane's text once it contains `needle` and has not changed for 1 s
// (polled every 100 ms, at most 30 s).
async function settled(page, needle) {
  let last = null;
  let stableSince = Date.now();
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const text = await page.evaluate(
      () => document.querySelector(".graphiql-response .CodeMirror").CodeMirror.getValue(),
    );
    if (text !== last) {
      last = text;
      stableSince = Date.now();
    } else if (text.includes(needle) && Date.now() - stableSince >= 1000) {
      return text;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the response pane never settled on an answer with ${JSON.stringify(needle)}; last: ${last}`);
}
