/**
 * Signing in with a key the gateway will not take, in Chromium against a real gateway on SQLite: an
 * expired or disabled management key is refused in words on the sign-in page (never a blank screen),
 * a key that expires while signed in brings back the sign-in page saying why, and a gateway that
 * cannot be reached is said to be so.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { adminClient, client } from '../support/http.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/sign-in.test.ts');

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const REFUSED = 'This key was not accepted: it is unknown, disabled or expired.';

describe.skipIf(!hasChromium)('console: sign-in with a key the gateway refuses', { timeout: 90_000 }, () => {
  let gw: TestGateway;
  let ui: ConsoleUi;

  /** A new management key of the organization, working until `change` is applied to it. */
  async function managementKey(name: string) {
    const made = await adminClient(gw.url)('POST', '/admin/keys', {
      name,
      user_id: gw.ownerUserId,
      management: true,
    });
    expect(made.status, made.text).toBe(201);
    const key = made.body.key as string;
    expect((await client(gw.url, key)('GET', '/workspaces')).status).toBe(200);
    return {
      key,
      // What an operator's change or the clock does to the key (no API makes an expired key).
      async change(set: { disabled: number } | { expires_at: string }) {
        await gw.services.db.updateTable('api_keys').set(set).where('hash', '=', sha256(key)).execute();
        gw.services.keys.invalidate(sha256(key));
        expect((await client(gw.url, key)('GET', '/workspaces')).status).toBe(401);
      },
    };
  }

  beforeAll(async () => {
    await ensureConsoleBuilt();
    gw = await startTestGateway('sqlite');
    ui = await openConsole(gw);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
  });

  const field = () => ui.page.getByLabel('Management key or operator token');

  async function trySignIn(token: string) {
    const { page } = ui;
    await page.goto(`${gw.url}/console/`);
    await field().fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('refuses an expired management key in words, and the form stays usable', async () => {
    const { page } = ui;
    const expired = await managementKey('expired');
    await expired.change({ expires_at: '2000-01-01T00:00:00.000Z' });
    await trySignIn(expired.key);
    await expect.poll(() => page.getByRole('alert').textContent()).toBe(REFUSED);
    expect(await page.locator('h1').textContent()).toBe('Sign in to the Gatehouse console');
    expect(await page.getByRole('button', { name: 'Sign in' }).isEnabled()).toBe(true);
    expect(await ui.storage()).toEqual({ session: {}, local: {} });
    expect(await ui.axe()).toEqual([]);
    // The same form then takes a good key.
    await field().fill(gw.managementKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Console' }).waitFor();
    await ui.signOut();
  });

  it('refuses a disabled management key in words', async () => {
    const disabled = await managementKey('disabled');
    await disabled.change({ disabled: 1 });
    await trySignIn(disabled.key);
    await expect.poll(() => ui.page.getByRole('alert').textContent()).toBe(REFUSED);
  });

  it('a key that expires while signed in brings back the sign-in page, saying why', async () => {
    const { page } = ui;
    const soon = await managementKey('expires while signed in');
    await ui.signIn(soon.key);
    await ui.goto('/keys');
    await page.locator('table').first().waitFor();
    await soon.change({ expires_at: '2000-01-01T00:00:00.000Z' });
    // The next call with it is refused: the console forgets the key and says so.
    await ui.goto('/workspaces');
    await field().waitFor();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe('Your key is no longer accepted (invalid, disabled or expired). Sign in again.');
    expect(await ui.storage()).toEqual({ session: {}, local: {} });
    expect(await page.content()).not.toContain(soon.key);
  });

  it('raised no console error, CSP violation or request to another host', () => {
    ui.expectClean();
  });

  // After the clean check: the failed requests this one makes are console errors by design.
  it('says so when the gateway cannot be reached', async () => {
    const { page } = ui;
    await page.goto(`${gw.url}/console/`);
    // The network fails under the page (as when the gateway is down).
    await page.route('**/api/v1/**', (route) => route.abort('connectionrefused'));
    await field().fill(gw.managementKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe('The gateway could not be reached. Check that it is running and try again.');
    await page.unroute('**/api/v1/**');
    // Working again: the same form signs in.
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Console' }).waitFor();
  });
});
