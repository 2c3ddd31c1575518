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
//   {"op": "file", "url": FILE-URL, "width": W, "height": H, "media": M,
//    "screenshot": PNG, "pdf": PDF, "timeoutMs": N}
//       opens a page that must stand alone (file://) in a new tab with a
//       viewport of W x H (1280 x 800), laid out for media M ("print" or
//       the screen), waits for its load event, writes a full-page PNG
//       screenshot and an A4 PDF when asked, and answers {"requests":
//       [{"url", "method", "type"}], "console": [{"type", "text"}],
//       "errors": [MESSAGE], "title", "text", "width", "height",
//       "clientWidth", "wide": [ELEMENT], "svgs":
//       [{"id", "label", "width", "height", "texts": [{"text", "x", "y",
//       "w", "h", "px"}]}]}: every request it made, what it logged, its
//       uncaught exceptions, its innerText, the document's scroll size
//       and the width it is laid out in, the innermost elements reaching
//       beyond that width (at most 10), and each svg element's size with
//       its text elements' boxes and font sizes as drawn (scaled with
//       the svg).
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

async function file({ url, width, height, media, screenshot, pdf, timeoutMs }) {
  const tab = await browser.newPage();
  const requests = [];
  const logged = [];
  const errors = [];
  tab.on("request", (r) => requests.push({ url: r.url(), method: r.method(), type: r.resourceType() }));
  tab.on("console", (m) => logged.push({ type: m.type(), text: m.text() }));
  tab.on("pageerror", (e) => errors.push(String(e && e.message ? e.message : e)));
  try {
    await tab.setViewport({ width: width || 1280, height: height || 800 });
    await tab.emulateMediaType(media || null);
    await tab.goto(url, { waitUntil: "load", timeout: timeoutMs || 60000 });
    const seen = await tab.evaluate(() => {
      const svgs = [...document.querySelectorAll("svg")].map((svg) => {
        const box = svg.getBoundingClientRect();
        // A chart drawn in a viewBox and scaled to fit scales its text.
        const vb = svg.viewBox && svg.viewBox.baseVal;
        const scale = vb && vb.width ? box.width / vb.width : 1;
        const texts = [...svg.querySelectorAll("text")].map((t) => {
          const r = t.getBoundingClientRect();
          const px = parseFloat(getComputedStyle(t).fontSize) * scale;
          return { text: t.textContent, x: r.left - box.left, y: r.top - box.top, w: r.width, h: r.height, px };
        });
        return { id: svg.id, label: svg.getAttribute("aria-label") || "", width: box.width, height: box.height, texts };
      });
      const root = document.documentElement;
      // The innermost elements that reach beyond the width the page is
      // laid out in: what makes it scroll sideways.
      const wide = [];
      for (const el of document.body ? document.body.querySelectorAll("*") : []) {
        const r = el.getBoundingClientRect();
        if (r.right > root.clientWidth + 0.5 && ![...el.children].some((c) => c.getBoundingClientRect().right > root.clientWidth + 0.5)) {
          const name = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className && typeof el.className === "string" ? "." + el.className.split(" ").join(".") : "");
          wide.push(`${name} (right edge ${Math.round(r.right)} px): ${(el.textContent || "").trim().slice(0, 60)}`);
          if (wide.length >= 10) {
            break;
          }
        }
      }
      return {
        wide,
        title: document.title,
        text: document.body ? document.body.innerText : "",
        width: root.scrollWidth,
        height: root.scrollHeight,
        clientWidth: root.clientWidth,
        svgs,
      };
    });
    if (screenshot) {
      await tab.screenshot({ path: screenshot, fullPage: true });
    }
    if (pdf) {
      await tab.pdf({ path: pdf, format: "A4", printBackground: true, preferCSSPageSize: true });
    }
    return { requests, console: logged, errors, ...seen };
  } finally {
    await tab.close();
  }
}

const ops = { load, fetch: fetchAll, frames, file };
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
