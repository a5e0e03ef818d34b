/**
 * Console sign-in with an OpenID Connect provider, against a real one (`oidc-provider`) on a
 * loopback port: the browser's part is played by hand — redirects followed one by one, cookies kept
 * in a jar — so every step crosses a real socket.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGN_IN_KEY_PREFIX } from '../src/accounts/oidc.service.js';
import { SignInSweeper } from '../src/accounts/oidc.sessions.js';
import { decrypt, encrypt, sha256Hex } from '../src/lib/crypto.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import { freePort, startOidcProvider, type TestProvider } from './support/oidc-provider.js';

const CLIENT_ID = 'gatehouse-console';
const CLIENT_SECRET = `oidc-client-secret-${'7f3a9c'.repeat(6)}`;

const ACCOUNTS = {
  alice: { email: 'Alice@Acme.test', email_verified: true, given_name: 'Alice', family_name: 'Doe' },
  bob: { email: 'bob@partner.test', email_verified: true, groups: ['staff', 'gatehouse-admins'] },
  carol: { email: 'carol@elsewhere.test', email_verified: true },
  dave: { email: 'dave@acme.test', email_verified: false },
  erin: { email: 'erin@other.test', email_verified: true },
  frank: { email: 'frank@partner.test', email_verified: true, groups: ['gatehouse-admins'] },
};

/** What the browser keeps: cookies by name (both servers are on 127.0.0.1, as in a browser). */
class Browser {
  cookies = new Map<string, string>();
  /** Every answer's headers and body, for the secret check. */
  seen: string[] = [];

