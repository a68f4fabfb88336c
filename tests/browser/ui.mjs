// The web UI in a real browser: Debian's chromium driven by Playwright,
// against a running toolscore. tests/ui_browser.rs starts the service,
// exports the traces and runs this script:
//
//   node tests/browser/ui.mjs BASE_URL SEEDED_TRACE_ID ARTIFACTS_DIR EXPECT_JSON
//
// EXPECT_JSON (text, or @file) describes the trace exported while the
// overview is open:
//   {"trace_id": "<32 hex>", "tool_calls": ["a", "b"],
//    "scores": [{"evaluator_id", "status", "passed", "score"}],
//    "mismatch": "<the failing argument value>",
//    "search": {"service", "evaluator", "max_score"},
//    "not_found": ["<ids the search must not return>"]}
//
// Protocol: once the overview's stream is live the script prints `READY`;
// the caller exports that trace, waits until it is evaluated and writes a
// line to stdin. Every failure exits 1 with `FAIL <step>: <why>` on stderr
// and a `failed-<step>.png` screenshot. CHROMIUM overrides /usr/bin/chromium.

import { readFileSync, mkdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const WAIT_MS = 20_000;
const PHONE = { width: 390, height: 844 };
// The whole run, a backstop behind every step's own deadline.
const RUN_MS = 150_000;
const CHROME_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

class Failure extends Error {}

function check(condition, message) {
  if (!condition) throw new Failure(message);
}

function log(line) {
  process.stdout.write(`${line}\n`);
}

// Retries `probe` (which throws a Failure while it does not hold) until it
// passes or `ms` have gone by; rethrows its last failure at the deadline.
async function eventually(probe, ms = WAIT_MS) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await probe();
    } catch (e) {
      if (!(e instanceof Failure) || Date.now() >= deadline) throw e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function parseArgs(argv) {
  if (argv.length !== 4) {
    process.stderr.write('usage: ui.mjs BASE_URL SEEDED_TRACE_ID ARTIFACTS_DIR EXPECT_JSON\n');
    process.exit(2);
  }
  const [base, seeded, artifacts, expectArg] = argv;
  const text = expectArg.startsWith('@') ? readFileSync(expectArg.slice(1), 'utf8') : expectArg;
  return { base: base.replace(/\/$/, ''), seeded, artifacts, expect: JSON.parse(text) };
}

// The next line on stdin, or a failure at the deadline or end of input.
function stdinLines() {
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  return async (ms) => {
    let timer;
    const deadline = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Failure(`no line on stdin within ${ms} ms`)), ms);
    });
    try {
      const next = await Promise.race([lines.next(), deadline]);
      check(!next.done, 'stdin closed before the go-ahead line');
      return next.value;
    } finally {
      clearTimeout(timer);
    }
  };
}

// Errors the page reports: uncaught exceptions, console errors (CSP
// violations among them), failed requests to the service.
function watchErrors(page, errors) {
  page.on('pageerror', (e) => errors.push(`${page.url()}: uncaught ${e.message}`));
  page.on('console', (m) => {
    // A failed load's message names no URL; the response handler reports it.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) {
      errors.push(`${page.url()}: console error: ${m.text()}`);
    }
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) {
      errors.push(`${page.url()}: ${r.request().method()} ${r.url()} -> ${r.status()}`);
    }
  });
}

async function checkNav(page) {
  for (const [href, text] of [['/ui/', 'Overview'], ['/ui/search', 'Search']]) {
    const links = page.locator(`nav a[href="${href}"]`);
    check((await links.count()) >= 1, `${page.url()}: no <nav> link to ${href}`);
    const label = (await links.first().innerText()).trim();
    check(label === text, `${page.url()}: nav link to ${href} reads "${label}", not "${text}"`);
  }
}

async function rowIds(page, table) {
  return page.locator(`${table} tr[data-trace-id]`).evaluateAll((rows) =>
    rows.map((r) => r.getAttribute('data-trace-id')));
}

