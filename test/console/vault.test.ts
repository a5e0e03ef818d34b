/**
 * The Vault page in Chromium against a real gateway on SQLite: with a pasted API key, a secret is
 * stored, listed with its hosts, replaced and deleted — and its value appears in no page, storage
 * or response; bad input is shown in the banner.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { adminClient, client } from '../support/http.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/vault.test.ts');

describe.skipIf(!hasChromium)('console: Vault', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  let ui: ConsoleUi;
  /** Every response body the page received. */
  const bodies: string[] = [];
  const first = `first-${randomBytes(12).toString('hex')}`;
  const second = `second-${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    gw = await startTestGateway('sqlite');
    ui = await openConsole(gw);
    ui.page.on('response', async (res) => {
      bodies.push(await res.text().catch(() => ''));
    });
    await ui.signIn(gw.managementKey);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
  });

  const field = (label: string) => ui.page.getByLabel(label, { exact: true });
  const listed = async () =>
    (await client(gw.url, gw.apiKey)('GET', '/vault/secrets')).body.data as {
      name: string;
      hosts: string[];
      ports?: number[];
      fingerprint: string;
    }[];
  const noValueAnywhere = async () => {
    const html = await ui.page.content();
    const stored = JSON.stringify(await ui.storage());
    for (const v of [first, second]) {
      expect(html).not.toContain(v);
      expect(stored).not.toContain(v);
      expect(bodies.filter((b) => b.includes(v))).toEqual([]);
    }
  };

  it('takes a pasted API key', async () => {
    const { page } = ui;
    await ui.goto('/vault');
    await page.getByRole('textbox', { name: 'API key' }).fill(gw.apiKey);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.getByRole('heading', { name: 'Store a secret' }).waitFor();
    await expect.poll(() => page.locator('tbody').textContent()).toContain('No secrets yet.');
  });

  it('stores a secret: listed with its hosts, its value nowhere in the page', async () => {
    const { page } = ui;
    await field('Name').fill('stripe_key');
    await field('Value').fill(first);
    await field('Hosts').fill('api.stripe.com, files.stripe.com');
    await field('Extra ports').fill('8443');
    await page.getByRole('button', { name: 'Store secret' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Secret “stripe_key” stored.');
    const row = page.getByRole('row').filter({ hasText: 'stripe_key' });
    await expect.poll(() => row.textContent()).toContain('api.stripe.com, files.stripe.com');
    expect(await row.textContent()).toContain('ports 8443');
    expect(await field('Value').inputValue()).toBe('');
    expect(await listed()).toMatchObject([
      { name: 'stripe_key', hosts: ['api.stripe.com', 'files.stripe.com'], ports: [8443] },
    ]);
    await noValueAnywhere();
    expect(await ui.axe()).toEqual([]);
    await ui.screenshot('vault');
  });

  it('replaces a value and its hosts (a new fingerprint), still never shown', async () => {
    const { page } = ui;
    const before = (await listed())[0]?.fingerprint;
    await page.getByRole('button', { name: 'Replace stripe_key' }).click();
    await page.getByRole('heading', { name: 'Replace “stripe_key”' }).waitFor();
    expect(await field('Name').inputValue()).toBe('stripe_key');
    expect(await field('Value').inputValue()).toBe('');
    await field('Value').fill(second);
    await field('Hosts').fill('api.stripe.com');
    await field('Extra ports').fill('');
    await page.getByRole('button', { name: 'Replace value' }).click();
    await page.getByRole('heading', { name: 'Store a secret' }).waitFor();
    const [s] = await listed();
    expect(s).toMatchObject({ name: 'stripe_key', hosts: ['api.stripe.com'] });
    expect(s?.ports).toBeUndefined();
    expect(s?.fingerprint).not.toBe(before);
    await noValueAnywhere();
  });

  it('shows refused input in the banner and stays usable', async () => {
    const { page } = ui;
    await field('Name').fill('bad-name');
    await field('Value').fill(`bad-${randomBytes(8).toString('hex')}`);
    await field('Hosts').fill('https://api.example.com/path');
    await page.getByRole('button', { name: 'Store secret' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/name|host/i);
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await expect.poll(() => page.getByRole('alert').count()).toBe(0);
    expect((await listed()).map((s) => s.name)).toEqual(['stripe_key']);
  });

  it('deletes a secret after asking twice', async () => {
    const { page } = ui;
    await page.getByRole('button', { name: 'Delete stripe_key' }).click();
    await page.getByRole('button', { name: 'Delete “stripe_key” for good' }).click();
    await expect.poll(() => page.locator('tbody').textContent()).toContain('No secrets yet.');
    expect(await listed()).toEqual([]);
  });

  it('says who may use the vault when the key’s member is outside the interns programme', async () => {
    const { page } = ui;
    const admin = adminClient(gw.url);
    const user = await admin('POST', '/admin/users', {
      email: `outsider-${randomBytes(4).toString('hex')}@example.com`,
      organization_id: gw.organizationId,
      role: 'member',
      interns_programme: false,
    });
    expect(user.status).toBe(201);
    const made = await admin('POST', '/admin/keys', { name: 'outsider', user_id: user.body.data.id });
    await page.getByRole('button', { name: 'Use another' }).click();
    // A wrong key is refused with a message, and the session stays signed in.
    await page.getByRole('textbox', { name: 'API key' }).fill(`sk-gh-v1-${'0'.repeat(64)}`);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain('This API key was not accepted: it is unknown, disabled or expired.');
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(1);
    await page.getByRole('textbox', { name: 'API key' }).fill(made.body.key);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await expect.poll(() => page.getByRole('alert').count()).toBe(1);
    await expect.poll(() => page.locator('main').textContent()).toContain('members in the interns programme');
    // The page stays usable: the form is there.
    expect(await page.getByRole('heading', { name: 'Store a secret' }).count()).toBe(1);
  });

  it('raised no console error, CSP violation or request to another host', () => {
    ui.expectClean();
  });
});
