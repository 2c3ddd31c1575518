// The browser side of package replaytest: drives ReplayWeb.page in a
// Chromium that replaytest started, through puppeteer-core.
//
//   node driver.js WS-ENDPOINT BASE-URL
//
// Reads one JSON request a line on stdin and answers each with one JSON
// line on stdout, in order:
//
//   {"op": "load", "source": URL, "coll": ID, "timeoutMs": N}
//       opens BASE-URL/?source=URL in a new tab and waits until the
//       service worker answers /w/api/c/ID; answers {"ms": N, "info": {...}}.
//   {"op": "fetch", "paths": [PATH, ...]}
//       fetches each path (/w/ID/TSid_/URL) from the service worker, from
//       the first tab; answers {"results": [{"status", "url", "redirected",
//       "headers": [[name, value], ...], "body": BASE64} or {"error"}]}.
//   {"op": "frames", "path": PATH, "waitMs": N}
//       opens PATH in a new tab, waits until 2 s pass without traffic, and
//       answers {"requests": [{"url", "status", "sha256"}, ...], "href"}:
//       every response the tab's frames got, in order, with the SHA-256 of
//       its body (which captures a replayed page loads), and the tab's URL
//       once quiet (where ReplayWeb.page's view ended).
//
// An answer that failed is {"error": MESSAGE}. The driver never starts or
// stops the browser; it only disconnects.
"use strict";

const puppeteer = require("puppeteer-core");
const readline = require("readline");
const crypto = require("crypto");

const [wsEndpoint, base] = process.argv.slice(2);

// Fetches run from the first tab: every tab of the origin is controlled by
// the same service worker, which serves every loaded collection.
let controlTab = null;

async function load({ source, coll, timeoutMs }) {
  const started = Date.now();
  const deadline = started + (timeoutMs || 120000);
  const tab = await browser.newPage();
  tab.on("pageerror", (e) => process.stderr.write(`driver: page error: ${e.message}\n`));
  await tab.goto(`${base}/?source=${encodeURIComponent(source)}`, { waitUntil: "load" });
  for (;;) {
    const r = await tab.evaluate(async (coll) => {
      if (!navigator.serviceWorker.controller) {
        return { status: 0 };
      }
      const resp = await fetch(`/w/api/c/${coll}`, { cache: "no-store" });
      return { status: resp.status, text: await resp.text() };
    }, coll);
    if (r.status === 200) {
      if (!controlTab) {
        controlTab = tab;
      } else {
        await tab.close();
      }
      return { ms: Date.now() - started, info: JSON.parse(r.text) };
    }
    if (Date.now() > deadline) {
      await tab.close();
      throw new Error(`${source}: collection ${coll} not loaded after ${Date.now() - started} ms (last status ${r.status})`);
    }
    await new Promise((res) => setTimeout(res, 100));
  }
}

async function fetchAll({ paths }) {
  if (!controlTab) {
    throw new Error("fetch before any load");
  }
  // A few at a time: the service worker reads each record from the
  // collection's store.
  const results = new Array(paths.length);
  let next = 0;
  async function worker() {
    while (next < paths.length) {
      const i = next++;
      const t0 = Date.now();
      results[i] = await controlTab.evaluate(async (path) => {
        try {
          const resp = await fetch(path, { cache: "no-store" });
          const buf = new Uint8Array(await resp.arrayBuffer());
          let bin = "";
          for (let j = 0; j < buf.length; j += 0x8000) {
            bin += String.fromCharCode.apply(null, buf.subarray(j, j + 0x8000));
          }
          return {
            status: resp.status,
            url: resp.url,
            redirected: resp.redirected,
            headers: [...resp.headers.entries()],
            body: btoa(bin),
          };
        } catch (e) {
          return { error: String(e) };
        }
      }, paths[i]);
      results[i].ms = Date.now() - t0;
    }
  }
  await Promise.all([worker(), worker(), worker(), worker()]);
  return { results };
}

async function frames({ path, waitMs }) {
  const tab = await browser.newPage();
  const requests = [];
  const pending = [];
  let last = Date.now();
  tab.on("request", () => {
    last = Date.now();
  });
  tab.on("response", (resp) => {
    last = Date.now();
    const entry = { url: resp.url(), status: resp.status() };
    requests.push(entry);
    pending.push(
      resp
        .buffer()
        .then((b) => {
          entry.sha256 = crypto.createHash("sha256").update(b).digest("hex");
        })
        .catch(() => {}),
    );
  });
  let href;
  try {
    const deadline = Date.now() + (waitMs || 30000);
    await tab.goto(base + path, { waitUntil: "domcontentloaded", timeout: waitMs || 30000 });
    // ReplayWeb.page keeps a connection open, so "network idle" never
    // comes: quiet is 2 s without a request or response.
    while (Date.now() - last < 2000 && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 200));
    }
    // A body still streaming is left out rather than waited for.
    await Promise.race([Promise.all(pending), new Promise((res) => setTimeout(res, 3000))]);
    href = tab.url();
  } finally {
    await tab.close();
  }
  return { requests, href };
}

const ops = { load, fetch: fetchAll, frames };
let browser;

async function main() {
  browser = await puppeteer.connect({ browserWSEndpoint: wsEndpoint, defaultViewport: null });
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    let answer;
    try {
      const req = JSON.parse(line);
      const op = ops[req.op];
      if (!op) {
        throw new Error(`unknown op ${req.op}`);
      }
      answer = await op(req);
    } catch (e) {
      answer = { error: String(e && e.stack ? e.stack : e) };
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
  browser.disconnect();
}

main().catch((e) => {
  process.stderr.write(`driver: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