// Every row of `table`: a 32-hex id and a link to its trace page.
async function checkRows(page, table) {
  const rows = await page.locator(`${table} tr[data-trace-id]`).evaluateAll((rs) =>
    rs.map((r) => ({
      id: r.getAttribute('data-trace-id'),
      links: [...r.querySelectorAll('a')].map((a) => a.getAttribute('href')),
    })));
  for (const r of rows) {
    check(/^[0-9a-f]{32}$/.test(r.id), `${table}: data-trace-id "${r.id}" is not 32 lowercase hex`);
    check(r.links.includes(`/ui/traces/${r.id}`),
      `${table}: the row of ${r.id} has no link to /ui/traces/${r.id} (links: ${JSON.stringify(r.links)})`);
  }
}

async function overview(page, ctx) {
  const { base, seeded, expect, artifacts } = ctx;
  await page.goto(`${base}/ui/`);
  await checkNav(page);
  for (const table of ['#recent-traces', '#failing-traces']) {
    check((await page.locator(`table${table}`).count()) === 1, `no <table id="${table.slice(1)}">`);
  }
  await page.locator('#live-status').filter({ hasText: /^\s*live\s*$/ }).waitFor({ timeout: WAIT_MS })
    .catch(async () => {
      const status = await page.locator('#live-status').allInnerTexts();
      throw new Failure(`#live-status did not read "live" within ${WAIT_MS} ms (it reads ${JSON.stringify(status)})`);
    });
  await eventually(async () => {
    check((await rowIds(page, '#recent-traces')).includes(seeded),
      `the seeded trace ${seeded} is not in #recent-traces`);
  });
  check(!(await rowIds(page, '#failing-traces')).includes(seeded),
    `the seeded trace ${seeded} passes every evaluator but is in #failing-traces`);
  check(!(await rowIds(page, '#recent-traces')).includes(expect.trace_id),
    `the new trace ${expect.trace_id} is in #recent-traces before it was exported`);
  log('ok overview: live, seeded trace listed');

  log('READY');
  await ctx.nextLine(60_000);
  const row = page.locator(`#recent-traces tr[data-trace-id="${expect.trace_id}"]`);
  await row.first().waitFor({ timeout: WAIT_MS }).catch(() => {
    throw new Failure(`no row for the new trace ${expect.trace_id} in #recent-traces within ${WAIT_MS} ms, without a reload`);
  });
  const recent = await rowIds(page, '#recent-traces');
  check(recent[0] === expect.trace_id,
    `the new trace is not the top row of #recent-traces: ${JSON.stringify(recent)}`);
  check(recent.filter((id) => id === expect.trace_id).length === 1,
    `#recent-traces holds the new trace more than once: ${JSON.stringify(recent)}`);
  await page.locator(`#failing-traces tr[data-trace-id="${expect.trace_id}"]`).first()
    .waitFor({ timeout: WAIT_MS }).catch(async () => {
      throw new Failure(`the new trace fails an evaluator but no row for it reached #failing-traces within ${WAIT_MS} ms ` +
        `(rows: ${JSON.stringify(await rowIds(page, '#failing-traces'))})`);
    });
  await checkRows(page, '#recent-traces');
  await checkRows(page, '#failing-traces');
  log('ok overview: the new trace arrived live, at the top, and among the failing');
  await page.screenshot({ path: join(artifacts, 'overview.png'), fullPage: true });
}

// Every number written in `text`.
function numbersIn(text) {
  return (text.match(/-?\d+(?:\.\d+)?/g) ?? []).map(Number);
}

