/**
 * Console sign-in with an OpenID Connect provider: the operator's settings (GATEHOUSE_OIDC_*) and
 * the role-mapping rules, checked at start so a typo fails the boot rather than a sign-in.
 */
import { readFileSync } from 'node:fs';
import type { OrgRole } from './organizations.store.js';

/**
 * Who gets into which organization with which role. Exactly one of `email`, `email_domain` or
 * `claim` (with `value`) says whom the rule matches; rules are tried in order, the first that
 * applies wins.
 */
export interface RoleRule {
  email?: string;
  email_domain?: string;
  /** A claim of the ID token or userinfo (e.g. `groups`): a string equal to `value`, or a list holding it. */
  claim?: string;
  value?: string;
  /** The organization's id or its name. */
  organization: string;
  role: OrgRole;
  /** Create the user and the membership when missing (default false: the rule only sets the role of members). */
  provision: boolean;
}

export interface OidcSettings {
  issuer: URL;
  clientId: string;
  /** A secret: never logged, never in an answer. */
  clientSecret: string;
  /** Where the provider sends the browser back (…/console/oidc/callback), as registered there. */
  redirectUrl: URL;
  scopes: string;
  /** The provider's name on the console's sign-in button. */
  name: string;
  rules: RoleRule[];
  /** Refuse identities whose `email_verified` is not true (GATEHOUSE_OIDC_ALLOW_UNVERIFIED_EMAIL=on turns it off). */
  requireVerifiedEmail: boolean;
  /** How long the management key of a console sign-in lasts, hours. */
  sessionHours: number;
  /**
   * Sign-out also ends the session at the provider when it has an `end_session_endpoint`
   * (GATEHOUSE_OIDC_END_SESSION=off: sign-out ends the gateway's session only).
   */
  endSession: boolean;
}

type Env = Record<string, string | undefined>;

const ROLES: readonly string[] = ['owner', 'admin', 'member'];
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** An http(s) URL; plain http only on loopback (a local provider in development or tests). */
function urlFrom(env: Env, name: string): URL {
  const raw = env[name]?.trim();
  if (!raw) throw new Error(`${name} is required when GATEHOUSE_OIDC_ISSUER is set`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`${name} must be an absolute http(s) URL`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname)))
    throw new Error(`${name} must be an https URL (plain http only on localhost)`);
  return url;
}

/** The rules from GATEHOUSE_OIDC_ROLE_MAPPING (JSON) or the file GATEHOUSE_OIDC_ROLE_MAPPING_FILE names. */
function rulesFrom(env: Env): RoleRule[] {
  const file = env.GATEHOUSE_OIDC_ROLE_MAPPING_FILE?.trim();
  const text = file ? readFileSync(file, 'utf8') : (env.GATEHOUSE_OIDC_ROLE_MAPPING ?? '').trim();
  const where = file ? `GATEHOUSE_OIDC_ROLE_MAPPING_FILE (${file})` : 'GATEHOUSE_OIDC_ROLE_MAPPING';
  if (!text) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${where} is not valid JSON`);
  }
  if (!Array.isArray(parsed)) throw new Error(`${where} must be a JSON array of rules`);
  return parsed.map((r, i) => parseRule(r, `${where}, rule ${i + 1}`));
}

const KNOWN = new Set(['email', 'email_domain', 'claim', 'value', 'organization', 'role', 'provision']);

export function parseRule(r: unknown, where: string): RoleRule {
  if (!r || typeof r !== 'object' || Array.isArray(r)) throw new Error(`${where} must be an object`);
  const o = r as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!KNOWN.has(k)) throw new Error(`${where}: unknown field ${k}`);
  const str = (k: string) => {
    const v = o[k];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || !v.trim()) throw new Error(`${where}: ${k} must be a non-empty string`);
    return v.trim();
  };
  const email = str('email')?.toLowerCase();
  const domain = str('email_domain')?.toLowerCase().replace(/^@/, '');
  const claim = str('claim');
  const value = str('value');
  const matchers = [email, domain, claim].filter((m) => m !== undefined).length;
  if (matchers !== 1) throw new Error(`${where}: name exactly one of email, email_domain or claim`);
  if ((claim === undefined) !== (value === undefined))
    throw new Error(`${where}: claim and value go together`);
  const organization = str('organization');
  if (!organization) throw new Error(`${where}: organization (an id or a name) is required`);
  const role = str('role');
  if (!role || !ROLES.includes(role)) throw new Error(`${where}: role must be one of ${ROLES.join(', ')}`);
  if (o.provision !== undefined && typeof o.provision !== 'boolean')
    throw new Error(`${where}: provision must be true or false`);
  return {
    ...(email !== undefined ? { email } : {}),
    ...(domain !== undefined ? { email_domain: domain } : {}),
    ...(claim !== undefined ? { claim, value } : {}),
    organization,
    role: role as OrgRole,
    provision: o.provision === true,
  };
}

/** The OIDC settings, or null when GATEHOUSE_OIDC_ISSUER is not set (console sign-in by key only). */
export function oidcSettings(env: Env): OidcSettings | null {
  const issuerRaw = env.GATEHOUSE_OIDC_ISSUER?.trim();
  if (!issuerRaw) return null;
  const issuer = urlFrom(env, 'GATEHOUSE_OIDC_ISSUER');
  const clientId = env.GATEHOUSE_OIDC_CLIENT_ID?.trim();
  if (!clientId) throw new Error('GATEHOUSE_OIDC_CLIENT_ID is required when GATEHOUSE_OIDC_ISSUER is set');
  const clientSecret = env.GATEHOUSE_OIDC_CLIENT_SECRET?.trim();
  if (!clientSecret)
    throw new Error('GATEHOUSE_OIDC_CLIENT_SECRET is required when GATEHOUSE_OIDC_ISSUER is set');
  const hoursRaw = env.GATEHOUSE_OIDC_SESSION_HOURS?.trim();
  const sessionHours = hoursRaw ? Number(hoursRaw) : 12;
  if (!Number.isFinite(sessionHours) || sessionHours <= 0 || sessionHours > 24 * 30)
    throw new Error('GATEHOUSE_OIDC_SESSION_HOURS must be a number of hours above 0 and at most 720');
  const scopes = (env.GATEHOUSE_OIDC_SCOPES?.trim() || 'openid email profile').split(/\s+/);
  if (!scopes.includes('openid')) scopes.unshift('openid');
  const allowUnverified = (env.GATEHOUSE_OIDC_ALLOW_UNVERIFIED_EMAIL ?? '').toLowerCase();
  return {
    issuer,
    clientId,
    clientSecret,
    redirectUrl: urlFrom(env, 'GATEHOUSE_OIDC_REDIRECT_URL'),
    scopes: scopes.join(' '),
    name: env.GATEHOUSE_OIDC_NAME?.trim() || 'your identity provider',
    rules: rulesFrom(env),
    requireVerifiedEmail: !['on', 'true', '1'].includes(allowUnverified),
    sessionHours,
    endSession: !['off', 'false', '0'].includes((env.GATEHOUSE_OIDC_END_SESSION ?? '').trim().toLowerCase()),
  };
}
