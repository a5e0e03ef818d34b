/**
 * Console sign-in with an OpenID Connect provider (authorization code flow with PKCE, state and
 * nonce, through openid-client). The flow keeps nothing in memory: what the callback must check
 * travels in a short-lived cookie sealed with the master key, so any process of `serve --workers N`
 * (or any node) can finish a sign-in another one began.
 *
 * A signed-in person becomes a short-lived management key of their user in one organization, so
 * the existing authentication, roles and audit apply unchanged.
 */
import * as client from 'openid-client';
import type { AuditLog } from '../audit/service.js';
import type { Db } from '../db/connection.js';
import { decrypt, encrypt } from '../lib/crypto.js';
import { newId } from '../lib/ids.js';
import type { Log } from '../lib/log.js';
import { nowIso } from '../lib/time.js';
import type { KeysService } from './keys.service.js';
import { type Claims, ruleMatches } from './oidc.rules.js';
import { dropExpiredSignIns, rememberIdToken, SIGN_IN_KEY_PREFIX } from './oidc.sessions.js';
import type { OidcSettings, RoleRule } from './oidc.settings.js';
import * as orgs from './organizations.store.js';

export { SIGN_IN_KEY_PREFIX } from './oidc.sessions.js';
export const LOGIN_COOKIE = 'gatehouse_oidc';
/** How long a sign-in may take at the provider, seconds. */
export const LOGIN_TTL_SECONDS = 600;
const COOKIE_AAD = 'oidc-login';

/** A sign-in the gateway refuses: `message` is shown to the person (no secret, no internals). */
export class SignInRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'SignInRefused';
  }
}

interface LoginState {
  state: string;
  nonce: string;
  verifier: string;
  /** Expiry, epoch ms. */
  exp: number;
}

export interface SignedIn {
  key: string;
  email: string;
  organizationId: string;
  role: orgs.OrgRole;
}

export interface OidcDeps {
  db: Db;
  settings: OidcSettings;
  masterKey: Buffer;
  keys: KeysService;
  audit: AuditLog;
  log: Log;
}

export class OidcSignIn {
  /** The provider's discovered configuration; dropped on failure so the next sign-in retries. */
  private discovered: Promise<client.Configuration> | null = null;

  constructor(private readonly deps: OidcDeps) {}

  get name(): string {
    return this.deps.settings.name;
  }

  /** Where the console lives, beside the callback (…/console/oidc/callback → …/console/). */
  consoleUrl(): string {
    return new URL('../', this.deps.settings.redirectUrl).href;
  }

  /** Whether the login cookie needs `Secure` (the gateway is reached over https). */
  get secureCookie(): boolean {
    return this.deps.settings.redirectUrl.protocol === 'https:';
  }

  private provider(): Promise<client.Configuration> {
    if (!this.discovered) {
      const { issuer, clientId, clientSecret } = this.deps.settings;
      // Plain http is accepted only for a loopback issuer (oidc.settings.ts).
      const insecure = issuer.protocol === 'http:' ? { execute: [client.allowInsecureRequests] } : undefined;
      this.discovered = client
        .discovery(issuer, clientId, clientSecret, client.ClientSecretBasic(clientSecret), insecure)
        .catch((err) => {
          this.discovered = null;
          throw err;
        });
    }
    return this.discovered;
  }

