// The web UI behind tokens, in a real browser: Debian's chromium driven by
// Playwright. tests/ui_browser.rs starts two services with tokens on the
// HTTP API (the second with a one-second session) and runs this script:
//
//   node tests/browser/sign-in.mjs BASE_URL SHORT_SESSION_BASE_URL READ_TOKEN ARTIFACTS_DIR
//
// Steps: a page asked for without a session goes to the sign-in page; a
// wrong token is refused there; the read token signs in (an HttpOnly,
// SameSite=Strict cookie that is not the token, no token in any URL), the
// overview's live stream and a trace page work on the session alone;
// signing out clears it; on the second service the session expires, in
// the browser and on the server. Every failure exits 1 with
// `FAIL <step>: <why>` on stderr and a `failed-<step>.png` screenshot.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const WAIT_MS = 20_000;
const RUN_MS = 120_000;
const COOKIE = 'toolscore_session';
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
    await new Promise((r) => setTimeout(r, 200));
  }
}

function path(page) {
  return new URL(page.url()).pathname;
}

async function session(context) {
  return (await context.cookies()).find((c) => c.name === COOKIE);
}

async function signIn(page, base, token) {
  await page.goto(`${base}/ui/sign-in`);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForLoadState('load');
}

async function signedOut(page, ctx) {
  const response = await page.goto(`${ctx.base}/ui/`);
  check(path(page) === '/ui/sign-in', `GET /ui/ without a session ended at ${page.url()}`);
  check(response.ok(), `the sign-in page answered ${response.status()}`);
  const field = page.getByLabel('Token');
  check(await field.getAttribute('type') === 'password', 'the token field is not a password field');
  check(await page.getByRole('button', { name: 'Sign out' }).count() === 0,
    'a sign-out button before signing in');
  log('ok signed out: the overview leads to the sign-in page');
}

async function wrongToken(page, ctx) {
  await signIn(page, ctx.base, 'not-a-token');
  check(path(page) === '/ui/sign-in', `a wrong token led to ${page.url()}`);
  const alert = (await page.getByRole('alert').innerText()).trim();
  check(/not valid/.test(alert), `the refusal reads "${alert}"`);
  check(!(await session(page.context())), 'a wrong token got a session cookie');
  const response = await page.goto(`${ctx.base}/ui/search`);
  check(path(page) === '/ui/sign-in', `after a wrong token /ui/search answered ${response.status()} at ${page.url()}`);
  log('ok wrong token: refused, no session');
}

async function signedIn(page, ctx) {
  await signIn(page, ctx.base, ctx.token);
  check(path(page) === '/ui/', `the read token led to ${page.url()}`);
  const cookie = await session(page.context());
  check(cookie, 'no session cookie after signing in');
  check(cookie.httpOnly, 'the session cookie is not HttpOnly');
  check(cookie.sameSite === 'Strict', `the session cookie is SameSite=${cookie.sameSite}`);
  check(!cookie.value.includes(ctx.token), 'the session cookie holds the token');
  check(cookie.expires > 0, 'the session cookie has no lifetime');
  const visible = await page.evaluate(() => document.cookie);
  check(!visible.includes(COOKIE), `a script can read the session cookie: ${visible}`);
  // The overview's EventSource (`/v1/watch`) is authorised by the session.
  await page.locator('#live-status').filter({ hasText: /^\s*live\s*$/ }).waitFor({ timeout: WAIT_MS })
    .catch(async () => {
      const status = await page.locator('#live-status').allInnerTexts();
      throw new Failure(`#live-status did not read "live" (it reads ${JSON.stringify(status)})`);
    });
  const response = await page.goto(`${ctx.base}/ui/search`);
  check(response.status() === 200 && path(page) === '/ui/search',
    `signed in, /ui/search answered ${response.status()} at ${page.url()}`);
  await page.screenshot({ path: join(ctx.artifacts, 'signed-in.png'), fullPage: true });
  log('ok signed in: cookie HttpOnly and SameSite=Strict, pages and the live stream work');
}

async function signOut(page, ctx) {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForLoadState('load');
  check(path(page) === '/ui/sign-in', `signing out led to ${page.url()}`);
  check(!(await session(page.context())), 'the session cookie is still set after signing out');
  await page.goto(`${ctx.base}/ui/`);
  check(path(page) === '/ui/sign-in', `signed out, /ui/ ended at ${page.url()}`);
  log('ok sign out: cookie cleared, pages lead to the sign-in page');
}

async function expired(page, ctx) {
  await signIn(page, ctx.shortBase, ctx.token);
  const cookie = await session(page.context());
  check(cookie, 'no session cookie on the short-session service');
  // The browser drops the cookie at its Max-Age.
  await eventually(async () => {
    await page.goto(`${ctx.shortBase}/ui/`);
    check(path(page) === '/ui/sign-in', `the one-second session still opens /ui/ (${page.url()})`);
  });
  // The server ended the session too: the old cookie, put back, opens nothing.
  await page.context().addCookies([{ ...cookie, expires: -1 }]);
  check(await session(page.context()), 'the old cookie could not be put back');
  await page.goto(`${ctx.shortBase}/ui/`);
  check(path(page) === '/ui/sign-in', `an expired session's cookie opened ${page.url()}`);
  log('ok expired: the browser and the server end the session');
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv.length !== 4) {
    process.stderr.write('usage: sign-in.mjs BASE_URL SHORT_SESSION_BASE_URL READ_TOKEN ARTIFACTS_DIR\n');
    process.exit(2);
  }
  const [base, shortBase, token, artifacts] = argv;
  const ctx = { base: base.replace(/\/$/, ''), shortBase: shortBase.replace(/\/$/, ''), token, artifacts };
  mkdirSync(artifacts, { recursive: true });
  const watchdog = setTimeout(() => {
    process.stderr.write(`FAIL: the run took longer than ${RUN_MS} ms\n`);
    process.exit(1);
  }, RUN_MS);
  watchdog.unref();
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: CHROME_ARGS,
  });
  const urls = [];
  let page;
  let failed = 0;
  const run = async (step, body) => {
    try {
      await body();
    } catch (e) {
      failed += 1;
      const why = e instanceof Failure ? e.message : (e.stack ?? String(e));
      process.stderr.write(`FAIL ${step}: ${why}\n`);
      if (page) {
        await page.screenshot({ path: join(ctx.artifacts, `failed-${step}.png`), fullPage: true })
          .catch(() => {});
      }
      throw new Failure(step);
    }
  };
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(WAIT_MS);
    page = await context.newPage();
    page.on('request', (r) => urls.push(r.url()));
    page.on('pageerror', (e) => process.stderr.write(`page error: ${e.message}\n`));
    await run('signed-out', () => signedOut(page, ctx));
    await run('wrong-token', () => wrongToken(page, ctx));
    await run('signed-in', () => signedIn(page, ctx));
    await run('sign-out', () => signOut(page, ctx));
    await run('expired', () => expired(page, ctx));
    await run('no-token-in-urls', async () => {
      const leaked = urls.filter((u) => u.includes(ctx.token));
      check(leaked.length === 0, `the token is in a URL: ${leaked.join(', ')}`);
    });
  } catch (e) {
    if (!(e instanceof Failure)) {
      failed += 1;
      process.stderr.write(`FAIL: ${e.stack ?? e}\n`);
    }
  } finally {
    await browser.close();
  }
  if (failed) {
    process.stderr.write(`FAIL: a step failed; screenshots in ${ctx.artifacts}\n`);
    process.exitCode = 1;
  } else {
    log('PASS');
  }
}

await main();
process.exit(process.exitCode ?? 0);
