/**
 * The web console in a real browser against a real gateway on SQLite: sign-in (wrong key, management
 * key, operator token), the Keys and Models pages, the CSP and cache headers, accessibility (axe-core)
 * and the keyboard, and the size of what the first load downloads.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP, installConsole } from '../../src/server/console.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../support/gateway.js';
import {
  CONSOLE_DIST,
  type ConsoleUi,
  ensureConsoleBuilt,
  hasChromium,
  openConsole,
  warnIfNoChromium,
} from './browser.js';

warnIfNoChromium('test/console/console.test.ts');

describe('console served by the gateway', () => {
  it('answers 503 with a page saying how to build it when the build is missing', async () => {
    const app = Fastify();
    await installConsole(app, '/nonexistent/console');
    for (const url of ['/console/', '/console/keys', '/console/assets/index.js']) {
      const page = await app.inject({ url, headers: { accept: 'text/html,*/*' } });
      expect(page.statusCode, url).toBe(503);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.body).toContain('npm run build');
      expect(page.headers['content-security-policy']).toBe(CONSOLE_CSP);
      // Anything but a browser gets the API's error envelope.
      const json = await app.inject({ url });
      expect(json.statusCode).toBe(503);
      expect(json.json().error).toMatchObject({
        code: 503,
        message: expect.stringContaining('npm run build'),
      });
    }
    await app.close();
  });
});