  /** The provider's authorization URL and the sealed cookie value the callback will check. */
  async begin(): Promise<{ url: string; cookie: string }> {
    const config = await this.provider().catch((err) => {
      this.deps.log.error({ err: errSummary(err) }, 'oidc: the provider could not be discovered');
      throw new SignInRefused(502, 'The identity provider cannot be reached. Try again later.');
    });
    const login: LoginState = {
      state: client.randomState(),
      nonce: client.randomNonce(),
      verifier: client.randomPKCECodeVerifier(),
      exp: Date.now() + LOGIN_TTL_SECONDS * 1000,
    };
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: this.deps.settings.redirectUrl.href,
      scope: this.deps.settings.scopes,
      state: login.state,
      nonce: login.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(login.verifier),
      code_challenge_method: 'S256',
    });
    return { url: url.href, cookie: encrypt(this.deps.masterKey, JSON.stringify(login), COOKIE_AAD) };
  }

  /**
   * Finishes a sign-in: checks the provider's answer against the cookie (state, PKCE, then the ID
   * token's signature, issuer, audience, expiry and nonce — all by openid-client), finds or
   * provisions the user per the role mapping and mints the session's management key.
   */
  async finish(
    query: string,
    cookie: string | undefined,
    meta: { requestId: string; ip: string },
  ): Promise<SignedIn> {
    const login = this.openCookie(cookie);
    const params = new URLSearchParams(query);
    if (params.has('error')) {
      // The provider's own refusal (the person cancelled, or is not allowed to use this client).
      const code = (params.get('error') ?? '').slice(0, 100);
      this.deps.log.info({ error: code }, 'oidc: the provider refused the sign-in');
      throw new SignInRefused(403, 'The identity provider did not sign you in. Try again.');
    }
    const config = await this.provider().catch((err) => {
      this.deps.log.error({ err: errSummary(err) }, 'oidc: the provider could not be discovered');
      throw new SignInRefused(502, 'The identity provider cannot be reached. Try again later.');
    });
    const current = new URL(this.deps.settings.redirectUrl.href);
    current.search = params.toString();
    let claims: Claims;
    let idToken: string | undefined;
    try {
      const tokens = await client.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: login.verifier,
        expectedState: login.state,
        expectedNonce: login.nonce,
        idTokenExpected: true,
      });
      claims = { ...(tokens.claims() ?? {}) };
      idToken = tokens.id_token;
      // Many providers put email and groups only in userinfo (checked to be the ID token's subject).
      if (config.serverMetadata().userinfo_endpoint && tokens.access_token) {
        const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub as string);
        claims = { ...info, ...claims };
      }
    } catch (err) {
      this.deps.log.warn({ err: errSummary(err) }, 'oidc: sign-in response refused');
      throw new SignInRefused(400, 'The sign-in could not be verified. Start again from the console.');
    }
    return this.admit(claims, idToken, meta);
  }

  /**
   * Where to send the browser to end the person's session at the provider too, or null when the
   * provider advertises no `end_session_endpoint` (or cannot be reached: the gateway's sign-out
   * stands alone then). With the sign-in's ID token as `id_token_hint` when it was kept; back to the
   * console afterwards (a post-logout redirect URI the provider must have registered).
   */
  async endSessionUrl(idToken: string | null): Promise<string | null> {
    if (!this.deps.settings.endSession) return null;
    let config: client.Configuration;
    try {
      config = await this.provider();
    } catch (err) {
      this.deps.log.warn({ err: errSummary(err) }, 'oidc: the provider could not be discovered for sign-out');
      return null;
    }
    if (!config.serverMetadata().end_session_endpoint) return null;
    const params: Record<string, string> = { post_logout_redirect_uri: this.consoleUrl() };
    if (idToken) params.id_token_hint = idToken;
    return client.buildEndSessionUrl(config, params).href;
  }

  private openCookie(cookie: string | undefined): LoginState {
    const expired = new SignInRefused(
      400,
      'This sign-in has expired or was started in another browser. Start again from the console.',
    );
    if (!cookie) throw expired;
    let login: LoginState;
    try {
      login = JSON.parse(decrypt(this.deps.masterKey, cookie, COOKIE_AAD)) as LoginState;
    } catch {
      throw expired;
    }
    if (typeof login.exp !== 'number' || login.exp < Date.now()) throw expired;
    return login;
  }

  /** The user, organization and role for these claims, then the session's key. */
  private async admit(
    claims: Claims,
    idToken: string | undefined,
    meta: { requestId: string; ip: string },
  ): Promise<SignedIn> {
    const { settings, db } = this.deps;
    const email = typeof claims.email === 'string' ? claims.email.trim().toLowerCase() : '';
    if (!/^[^@\s]+@[^@\s]+$/.test(email))
      throw new SignInRefused(403, 'Your identity provider did not share an email address.');
    if (settings.requireVerifiedEmail && claims.email_verified !== true && claims.email_verified !== 'true')
      throw new SignInRefused(403, `The email address ${email} is not verified at your identity provider.`);

    let user = await orgs.findUserByEmail(db, email);
    let placed: { organizationId: string; role: orgs.OrgRole } | null = null;
    for (const rule of settings.rules) {
      if (!ruleMatches(rule, email, claims)) continue;
      const org = await this.organizationOf(rule);
      if (!org) continue;
      const member = user ? await orgs.findMember(db, org.id, user.id) : undefined;
      if (!member && !rule.provision) continue;
      if (!user) user = await this.provisionUser(email, claims, org.id, meta);
      if (!member) await this.addMember(org.id, user.id, rule.role, meta);
      else if (member.role !== rule.role)
        await this.changeRole(org.id, user.id, member.role, rule.role, meta);
      placed = { organizationId: org.id, role: rule.role };
      break;
    }
    if (!placed && user) {
      // No rule: a member of an organization (added by the operator) signs in with their stored role.
      const first = (await orgs.membershipsOf(db, user.id))[0];
      if (first) placed = { organizationId: first.organization_id, role: first.role };
    }
    if (!placed || !user) {
      this.deps.log.warn({ email }, 'oidc: sign-in refused, no role mapping for this identity');
      throw new SignInRefused(
        403,
        `${email} has no access to this gateway. Ask your operator to add you to an organization.`,
      );
    }
    const key = await this.mintKey(user.id, email, placed, idToken, meta);
    return { key, email, ...placed };
  }

  /** The rule's organization, by id, else by name (null, and a log line, when none or ambiguous). */
  private async organizationOf(rule: RoleRule) {
    const byId = await orgs.findOrganization(this.deps.db, rule.organization);
    if (byId) return byId;
    const named = await orgs.findOrganizationsByName(this.deps.db, rule.organization);
    if (named.length === 1) return named[0];
    this.deps.log.warn(
      { organization: rule.organization, found: named.length },
      'oidc: a role-mapping rule names no single organization; rule skipped',
    );
    return null;
  }

  private async provisionUser(email: string, claims: Claims, organizationId: string, meta: AuditMeta) {
    const text = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim().slice(0, 200) : null);
    const user: orgs.UserRow = {
      id: newId(),
      email,
      first_name: text(claims.given_name),
      last_name: text(claims.family_name),
      interns_programme: 0,
      created_at: nowIso(),
    };
    try {
      await orgs.insertUser(this.deps.db, user);
    } catch (err) {
      // The same person's sign-in in another tab or process created them first.
      const raced = await orgs.findUserByEmail(this.deps.db, email);
      if (raced) return raced;
      throw err;
    }
    await this.record(meta, organizationId, user.id, 'user.create', 'user', user.id, null, {
      id: user.id,
      email,
      first_name: user.first_name,
      last_name: user.last_name,
    });
    return user;
  }

  private async addMember(organizationId: string, userId: string, role: orgs.OrgRole, meta: AuditMeta) {
    try {
      await orgs.insertMember(this.deps.db, {
        organization_id: organizationId,
        user_id: userId,
        role,
        created_at: nowIso(),
      });
    } catch (err) {
      // A concurrent sign-in added the membership first (with this rule's role).
      if (await orgs.findMember(this.deps.db, organizationId, userId)) return;
      throw err;
    }
    await this.record(meta, organizationId, userId, 'membership.create', 'membership', userId, null, {
      user_id: userId,
      role,
    });
  }

  private async changeRole(
    organizationId: string,
    userId: string,
    from: orgs.OrgRole,
    to: orgs.OrgRole,
    meta: AuditMeta,
  ) {
    await orgs.updateMemberRole(this.deps.db, organizationId, userId, to);
    await this.record(
      meta,
      organizationId,
      userId,
      'membership.update',
      'membership',
      userId,
      { user_id: userId, role: from },
      { user_id: userId, role: to },
    );
  }

  private async mintKey(
    userId: string,
    email: string,
    placed: { organizationId: string; role: orgs.OrgRole },
    idToken: string | undefined,
    meta: AuditMeta,
  ): Promise<string> {
    // Expired sign-in keys of this user in this organization: they would only pile up.
    await dropExpiredSignIns(this.deps.db, this.deps.keys, nowIso(), {
      organizationId: placed.organizationId,
      userId,
    });
    const expires = new Date(Date.now() + this.deps.settings.sessionHours * 3_600_000).toISOString();
    const { row, key } = await this.deps.keys.create(
      placed.organizationId,
      { name: `${SIGN_IN_KEY_PREFIX}${email}`, creator_user_id: userId, expires_at: expires },
      { management: true },
    );
    if (idToken) await rememberIdToken(this.deps.db, this.deps.masterKey, row.hash, idToken, expires);
    await this.record(meta, placed.organizationId, userId, 'console.sign_in', 'key', row.hash, null, {
      hash: row.hash,
      name: row.name,
      label: row.label,
      role: placed.role,
      expires_at: row.expires_at,
    });
    return key;
  }

  private record(
    meta: AuditMeta,
    organizationId: string,
    userId: string,
    action: string,
    resourceType: string,
    resourceId: string,
    before: unknown,
    after: unknown,
  ) {
    return this.deps.audit.record({
      organizationId,
      workspaceId: null,
      actorKind: 'system',
      actorId: null,
      actorUserId: userId,
      action,
      resourceType,
      resourceId,
      before,
      after,
      request: { via: 'oidc', issuer: this.deps.settings.issuer.href },
      requestId: meta.requestId,
      remoteAddress: meta.ip,
      status: 200,
    });
  }
}

type AuditMeta = { requestId: string; ip: string };

/** What a failure of the provider exchange says, without bodies or headers (never the client secret). */
function errSummary(err: unknown) {
  const e = err as { name?: string; code?: string; message?: string; error?: string };
  return { name: e?.name, code: e?.code, error: e?.error, message: e?.message?.slice(0, 300) };
}
