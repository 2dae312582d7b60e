// Looks at pages of the operator's web view in headless Chromium as a person would: opens
// each, waits for the selectors it must show, checks every image was drawn, and saves a
// screenshot of the whole page. Prints one JSON object to stdout:
//   { "pages": [{ "url", "title", "found": {selector: count}, "images": [{alt, width,
//     height}], "text": <visible text>, "screenshot": <path> }], "errors": [<page errors,
//     console errors, failed requests, HTTP >= 400>] }
// Usage: node webview.mjs OUT_DIR URL SELECTOR[,SELECTOR...] [URL SELECTORS]...
// Screenshots are OUT_DIR/page-<n>.png. CHROMIUM (default /usr/bin/chromium) names the browser.
import puppeteer from "puppeteer-core";

const [outDir, ...rest] = process.argv.slice(2);
if (!outDir || rest.length === 0 || rest.length % 2 !== 0) {
  console.error("usage: node webview.mjs OUT_DIR URL SELECTOR[,SELECTOR...] [URL SELECTORS]...");
  process.exit(2);
}
const visits = [];
for (let i = 0; i < rest.length; i += 2) visits.push({ url: rest[i], selectors: rest[i + 1].split(",") });

const errors = [];
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  // Root in a container has no user namespace for Chromium's sandbox.
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
});
// Every wait is bounded: the test fails with what it saw rather than hanging.
const killer = setTimeout(() => {
  console.error("webview.mjs: gave up after 90 s");
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
  const pages = [];
  for (const [n, visit] of visits.entries()) {
    const response = await page.goto(visit.url, { waitUntil: "load", timeout: 30_000 });
    if (!response || response.status() !== 200) {
      throw new Error(`GET ${visit.url}: ${response ? response.status() : "no response"}`);
    }
    const found = {};
    for (const selector of visit.selectors) {
      await page.waitForSelector(selector, { timeout: 10_000 }).catch(() => {});
      found[selector] = await page.$$eval(selector, (els) => els.length);
    }
    // An <img> that failed to decode has no natural size.
    const images = await page.$$eval("img", (imgs) =>
      imgs.map((i) => ({ alt: i.alt, width: i.naturalWidth, height: i.naturalHeight, complete: i.complete })),
    );
    const text = await page.evaluate(() => document.body.innerText);
    const screenshot = `${outDir}/page-${n}.png`;
    await page.screenshot({ path: screenshot, fullPage: true });
    pages.push({ url: visit.url, title: await page.title(), found, images, text, screenshot });
  }
  console.log(JSON.stringify({ pages, errors }));
} finally {
  clearTimeout(killer);
  await browser.close();
}