describe.skipIf(!hasChromium)('console in headless Chromium', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  let ui: ConsoleUi;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    gw = await startTestGateway('sqlite');
    ui = await openConsole(gw);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
  });

  it('serves index.html for deep links with the CSP, and hashed assets as immutable', async () => {
    const index = await fetch(`${gw.url}/console/keys`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const html = await index.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(asset).toBeDefined();
    const js = await fetch(`${gw.url}${asset}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${gw.url}/console/assets/missing.js`)).status).toBe(404);
    // Nothing outside the build is served, however the path is spelled.
    const outside = await fetch(`${gw.url}/console/assets/..%2f..%2f..%2fpackage.json`);
    expect(outside.status).toBe(404);
    expect(await outside.text()).not.toContain('"name": "gatehouse"');
    const bare = await fetch(`${gw.url}/console`, { redirect: 'manual' });
    expect(bare.status).toBe(301);
    expect(bare.headers.get('location')).toBe('/console/');
    const doc = (await (await fetch(`${gw.url}/api/v1/openapi.json`)).json()) as { paths: object };
    expect(Object.keys(doc.paths).filter((p) => p.includes('console'))).toEqual([]);
  });

  it('keeps the first load under 250 KB of gzipped JavaScript', () => {
    const assets = join(CONSOLE_DIST, 'assets');
    const gz = readdirSync(assets)
      .filter((f) => f.endsWith('.js'))
      .reduce((sum, f) => sum + gzipSync(readFileSync(join(assets, f))).length, 0);
    console.log(`console JavaScript: ${(gz / 1024).toFixed(1)} KB gzipped`);
    expect(gz).toBeLessThanOrEqual(250 * 1024);
  });

  it('reaches the sign-in form by keyboard, and says why a wrong key is refused', async () => {
    const { page } = ui;
    await page.goto(`${gw.url}/console/`);
    const field = page.getByLabel('Management key or operator token');
    await field.waitFor();
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('sign-in');
    await page.keyboard.press('Tab');
    expect((await ui.focused()).name).toBe('token');
    await page.keyboard.type(`sk-gh-v1-${'0'.repeat(64)}`);
    await page.keyboard.press('Tab');
    expect((await ui.focused()).text).toBe('Sign in');
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain('This key was not accepted: it is unknown, disabled or expired.');
    // The API key is not a management key: refused with a message of its own.
    await field.fill(gw.apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('This is an API key');
    expect(await ui.storage()).toEqual({ session: {}, local: {} });
  });

  it('creates a key: its secret is shown once, with a copy button, and the key is listed', async () => {
    const { page } = ui;
    await ui.signIn(gw.managementKey);
    await ui.goto('/keys');
    expect(await page.locator('h1').textContent()).toBe('Keys');
    await page.getByLabel('Name').fill('console-ci');
    await page.getByLabel('Spend limit (USD)').fill('12.5');
    await page.getByLabel('Limit resets').selectOption('monthly');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByTestId('new-secret').textContent()) ?? '';
    expect(secret).toMatch(/^sk-gh-v1-[0-9a-f]{64}$/);
    await expect.poll(() => page.getByRole('button', { name: 'Copy key' }).isVisible()).toBe(true);
    const row = page.getByRole('row').filter({ hasText: 'console-ci' });
    await expect.poll(() => row.textContent()).toContain('$12.50 monthly');
    // The key exists on the gateway, as created.
    const listed = (await (
      await fetch(`${gw.url}/api/v1/keys`, { headers: { authorization: `Bearer ${gw.managementKey}` } })
    ).json()) as { data: { name: string; limit: number; limit_reset: string }[] };
    expect(listed.data.find((k) => k.name === 'console-ci')).toMatchObject({
      limit: 12.5,
      limit_reset: 'monthly',
    });
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('keys-new-secret');
    // The secret is kept nowhere: leaving the page drops it.
    expect(JSON.stringify(await ui.storage())).not.toContain(secret);
    await ui.goto('/models');
    await ui.goto('/keys');
    await row.waitFor();
    expect(await page.getByTestId('new-secret').count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
    await ui.screenshot('keys');
  });

  it('edits a key’s limits, disables it and deletes it', async () => {
    const { page } = ui;
    const row = () => page.getByRole('row').filter({ hasText: 'console-ci' });
    await page.getByRole('button', { name: 'Edit limits of console-ci' }).click();
    await page.getByLabel('Requests per minute').fill('60');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => row().textContent()).toContain('60 rpm');
    await page.getByRole('button', { name: 'Disable console-ci' }).click();
    await expect.poll(() => row().textContent()).toContain('disabled');
    // An API error shows in the banner and leaves the page usable: an expiry in the past is refused.
    await page.getByLabel('Name').fill('already-expired');
    await page.getByLabel('Expires').fill('2001-01-01T00:00');
    await page.getByRole('button', { name: 'Create key' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain('expires_at must be in the future');
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await expect.poll(() => page.getByRole('alert').count()).toBe(0);
    await page.getByRole('button', { name: 'Delete console-ci' }).click();
    await page.getByRole('button', { name: 'Delete “console-ci” for good' }).click();
    await expect.poll(() => row().count()).toBe(0);
  });

  it('searches the model catalog', async () => {
    const { page } = ui;
    await ui.goto('/models');
    const rows = page.locator('tbody tr');
    await rows.first().waitFor();
    const all = await rows.count();
    expect(all).toBeGreaterThan(0);
    await page.getByLabel('Search models').fill('echo');
    await expect.poll(() => page.locator('tbody').textContent()).toContain('gatehouse/echo');
    expect(await rows.count()).toBeLessThanOrEqual(all);
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('models');
    await page.getByLabel('Search models').fill('no-such-model-anywhere');
    await expect.poll(() => page.locator('tbody').textContent()).toContain('No model matches the search.');
  });

  it('reaches the navigation by keyboard', async () => {
    const { page } = ui;
    await page.goto(`${gw.url}/console/models`);
    await page.locator('h1').waitFor();
    const focused: string[] = [];
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('Tab');
      focused.push((await ui.focused()).text);
    }
    expect(focused).toEqual(expect.arrayContaining(['Keys', 'Models']));
  });

  it('signs out, forgetting the key; the operator token shows the operator pages', async () => {
    const { page } = ui;
    await ui.signOut();
    expect(await ui.storage()).toEqual({ session: {}, local: {} });
    await ui.signIn(ADMIN_TOKEN);
    const nav = page.getByRole('navigation', { name: 'Console' });
    // The operator pages and the public ones; never the organization's (Keys).
    const links = await nav.getByRole('link').allTextContents();
    expect(links).toEqual(expect.arrayContaining(['Models', 'Organizations']));
    expect(links).not.toContain('Keys');
    await ui.goto('/organizations');
    await expect.poll(() => page.locator('tbody').textContent()).toContain(gw.organizationId);
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('organizations');
    await ui.signOut();
  });

  it('raised no console error, CSP violation or request to another host', () => {
    ui.expectClean();
  });
});
