/**
 * Signing in to the console with an identity provider, in Chromium: the sign-in page's button goes
 * to a real OpenID provider (`oidc-provider`), its login comes back to the console signed in with
 * the role the operator's mapping gives, and sign-out deletes the session's key at the gateway.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { adminClient, client } from '../support/http.js';
import { freePort, startOidcProvider, type TestProvider } from '../support/oidc-provider.js';
import { type ConsoleUi, ensureConsoleBuilt, hasChromium, openConsole, warnIfNoChromium } from './browser.js';

warnIfNoChromium('test/console/oidc.test.ts');

describe.skipIf(!hasChromium)('console: sign-in with an identity provider', { timeout: 90_000 }, () => {
  let gw: TestGateway;
  let idp: TestProvider;
  let ui: ConsoleUi;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    const port = await freePort();
    const redirect = `http://127.0.0.1:${port}/console/oidc/callback`;
    idp = await startOidcProvider({
      clientId: 'gatehouse-console',
      clientSecret: `console-test-secret-${'c0ffee'.repeat(5)}`,
      redirectUri: redirect,
      postLogoutRedirectUri: `http://127.0.0.1:${port}/console/`,
      accounts: { alice: { email: 'alice@acme.test', email_verified: true, given_name: 'Alice' } },
    });
    gw = await startTestGateway('sqlite', {
      env: {
        PORT: String(port),
        GATEHOUSE_OIDC_ISSUER: idp.issuer,
        GATEHOUSE_OIDC_CLIENT_ID: 'gatehouse-console',
        GATEHOUSE_OIDC_CLIENT_SECRET: `console-test-secret-${'c0ffee'.repeat(5)}`,
        GATEHOUSE_OIDC_REDIRECT_URL: redirect,
        GATEHOUSE_OIDC_NAME: 'Acme SSO',
        GATEHOUSE_OIDC_ROLE_MAPPING: JSON.stringify([
          { email_domain: 'acme.test', organization: 'Acme', role: 'member', provision: true },
        ]),
      },
    });
    expect((await adminClient(gw.url)('POST', '/admin/organizations', { name: 'Acme' })).status).toBe(201);
    ui = await openConsole(gw);
  }, 300_000);

  afterAll(async () => {
    await ui?.close();
    await gw?.stop();
    await idp?.close();
  });

  it('goes from the button to the provider and back, signed in as a member; sign-out deletes the key and ends the provider session', async () => {
    const { page } = ui;
    await page.goto(`${gw.url}/console/`);
    await page.getByRole('link', { name: 'Sign in with Acme SSO' }).waitFor();
    expect(await ui.axe()).toEqual([]);
    await page.getByRole('link', { name: 'Sign in with Acme SSO' }).click();
    // The provider's login page.
    await page.getByLabel('Account').fill('alice');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('navigation', { name: 'Console' }).waitFor();
    expect(await page.locator('.who').textContent()).toContain('alice@acme.test (member)');
    // The key left the address bar.
    expect(new URL(page.url()).hash).toBe('');
    const session = JSON.parse((await ui.storage()).session['gatehouse.console.session'] ?? '{}');
    expect(session).toMatchObject({ role: 'management', via: 'oidc' });
    const key = session.token as string;
    const me = await client(gw.url, key)('GET', '/key');
    expect(me.status).toBe(200);
    expect(me.body.data.is_management_key).toBe(true);
    // A member's rights: no new workspace.
    expect((await client(gw.url, key)('POST', '/workspaces', { name: 'X', slug: 'x' })).status).toBe(403);
    expect(await ui.axe()).toEqual([]);

    // Sign-out goes through the provider's sign-out page, which sends the browser back to the console.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Yes, sign me out' }).click();
    await page.getByLabel('Management key or operator token').waitFor();
    expect(new URL(page.url()).href).toBe(`${gw.url}/console/`);
    expect(await ui.storage()).toEqual({ session: {}, local: {} });
    expect((await client(gw.url, key)('GET', '/key')).status).toBe(401);
    // The provider's session ended: signing in again asks for the account.
    await page.getByRole('link', { name: 'Sign in with Acme SSO' }).click();
    await page.getByLabel('Account').waitFor();
    expect(ui.errors).toEqual([]);
    // Only the provider was visited besides the gateway.
    expect(ui.foreignRequests.filter((u) => !u.startsWith(idp.issuer))).toEqual([]);
  });
});