async function checkTracePage(page, expect) {
  const id = expect.trace_id;
  await checkNav(page);
  await eventually(async () => {
    const names = await page.locator('#tool-calls li[data-tool-name]').evaluateAll((lis) =>
      lis.map((li) => li.getAttribute('data-tool-name')));
    check(JSON.stringify(names) === JSON.stringify(expect.tool_calls),
      `#tool-calls of ${id} lists ${JSON.stringify(names)}, expected ${JSON.stringify(expect.tool_calls)}`);
  });
  check((await page.locator('ol#tool-calls').count()) === 1, '#tool-calls is not an <ol>');
  for (const s of expect.scores) {
    const sections = page.locator(`section.score[data-evaluator-id="${s.evaluator_id}"]`);
    await eventually(async () => {
      const n = await sections.count();
      check(n === 1, `${n} section.score[data-evaluator-id="${s.evaluator_id}"], expected 1`);
      const status = await sections.getAttribute('data-status');
      check(status === s.status, `the score of ${s.evaluator_id} has data-status="${status}", expected "${s.status}"`);
    });
    const passed = await sections.getAttribute('data-passed');
    check(passed === String(s.passed),
      `the score of ${s.evaluator_id} has data-passed="${passed}", expected "${s.passed}"`);
    const text = await sections.innerText();
    check(numbersIn(text).some((x) => Math.abs(x - s.score) < 1e-9),
      `the score of ${s.evaluator_id} does not show its value ${s.score}: ${JSON.stringify(text)}`);
  }
  const all = await page.locator('section.score').evaluateAll((ss) =>
    ss.map((s) => s.getAttribute('data-evaluator-id')));
  check(all.length === expect.scores.length,
    `the trace page shows scores ${JSON.stringify(all)}, expected ${JSON.stringify(expect.scores.map((s) => s.evaluator_id))}`);
  const mismatches = await page.locator('.mismatch').allInnerTexts();
  check(mismatches.length > 0, `no .mismatch element on the trace page of ${id}`);
  // One argument value differs: it is marked, and nothing that matches is.
  check(mismatches.every((t) => t.includes(expect.mismatch)),
    `the .mismatch elements should all show the failing argument value "${expect.mismatch}": ${JSON.stringify(mismatches)}`);
}

async function tracePage(page, ctx) {
  const { base, expect, artifacts } = ctx;
  const id = expect.trace_id;
  const link = page.locator(`#recent-traces tr[data-trace-id="${id}"] a[href="/ui/traces/${id}"]`).first();
  await link.click();
  await page.waitForURL(`${base}/ui/traces/${id}`, { timeout: WAIT_MS });
  await checkTracePage(page, expect);
  log('ok trace page: tool calls in order, scores, the mismatch shown');
  await page.screenshot({ path: join(artifacts, 'trace.png'), fullPage: true });
}

// Tabs from where the focus is to the form field `name` (at most 80
// presses: date inputs take one per part) and types `value` over it.
async function typeInto(page, name, value) {
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const e = document.activeElement;
      return e && e.form && e.form.id === 'search' ? e.getAttribute('name') : null;
    });
    if (focused === name) {
      const tag = await page.evaluate(() => document.activeElement.tagName);
      if (tag !== 'SELECT') await page.keyboard.press('ControlOrMeta+A');
      await page.keyboard.type(value);
      const got = await page.evaluate(() => document.activeElement.value);
      check(got === value, `typed "${value}" into the search field ${name}, which holds "${got}"`);
      return;
    }
  }
  throw new Failure(`Tab never reached the search field named ${name}`);
}

async function checkResults(page, expect) {
  await eventually(async () => {
    const ids = await rowIds(page, '#results');
    check(ids.includes(expect.trace_id),
      `#results of ${page.url()} lacks ${expect.trace_id}: ${JSON.stringify(ids)}`);
    const wrong = ids.filter((id) => expect.not_found.includes(id));
    check(wrong.length === 0,
      `#results of ${page.url()} holds ${JSON.stringify(wrong)}, which the search excludes`);
  });
  await checkRows(page, '#results');
}

