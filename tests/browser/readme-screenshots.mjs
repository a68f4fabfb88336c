// The README's screenshots of the web UI, from a running toolscore (the
// Quickstart: `toolscore serve`, then a few `toolscore demo`):
//
//   node tests/browser/readme-screenshots.mjs BASE_URL OUT_DIR
//
// writes OUT_DIR/ui-overview.png (the overview, 1280 px wide, the whole
// page) and OUT_DIR/ui-trace.png (the page of the overview's newest trace).
// A page whose PNG would pass MAX_BYTES is shot to the first 1280×900
// viewport instead, so the README stays light. Debian's chromium as in
// ui.mjs (CHROMIUM overrides /usr/bin/chromium); exits 1 with the reason
// on stderr.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const VIEWPORT = { width: 1280, height: 900 };
const MAX_BYTES = 250_000;
const WAIT_MS = 20_000;
const CHROME_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

// The whole page, or the first viewport when that would be too large.
async function shoot(page, path) {
  let png = await page.screenshot({ fullPage: true });
  let clipped = false;
  if (png.length > MAX_BYTES) {
    png = await page.screenshot({ fullPage: false });
    clipped = true;
  }
  writeFileSync(path, png);
  process.stdout.write(`${path}: ${png.length} bytes${clipped ? ' (first viewport only)' : ''}\n`);
}

async function main() {
  const [base, out] = process.argv.slice(2);
  if (!base || !out) {
    process.stderr.write('usage: readme-screenshots.mjs BASE_URL OUT_DIR\n');
    process.exit(2);
  }
  const root = base.replace(/\/$/, '');
  mkdirSync(out, { recursive: true });
  // launch() runs chromium on a fresh temporary profile (user data dir).
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: CHROME_ARGS,
  });
  try {
    const context = await browser.newContext({
      viewport: VIEWPORT, deviceScaleFactor: 1, reducedMotion: 'reduce',
    });
    context.setDefaultTimeout(WAIT_MS);
    const page = await context.newPage();
    await page.goto(`${root}/ui/`);
    // Shot once the stream is up, so the page reads "Updates: live".
    await page.locator('#live-status').filter({ hasText: /^\s*live\s*$/ }).waitFor();
    const newest = page.locator('#recent-traces tr[data-trace-id]').first();
    if ((await newest.count()) === 0) {
      throw new Error(`${root}/ui/ lists no trace: run \`toolscore demo\` a few times first`);
    }
    await shoot(page, join(out, 'ui-overview.png'));
    const id = await newest.getAttribute('data-trace-id');
    await newest.locator(`a[href="/ui/traces/${id}"]`).click();
    await page.waitForURL(`${root}/ui/traces/${id}`);
    await page.locator('#tool-calls').waitFor();
    await shoot(page, join(out, 'ui-trace.png'));
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  process.stderr.write(`readme-screenshots: ${e.stack ?? e}\n`);
  process.exit(1);
});