  async get(url: string): Promise<{ status: number; location: string | null; text: string }> {
    const res = await fetch(url, {
      redirect: 'manual',
      headers: {
        accept: 'text/html,*/*',
        cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (attrs.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.text();
    this.seen.push(JSON.stringify([...res.headers]), text);
    const location = res.headers.get('location');
    return { status: res.status, location: location ? new URL(location, url).href : null, text };
  }

  /** Submits a form (a urlencoded POST), as a browser would. */
  async post(url: string, form: Record<string, string>) {
    const res = await fetch(url, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        accept: 'text/html,*/*',
        'content-type': 'application/x-www-form-urlencoded',
        cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      },
      body: new URLSearchParams(form),
    });
    const text = await res.text();
    const location = res.headers.get('location');
    return { status: res.status, location: location ? new URL(location, url).href : null, text };
  }
}

/** The payload of a JWT (not verified: the provider's own token, read to see whose it is). */
const jwtPayload = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

describe.each(databases)('console sign-in with an OpenID provider (%s)', (db) => {
  let gw: TestGateway;
  let idp: TestProvider;
  let acmeId: string;
  let otherId: string;
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });

  beforeAll(async () => {
    const port = await freePort();
    const redirect = `http://127.0.0.1:${port}/console/oidc/callback`;
    idp = await startOidcProvider({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUri: redirect,
      postLogoutRedirectUri: `http://127.0.0.1:${port}/console/`,
      accounts: ACCOUNTS,
    });
    gw = await startTestGateway(db, {
      logStream,
      env: {
        PORT: String(port),
        GATEHOUSE_OIDC_ISSUER: idp.issuer,
        GATEHOUSE_OIDC_CLIENT_ID: CLIENT_ID,
        GATEHOUSE_OIDC_CLIENT_SECRET: CLIENT_SECRET,
        GATEHOUSE_OIDC_REDIRECT_URL: redirect,
        GATEHOUSE_OIDC_SCOPES: 'openid email profile groups',
        GATEHOUSE_OIDC_NAME: 'Acme SSO',
        GATEHOUSE_OIDC_ROLE_MAPPING: JSON.stringify([
          // Only sets the role of members the operator added (bob); frank, not a member, is skipped.
          { claim: 'groups', value: 'gatehouse-admins', organization: 'Acme', role: 'admin' },
          { email_domain: 'acme.test', organization: 'Acme', role: 'member', provision: true },
        ]),
      },
    });
    const admin = adminClient(gw.url);
    acmeId = (await admin('POST', '/admin/organizations', { name: 'Acme' })).body.data.id;
    otherId = (await admin('POST', '/admin/organizations', { name: 'Other' })).body.data.id;
    expect(
      (
        await admin('POST', '/admin/users', {
          email: 'bob@partner.test',
          organization_id: acmeId,
          role: 'member',
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await admin('POST', '/admin/users', {
          email: 'erin@other.test',
          organization_id: otherId,
          role: 'admin',
        })
      ).status,
    ).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await gw?.stop();
    await idp?.close();
  });

  /** The browser's way from the console's button to the gateway's callback, for `account`. */
  async function toCallback(b: Browser, account: string): Promise<string> {
    const login = await b.get(`${gw.url}/console/oidc/login`);
    expect(login.status, login.text).toBe(302);
    expect(login.location).toMatch(new RegExp(`^${idp.issuer}/`));
    let at = login.location!;
    for (let hops = 0; hops < 10; hops++) {
      if (at.startsWith(`${gw.url}/console/oidc/callback`)) return at;
      const u = new URL(at);
      if (u.pathname.startsWith('/interaction/')) u.searchParams.set('account', account);
      const res = await b.get(u.href);
      expect([302, 303], `${u.pathname}: ${res.text}`).toContain(res.status);
      at = res.location!;
    }
    throw new Error('the provider never sent the browser back');
  }

  /** Whether the provider asks the browser to log in (false: its session signs the browser in at once). */
  async function providerAsksToLogIn(b: Browser): Promise<boolean> {
    let at = (await b.get(`${gw.url}/console/oidc/login`)).location!;
    for (let hops = 0; hops < 10; hops++) {
      if (new URL(at).pathname.startsWith('/interaction/')) return true;
      if (at.startsWith(`${gw.url}/console/oidc/callback`)) {
        await b.get(at); // finish it, so no login cookie lingers
        return false;
      }
      at = (await b.get(at)).location!;
    }
    throw new Error('the provider never answered');
  }

  async function signIn(account: string, b = new Browser()) {
    const res = await b.get(await toCallback(b, account));
    return { ...res, browser: b };
  }

  /** The key the console receives, read from the fragment of the redirect to the console. */
  function fragmentOf(location: string | null) {
    expect(location).toMatch(new RegExp(`^${gw.url}/console/#`));
    return new URLSearchParams(new URL(location!).hash.slice(1));
  }

  const userByEmail = (email: string) =>
    gw.services.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
  const signInKeys = () =>
    gw.services.db
      .selectFrom('api_keys')
      .selectAll()
      .where('name', 'like', `${SIGN_IN_KEY_PREFIX}%`)
      .execute();

  it('tells the console which provider to offer', async () => {
    const res = await client(gw.url)('GET', '/auth/config');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ oidc: { name: 'Acme SSO', login_url: '/console/oidc/login' } });
  });

  it('provisions a user by the mapping and signs them in with a working key of that role, once', async () => {
    const first = await signIn('alice');
    expect(first.status, first.text).toBe(302);
    const f = fragmentOf(first.location);
    expect(f.get('email')).toBe('alice@acme.test');
    expect(f.get('role')).toBe('member');
    const key = f.get('oidc_key')!;
    // The login cookie is spent.
    expect(first.browser.cookies.has('gatehouse_oidc')).toBe(false);

    const me = await client(gw.url, key)('GET', '/key');
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ organization_id: acmeId, is_management_key: true });
    expect(Date.parse(me.body.data.expires_at)).toBeGreaterThan(Date.now() + 11 * 3_600_000);
    expect(Date.parse(me.body.data.expires_at)).toBeLessThan(Date.now() + 13 * 3_600_000);
    // A member: reads, creates own API keys, but no admin-only write.
    expect((await client(gw.url, key)('GET', '/keys')).status).toBe(200);
    expect((await client(gw.url, key)('POST', '/keys', { name: 'alice-own' })).status).toBe(201);
    const ws = await client(gw.url, key)('POST', '/workspaces', { name: 'Nope', slug: 'nope' });
    expect(ws.status).toBe(403);

    const user = await userByEmail('alice@acme.test');
    expect(user).toMatchObject({ first_name: 'Alice', last_name: 'Doe' });
    const members = await gw.services.db
      .selectFrom('org_members')
      .selectAll()
      .where('user_id', '=', user!.id)
      .execute();
    expect(members).toEqual([expect.objectContaining({ organization_id: acmeId, role: 'member' })]);

    // Again: the same user and membership, a second key.
    const again = await signIn('alice');
    const key2 = fragmentOf(again.location).get('oidc_key')!;
    expect(key2).not.toBe(key);
    expect((await client(gw.url, key2)('GET', '/key')).status).toBe(200);
    const users = await gw.services.db
      .selectFrom('users')
      .select('id')
      .where('email', '=', 'alice@acme.test')
      .execute();
    expect(users).toHaveLength(1);
    expect(
      await gw.services.db.selectFrom('org_members').selectAll().where('user_id', '=', user!.id).execute(),
    ).toHaveLength(1);

    // The audit log of Acme tells who came in and how.
    const events = await gw.services.db
      .selectFrom('audit_events')
      .select(['action', 'actor_kind', 'actor_user_id', 'resource_id'])
      .where('organization_id', '=', acmeId)
      .where('actor_user_id', '=', user!.id)
      .execute();
    const actions = events.map((e) => e.action);
    expect(actions.filter((a) => a === 'user.create')).toHaveLength(1);
    expect(actions.filter((a) => a === 'membership.create')).toHaveLength(1);
    expect(actions.filter((a) => a === 'console.sign_in')).toHaveLength(2);
  });

  it('sets a member’s role from a group claim, without provisioning anyone the rule does not allow', async () => {
    const bob = await signIn('bob');
    const f = fragmentOf(bob.location);
    expect(f.get('role')).toBe('admin');
    const key = f.get('oidc_key')!;
    const ws = await client(gw.url, key)('POST', '/workspaces', { name: 'Bob space', slug: 'bob-space' });
    expect(ws.status, ws.text).toBe(201);
    const bobUser = await userByEmail('bob@partner.test');
    const m = await gw.services.db
      .selectFrom('org_members')
      .selectAll()
      .where('user_id', '=', bobUser!.id)
      .executeTakeFirst();
    expect(m?.role).toBe('admin');
    const change = await gw.services.db
      .selectFrom('audit_events')
      .selectAll()
      .where('action', '=', 'membership.update')
      .where('actor_user_id', '=', bobUser!.id)
      .executeTakeFirst();
    expect(JSON.parse(change!.before_json!)).toMatchObject({ role: 'member' });
    expect(JSON.parse(change!.after_json!)).toMatchObject({ role: 'admin' });

    // frank has the group too, but is no member and the rule does not provision: refused.
    const before = (await signInKeys()).length;
    const frank = await signIn('frank');
    expect(frank.status).toBe(403);
    expect(frank.text).toContain('has no access to this gateway');
    expect(await userByEmail('frank@partner.test')).toBeUndefined();
    expect(await signInKeys()).toHaveLength(before);
  });

  it('signs an existing member in with their stored role when no rule names them', async () => {
    const erin = await signIn('erin');
    const f = fragmentOf(erin.location);
    expect(f.get('role')).toBe('admin');
    const me = await client(gw.url, f.get('oidc_key')!)('GET', '/key');
    expect(me.body.data.organization_id).toBe(otherId);
  });

  it('refuses an identity without a mapping or a verified email: no user, no key', async () => {
    const before = (await signInKeys()).length;
    const carol = await signIn('carol');
    expect(carol.status).toBe(403);
    expect(carol.location).toBeNull();
    expect(carol.text).toContain('carol@elsewhere.test has no access to this gateway');
    expect(await userByEmail('carol@elsewhere.test')).toBeUndefined();

    const dave = await signIn('dave');
    expect(dave.status).toBe(403);
    expect(dave.text).toContain('is not verified');
    expect(await userByEmail('dave@acme.test')).toBeUndefined();
    expect(await signInKeys()).toHaveLength(before);
  });

  it('refuses a tampered state, a wrong nonce, a missing or replayed login cookie', async () => {
    const before = (await signInKeys()).length;

    // The state the provider sent back, changed.
    const b1 = new Browser();
    const cb1 = new URL(await toCallback(b1, 'alice'));
    cb1.searchParams.set('state', `${cb1.searchParams.get('state')}x`);
    const tampered = await b1.get(cb1.href);
    expect(tampered.status).toBe(400);
    expect(tampered.text).toContain('could not be verified');

    // A login cookie whose nonce is not the one the ID token carries (sealed with the gateway's own
    // key, as only the gateway could: the state and the PKCE verifier still match).
    const b2 = new Browser();
    const cb2 = await toCallback(b2, 'alice');
    const sealed = b2.cookies.get('gatehouse_oidc')!;
    const login = JSON.parse(decrypt(gw.services.config.masterKey, sealed, 'oidc-login'));
    b2.cookies.set(
      'gatehouse_oidc',
      encrypt(
        gw.services.config.masterKey,
        JSON.stringify({ ...login, nonce: 'not-the-nonce' }),
        'oidc-login',
      ),
    );
    const wrongNonce = await b2.get(cb2);
    expect(wrongNonce.status).toBe(400);
    expect(wrongNonce.text).toContain('could not be verified');

    // No cookie (another browser), and a cookie that is not the gateway's.
    const b3 = new Browser();
    const cb3 = await toCallback(b3, 'alice');
    b3.cookies.delete('gatehouse_oidc');
    const noCookie = await b3.get(cb3);
    expect(noCookie.status).toBe(400);
    expect(noCookie.text).toContain('expired or was started in another browser');
    b3.cookies.set('gatehouse_oidc', 'v1.forged.cookie.value');
    expect((await b3.get(cb3)).status).toBe(400);

    // A completed callback replayed: its cookie is spent, and the code too.
    const b4 = new Browser();
    const cb4 = await toCallback(b4, 'alice');
    const spentCookie = b4.cookies.get('gatehouse_oidc')!;
    expect((await b4.get(cb4)).status).toBe(302);
    expect((await b4.get(cb4)).status).toBe(400);
    b4.cookies.set('gatehouse_oidc', spentCookie);
    expect((await b4.get(cb4)).status).toBe(400);

    // The provider's own refusal.
    const denied = await b4.get(`${gw.url}/console/oidc/callback?error=access_denied&state=x`);
    expect(denied.status).toBe(400); // the cookie was spent by the replay above

    expect(await signInKeys()).toHaveLength(before + 1);
  });

  it('signs out by deleting the session’s key, and only a sign-in’s key', async () => {
    const f = fragmentOf((await signIn('alice')).location);
    const key = f.get('oidc_key')!;
    expect((await client(gw.url, key)('GET', '/key')).status).toBe(200);
    const out = await client(gw.url, key)('POST', '/auth/sign-out');
    expect(out.status, out.text).toBe(200);
    expect(out.body).toEqual({ signed_out: true, end_session_url: expect.stringMatching(/^http:/) });
    expect((await client(gw.url, key)('GET', '/key')).status).toBe(401);

    const operatorKey = await client(gw.url, gw.managementKey)('POST', '/auth/sign-out');
    expect(operatorKey.status).toBe(409);
    expect((await client(gw.url, gw.managementKey)('GET', '/key')).status).toBe(200);
    const apiKey = await client(gw.url, gw.apiKey)('POST', '/auth/sign-out');
    expect(apiKey.status).toBe(403);
  });

  it('ends the provider session too: sign-out answers its end_session_endpoint with the sign-in’s ID token', async () => {
    const b = new Browser();
    const key = fragmentOf((await signIn('alice', b)).location).get('oidc_key')!;
    const hash = sha256Hex(key);
    // The ID token is kept on the server, sealed (not readable in the row).
    const kept = await gw.services.db
      .selectFrom('console_sign_ins')
      .selectAll()
      .where('key_hash', '=', hash)
      .executeTakeFirst();
    expect(kept?.id_token_ciphertext).toMatch(/^v1\./);
    // The provider's session signs the browser in again without asking.
    expect(await providerAsksToLogIn(b)).toBe(false);

    const out = await client(gw.url, key)('POST', '/auth/sign-out');
    expect(out.status, out.text).toBe(200);
    expect(out.headers.get('cache-control')).toBe('no-store');
    const discovery = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as {
      end_session_endpoint: string;
    };
    const end = new URL(out.body.end_session_url);
    expect(`${end.origin}${end.pathname}`).toBe(discovery.end_session_endpoint);
    expect(end.searchParams.get('client_id')).toBe(CLIENT_ID);
    expect(end.searchParams.get('post_logout_redirect_uri')).toBe(`${gw.url}/console/`);
    const hint = end.searchParams.get('id_token_hint')!;
    expect(jwtPayload(hint)).toMatchObject({ sub: 'alice', aud: CLIENT_ID, iss: idp.issuer });
    expect(kept!.id_token_ciphertext).not.toContain(hint.split('.')[1]);
    // The key and its kept token are gone.
    expect((await client(gw.url, key)('GET', '/key')).status).toBe(401);
    expect(
      await gw.services.db.selectFrom('console_sign_ins').selectAll().where('key_hash', '=', hash).execute(),
    ).toEqual([]);

    // The browser follows it: the provider confirms, ends its session and sends it back to the console.
    const confirm = await b.get(end.href);
    expect(confirm.status, confirm.text).toBe(200);
    const action = /<form[^>]*action="([^"]+)"/.exec(confirm.text)![1]!;
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.text)![1]!;
    const done = await b.post(new URL(action, end).href, { xsrf, logout: 'yes' });
    expect([302, 303]).toContain(done.status);
    expect(done.location).toBe(`${gw.url}/console/`);
    expect(await providerAsksToLogIn(b)).toBe(true);
  });

  it('ends the provider session by client_id alone when no ID token was kept, and not at all when turned off', async () => {
    const key = fragmentOf((await signIn('alice')).location).get('oidc_key')!;
    await gw.services.db.deleteFrom('console_sign_ins').where('key_hash', '=', sha256Hex(key)).execute();
    const out = await client(gw.url, key)('POST', '/auth/sign-out');
    expect(out.status, out.text).toBe(200);
    const end = new URL(out.body.end_session_url);
    expect(end.searchParams.get('client_id')).toBe(CLIENT_ID);
    expect(end.searchParams.get('post_logout_redirect_uri')).toBe(`${gw.url}/console/`);
    expect(end.searchParams.has('id_token_hint')).toBe(false);
    // The provider accepts it and sends the browser back to the console.
    const b = new Browser();
    const confirm = await b.get(end.href);
    expect(confirm.status, confirm.text).toBe(200);
    const action = /<form[^>]*action="([^"]+)"/.exec(confirm.text)![1]!;
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.text)![1]!;
    const done = await b.post(new URL(action, end).href, { xsrf, logout: 'yes' });
    expect(done.location).toBe(`${gw.url}/console/`);

    const { loadConfig } = await import('../src/config.js');
    const off = loadConfig({
      GATEHOUSE_MASTER_KEY: 'a'.repeat(64),
      GATEHOUSE_OIDC_ISSUER: 'https://idp.example.com',
      GATEHOUSE_OIDC_CLIENT_ID: 'x',
      GATEHOUSE_OIDC_CLIENT_SECRET: 's',
      GATEHOUSE_OIDC_REDIRECT_URL: 'https://gw.example.com/console/oidc/callback',
      GATEHOUSE_OIDC_END_SESSION: 'off',
    });
    expect(off.oidc?.endSession).toBe(false);
  });

  it('deletes expired sign-in keys and their kept tokens periodically, and nothing else', async () => {
    const expired = fragmentOf((await signIn('alice')).location).get('oidc_key')!;
    const live = fragmentOf((await signIn('erin')).location).get('oidc_key')!;
    const past = new Date(Date.now() - 60_000).toISOString();
    await gw.services.db
      .updateTable('api_keys')
      .set({ expires_at: past })
      .where('hash', '=', sha256Hex(expired))
      .execute();
    await gw.services.db
      .updateTable('console_sign_ins')
      .set({ expires_at: past })
      .where('key_hash', '=', sha256Hex(expired))
      .execute();
    // An expired key that no sign-in made stays (its owner's business).
    const other = await client(gw.url, gw.managementKey)('POST', '/keys', { name: 'expired by hand' });
    expect(other.status, other.text).toBe(201);
    const otherHash = sha256Hex(other.body.key);
    await gw.services.db
      .updateTable('api_keys')
      .set({ expires_at: past })
      .where('hash', '=', otherHash)
      .execute();

    const keyRow = (hash: string) =>
      gw.services.db.selectFrom('api_keys').select('hash').where('hash', '=', hash).executeTakeFirst();
    const tokenRow = (hash: string) =>
      gw.services.db
        .selectFrom('console_sign_ins')
        .select('key_hash')
        .where('key_hash', '=', hash)
        .executeTakeFirst();
    const sweeper = new SignInSweeper({ db: gw.services.db, keys: gw.services.keys, log: gw.services.log });
    sweeper.start(25);
    try {
      await expect.poll(() => keyRow(sha256Hex(expired)), { timeout: 5_000 }).toBeUndefined();
    } finally {
      sweeper.stop();
    }
    expect(await tokenRow(sha256Hex(expired))).toBeUndefined();
    expect(await keyRow(sha256Hex(live))).toBeDefined();
    expect(await tokenRow(sha256Hex(live))).toBeDefined();
    expect(await keyRow(otherHash)).toBeDefined();
    expect((await client(gw.url, live)('GET', '/key')).status).toBe(200);
  });

  it('deletes a person’s expired sign-in keys and their kept tokens when they sign in again', async () => {
    const old = sha256Hex(fragmentOf((await signIn('erin')).location).get('oidc_key')!);
    const past = new Date(Date.now() - 60_000).toISOString();
    await gw.services.db.updateTable('api_keys').set({ expires_at: past }).where('hash', '=', old).execute();
    await gw.services.db
      .updateTable('console_sign_ins')
      .set({ expires_at: past })
      .where('key_hash', '=', old)
      .execute();
    const fresh = sha256Hex(fragmentOf((await signIn('erin')).location).get('oidc_key')!);
    const keyRows = (hash: string) =>
      gw.services.db.selectFrom('api_keys').select('hash').where('hash', '=', hash).execute();
    const tokenRows = (hash: string) =>
      gw.services.db.selectFrom('console_sign_ins').select('key_hash').where('key_hash', '=', hash).execute();
    expect(await keyRows(old)).toEqual([]);
    expect(await tokenRows(old)).toEqual([]);
    expect(await keyRows(fresh)).toHaveLength(1);
    expect(await tokenRows(fresh)).toHaveLength(1);
  });

  it('never shows the client secret in an answer or a log line', async () => {
    const b = new Browser();
    await signIn('alice', b);
    await signIn('carol', b);
    const cfg = await client(gw.url)('GET', '/auth/config');
    expect(cfg.text).not.toContain(CLIENT_SECRET);
    for (const seen of b.seen) expect(seen).not.toContain(CLIENT_SECRET);
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.join('')).not.toContain(CLIENT_SECRET);
    expect(logs.join('')).toContain('no role mapping for this identity');
  });
});

