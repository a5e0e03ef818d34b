/**
 * Shared helper for the console's browser tests (test/console/*.test.ts): builds the console when
 * its build is missing or older than its sources, drives Debian's Chromium (launched by
 * test/support/chromium.ts), signs in, runs axe-core and takes screenshots.
 *
 * A page's test:
 *
 *   const ui = await openConsole(gw);            // in beforeAll, after startTestGateway()
 *   await ui.signIn(gw.managementKey);           // lands on the first page
 *   await ui.goto('/keys');                      // a page by its registry path
 *   expect(await ui.axe()).toEqual([]);          // no serious or critical violations
 *   await ui.screenshot('keys');                 // docs/console/keys.png, only with CONSOLE_SCREENSHOTS=1
 *   ui.expectClean();                            // no console errors, CSP violations, foreign requests
 *   await ui.close();                            // in afterAll
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { expect } from 'vitest';
import { hasChromium, launchChromium, warnIfNoChromium as warn } from '../support/chromium.js';
import type { TestGateway } from '../support/gateway.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const CONSOLE_DIST = join(ROOT, 'dist/console');
export { hasChromium };

/** Call at the top of a console test file: says loudly that the file is skipped without Chromium. */
export function warnIfNoChromium(file: string) {
  warn('console', file);
}

/** The newest modification time under `path` (files only). */
function newest(path: string, skip: (p: string) => boolean = () => false): number {
  if (skip(path) || !existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name), skip)));
}

function isStale(): boolean {
  const index = join(CONSOLE_DIST, 'index.html');
  if (!existsSync(index)) return true;
  const built = statSync(index).mtimeMs;
  const generated = (p: string) => p.endsWith('schema.d.ts');
  // The console's sources, and the server's (the API types are generated from its routes).
  return newest(join(ROOT, 'console'), generated) > built || newest(join(ROOT, 'src')) > built;
}

/**
 * Runs `npm run build:console` unless dist/console is newer than every source. Test files run in
 * parallel: a lock directory lets one build while the others wait for it.
 */
export async function ensureConsoleBuilt(): Promise<void> {
  const lock = join(ROOT, 'dist/.console-build.lock');
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Another file is building (a lock over 5 minutes old is left over from a killed run).
      const since = statSync(lock, { throwIfNoEntry: false })?.mtimeMs;
      if (since !== undefined && Date.now() - since > 300_000) rmdirSync(lock);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    if (!isStale()) return;
    // NODE_ENV is `test` under vitest, which would make Vite bundle React's development build.
    const env = { ...process.env, NODE_ENV: 'production' };
    const run = spawnSync('npm', ['run', 'build:console'], { cwd: ROOT, encoding: 'utf8', env });
    if (run.status !== 0) throw new Error(`npm run build:console failed:\n${run.stdout}\n${run.stderr}`);
  } finally {
    rmdirSync(lock);
  }
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

export interface ConsoleUi {
  browser: Browser;
  page: Page;
  /** The gateway's address, e.g. http://127.0.0.1:41234. */
  url: string;
  /** Console errors and uncaught exceptions (expected API refusals excepted, see below). */
  errors: string[];
  /** Requests the page made to any host but the gateway's. */
  foreignRequests: string[];
  /** Opens the sign-in page, signs in with `token` and waits for the navigation. */
  signIn(token: string): Promise<void>;
  /** Opens a page by its registry path (e.g. '/keys') and waits for its <h1>. */
  goto(path: string): Promise<void>;
  signOut(): Promise<void>;
  /** axe-core's serious and critical violations on the page as it is now. */
  axe(): Promise<AxeViolation[]>;
  /** docs/console/<name>.png, only when CONSOLE_SCREENSHOTS=1 (CI never rewrites tracked files). */
  screenshot(name: string): Promise<void>;
  /** The focused element's name attribute and text (keyboard tests). */
  focused(): Promise<{ name: string | null; text: string }>;
  /** Everything the page keeps in sessionStorage and localStorage, as { session, local }. */
  storage(): Promise<{ session: Record<string, string>; local: Record<string, string> }>;
  /** Fails when the flow so far raised a console error, a CSP violation or a foreign request. */
  expectClean(): void;
  close(): Promise<void>;
}

// The browser's own line for a fetch the API refused (401 for a wrong key, 404 …): the page shows
// those in its error banner, which the tests check; anything else in the console is a failure.
const REFUSED = /^Failed to load resource: the server responded with a status of 4\d\d/;

export async function openConsole(gw: TestGateway): Promise<ConsoleUi> {
  const browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const errors: string[] = [];
  const foreignRequests: string[] = [];
  const host = new URL(gw.url).host;
  page.on('pageerror', (err) => errors.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !REFUSED.test(msg.text())) errors.push(msg.text());
  });
  page.on('request', (req) => {
    const u = new URL(req.url());
    if (u.protocol !== 'data:' && u.host !== host) foreignRequests.push(req.url());
  });
  const axeSource = readFileSync(join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');

  const ui: ConsoleUi = {
    browser,
    page,
    url: gw.url,
    errors,
    foreignRequests,
    async signIn(token) {
      await page.goto(`${gw.url}/console/`);
      await page.getByLabel('Management key or operator token').fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('navigation', { name: 'Console' }).waitFor();
    },
    async goto(path) {
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link').first().waitFor();
      // Through the app's own router (a link click), as a user would; a full load when no link matches.
      const link = page.locator(`nav a[href="/console${path}"]`);
      if (await link.count()) await link.click();
      else await page.goto(`${gw.url}/console${path}`);
      await page.locator('h1').first().waitFor();
    },
    async signOut() {
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('Management key or operator token').waitFor();
    },
    async axe() {
      // Injected as a <script> element's text: the console's CSP would refuse it, so it goes in by
      // Playwright's evaluation (which CSP does not govern) — the page itself is unchanged.
      if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(axeSource);
      const result = (await page.evaluate(() =>
        (globalThis as unknown as { axe: { run(): Promise<unknown> } }).axe.run(),
      )) as { violations: AxeViolation[] };
      return result.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => ({
          id: v.id,
          impact: v.impact,
          help: v.help,
          nodes: v.nodes.map((n) => ({ target: n.target })),
        }));
    },
    async screenshot(name) {
      if (process.env.CONSOLE_SCREENSHOTS !== '1') return;
      mkdirSync(join(ROOT, 'docs/console'), { recursive: true });
      await page.screenshot({ path: join(ROOT, 'docs/console', `${name}.png`), fullPage: true });
    },
    focused: () =>
      page.evaluate(
        '({ name: document.activeElement?.getAttribute("name") ?? null, text: document.activeElement?.textContent ?? "" })',
      ),
    storage: () => page.evaluate('({ session: { ...sessionStorage }, local: { ...localStorage } })'),
    expectClean() {
      expect(errors, 'console errors and CSP violations').toEqual([]);
      expect(foreignRequests, 'requests to other hosts').toEqual([]);
    },
    close: () => browser.close(),
  };
  return ui;
}