async function search(page, ctx) {
  const { base, expect, artifacts } = ctx;
  await page.goto(`${base}/ui/search`);
  await checkNav(page);
  const form = page.locator('form#search');
  check((await form.count()) === 1, 'no <form id="search">');
  const method = (await form.getAttribute('method'))?.toLowerCase();
  const action = await form.getAttribute('action');
  check(method === 'get' && action === '/ui/search',
    `form#search has method="${method}" action="${action}", expected get and /ui/search`);
  const names = ['trace_id', 'service', 'root_name', 'evaluator', 'min_score', 'max_score',
    'status', 'since', 'until', 'limit'];
  for (const n of names) {
    check((await form.locator(`[name="${n}"]`).count()) === 1, `form#search has no field named ${n}`);
  }
  check((await page.locator('table#results').count()) === 1, 'no <table id="results">');
  const fields = Object.entries(expect.search);
  // Tab moves forward only: fill the fields in their order on the page.
  const order = await form.locator('[name]').evaluateAll((es) => es.map((e) => e.getAttribute('name')));
  fields.sort(([a], [b]) => order.indexOf(a) - order.indexOf(b));
  for (const [name, value] of fields) await typeInto(page, name, String(value));
  await Promise.all([
    page.waitForURL((u) => u.pathname === '/ui/search' && u.search.length > 1, { timeout: WAIT_MS }),
    page.keyboard.press('Enter'),
  ]).catch((e) => {
    throw new Failure(`Enter in the search form did not submit it (${e.message.split('\n')[0]})`);
  });
  const url = new URL(page.url());
  for (const [name, value] of fields) {
    check(url.searchParams.get(name) === String(value),
      `the search URL ${url} does not carry ${name}=${value}`);
  }
  await checkResults(page, expect);
  // Shareable: the same URL in a fresh page gives the same results.
  const fresh = await page.context().newPage();
  watchErrors(fresh, ctx.errors);
  await fresh.goto(url.toString());
  await checkResults(fresh, expect);
  for (const [name, value] of fields) {
    const got = await fresh.locator(`form#search [name="${name}"]`).inputValue();
    check(got === String(value), `the search page opened from its URL shows ${name}="${got}", expected "${value}"`);
  }
  await fresh.close();
  log(`ok search: keyboard-filled, results hold the trace, shareable as ${url.pathname}${url.search}`);
  await page.screenshot({ path: join(artifacts, 'search.png'), fullPage: true });
  return url.toString();
}

// axe-core on each page, in a context that bypasses the UI's CSP (its
// `script-src 'self'` refuses the injected script); serious and critical
// violations fail, the others are printed.
async function accessibility(browser, pages) {
  const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
  const context = await browser.newContext({ bypassCSP: true });
  const failures = [];
  try {
    for (const [name, url, ready, viewport] of pages) {
      const page = await context.newPage();
      if (viewport) await page.setViewportSize(viewport);
      await page.goto(url);
      await page.locator(ready).first().waitFor({ timeout: WAIT_MS });
      await page.addScriptTag({ path: axePath });
      const violations = await page.evaluate(async () =>
        // eslint-disable-next-line no-undef
        (await axe.run(document, { resultTypes: ['violations'] })).violations.map((v) => ({
          id: v.id, impact: v.impact, help: v.help,
          nodes: v.nodes.slice(0, 5).map((n) => `${n.target.join(' ')}: ${n.failureSummary?.split('\n').slice(1).join('; ')}`),
        })));
      for (const v of violations) {
        const line = `axe ${name}: ${v.impact} ${v.id} (${v.help}) at ${v.nodes.join(' | ')}`;
        if (v.impact === 'serious' || v.impact === 'critical') failures.push(line);
        else log(`warning ${line}`);
      }
      await page.close();
    }
  } finally {
    await context.close();
  }
  check(failures.length === 0, `accessibility violations:\n  ${failures.join('\n  ')}`);
  log(`ok accessibility: no serious or critical axe violations on ${pages.map((p) => p[0]).join(', ')}`);
}