describe('console sign-in when no provider is configured', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('sqlite');
  }, 120_000);
  afterAll(() => gw?.stop());

  it('offers no provider and answers the browser routes 404', async () => {
    expect((await client(gw.url)('GET', '/auth/config')).body).toEqual({ oidc: null });
    for (const path of ['/console/oidc/login', '/console/oidc/callback?code=a&state=b']) {
      const page = await fetch(`${gw.url}${path}`, { redirect: 'manual', headers: { accept: 'text/html' } });
      expect(page.status).toBe(404);
      expect(await page.text()).toContain('not configured');
      // Anything but a browser gets the error envelope.
      const json = await fetch(`${gw.url}${path}`, { redirect: 'manual' });
      expect(json.status).toBe(404);
      expect(((await json.json()) as { error: { code: number } }).error.code).toBe(404);
    }
  });

  it('refuses a configuration with a missing secret or a malformed mapping at start', async () => {
    const base = {
      GATEHOUSE_OIDC_ISSUER: 'https://idp.example.com',
      GATEHOUSE_OIDC_CLIENT_ID: 'x',
      GATEHOUSE_OIDC_REDIRECT_URL: 'https://gw.example.com/console/oidc/callback',
    };
    const { loadConfig } = await import('../src/config.js');
    const env = (extra: Record<string, string>) => ({
      GATEHOUSE_MASTER_KEY: 'a'.repeat(64),
      ...base,
      ...extra,
    });
    expect(() => loadConfig(env({}))).toThrow(/GATEHOUSE_OIDC_CLIENT_SECRET is required/);
    expect(() =>
      loadConfig(env({ GATEHOUSE_OIDC_CLIENT_SECRET: 's', GATEHOUSE_OIDC_ROLE_MAPPING: '{' })),
    ).toThrow(/not valid JSON/);
    expect(() =>
      loadConfig(
        env({
          GATEHOUSE_OIDC_CLIENT_SECRET: 's',
          GATEHOUSE_OIDC_ROLE_MAPPING: JSON.stringify([
            { email_domain: 'a.test', organization: 'A', role: 'boss' },
          ]),
        }),
      ),
    ).toThrow(/role must be one of/);
    expect(() =>
      loadConfig(env({ GATEHOUSE_OIDC_CLIENT_SECRET: 's', GATEHOUSE_OIDC_ISSUER: 'http://idp.example.com' })),
    ).toThrow(/https/);
    const ok = loadConfig(env({ GATEHOUSE_OIDC_CLIENT_SECRET: 's' }));
    expect(ok.oidc).toMatchObject({
      name: 'your identity provider',
      requireVerifiedEmail: true,
      sessionHours: 12,
    });
  });
});