async function phone(page, ctx) {
  const { base, expect, artifacts } = ctx;
  await page.setViewportSize(PHONE);
  await page.goto(`${base}/ui/traces/${expect.trace_id}`);
  await checkTracePage(page, expect);
  const overflow = await page.evaluate(() => {
    const width = window.innerWidth;
    const wide = [...document.body.querySelectorAll('*')]
      .filter((e) => e.getBoundingClientRect().right > width + 0.5)
      .slice(0, 8)
      .map((e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}${e.className && typeof e.className === 'string' ? `.${e.className.trim().split(/\s+/).join('.')}` : ''} (right ${Math.round(e.getBoundingClientRect().right)})`);
    return { scrollWidth: document.documentElement.scrollWidth, width, wide };
  });
  await page.screenshot({ path: join(artifacts, 'trace-phone.png'), fullPage: true });
  check(overflow.scrollWidth <= overflow.width,
    `the trace page overflows a 390 px wide phone: scrollWidth ${overflow.scrollWidth} > ${overflow.width}; ` +
    `elements past the right edge: ${overflow.wide.join(', ')}`);
  log('ok phone: the trace page fits 390 px');
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  mkdirSync(args.artifacts, { recursive: true });
  const ctx = { ...args, nextLine: stdinLines(), errors: [] };
  const watchdog = setTimeout(() => {
    process.stderr.write(`FAIL: the run took longer than ${RUN_MS} ms\n`);
    process.exit(1);
  }, RUN_MS);
  watchdog.unref();
  // launch() runs chromium on a fresh temporary profile of its own.
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: CHROME_ARGS,
  });
  let page;
  let failed = 0;
  // Runs one step; a failure is reported with a screenshot. The first
  // three build on each other (stop: true); the later ones are independent.
  const run = async (step, body, { stop = false } = {}) => {
    try {
      await body();
      return true;
    } catch (e) {
      failed += 1;
      const why = e instanceof Failure ? e.message : (e.stack ?? String(e));
      process.stderr.write(`FAIL ${step}: ${why}\n`);
      if (page) {
        await page.screenshot({ path: join(ctx.artifacts, `failed-${step}.png`), fullPage: true })
          .catch(() => {});
      }
      if (stop) throw new Failure(step);
      return false;
    }
  };
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(WAIT_MS);
    page = await context.newPage();
    watchErrors(page, ctx.errors);
    let searchUrl;
    await run('overview', () => overview(page, ctx), { stop: true });
    await run('trace', () => tracePage(page, ctx), { stop: true });
    await run('search', async () => { searchUrl = await search(page, ctx); }, { stop: true });
    await run('accessibility', () => accessibility(browser, [
      ['overview', `${ctx.base}/ui/`, '#recent-traces tr[data-trace-id]'],
      ['trace', `${ctx.base}/ui/traces/${ctx.expect.trace_id}`, '#tool-calls li'],
      ['search', searchUrl, '#results tr[data-trace-id]'],
      // Where tables scroll sideways (scrollable-region-focusable).
      ['trace on a phone', `${ctx.base}/ui/traces/${ctx.expect.trace_id}`, '#tool-calls li', PHONE],
    ]));
    await run('phone', () => phone(page, ctx));
  } catch (e) {
    if (!(e instanceof Failure)) {
      failed += 1;
      process.stderr.write(`FAIL: ${e.stack ?? e}\n`);
    }
  } finally {
    await browser.close();
  }
  await run('errors', () =>
    check(ctx.errors.length === 0, `the pages reported errors:\n  ${ctx.errors.join('\n  ')}`));
  if (failed) {
    process.stderr.write(`FAIL: ${failed} step(s) failed; screenshots in ${ctx.artifacts}\n`);
    process.exitCode = 1;
  } else {
    log('PASS');
  }
}

await main();
// stdin (read by readline) would keep node running.
process.exit(process.exitCode ?? 0);
