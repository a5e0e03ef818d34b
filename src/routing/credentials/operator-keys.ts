import type { OperatorKey, ProviderConfig } from '../../providers/types.js';
import { CatalogError } from '../catalog-error.js';
import type { Credential } from '../catalog-types.js';
import { fingerprint } from './fingerprint.js';

/** A key's name: shown in /metrics labels and the operator endpoint, so plain and short. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** A provider entry's `keys` as GATEHOUSE_CONFIG writes it. */
interface RawEntry {
  slug?: unknown;
  keys?: unknown;
  api_key?: unknown;
  api_key_env?: unknown;
  auth?: unknown;
}

/**
 * A provider entry's several operator keys (`keys: [{ name, key | key_env, weight }]`), or null
 * when it has none (then `api_key` / `api_key_env` configure its one key). Refused at start with
 * the field named: a malformed entry, a key_env variable that is not set, a duplicate name, a
 * weight that is not a positive number, `keys` beside `api_key`/`api_key_env`/`auth`.
 */
export function parseOperatorKeys(
  p: RawEntry,
  where: string,
  env: Record<string, string | undefined>,
): OperatorKey[] | null {
  if (p.keys === undefined) return null;
  const fail = (field: string, why: string): never => {
    throw new CatalogError(`${where}.${field} (provider ${String(p.slug)}): ${why}`);
  };
  if (!Array.isArray(p.keys) || p.keys.length === 0)
    fail('keys', 'must be a non-empty list of { name, key or key_env, weight }');
  if (p.api_key !== undefined || p.api_key_env !== undefined)
    fail('keys', 'takes the place of api_key/api_key_env: configure one or the other');
  if (p.auth !== undefined)
    fail('keys', 'cannot be combined with auth (an Entra ID token is one credential)');
  const names = new Set<string>();
  return (p.keys as unknown[]).map((raw, i) => {
    const at = `keys[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return fail(at, 'must be an object');
    const k = raw as Record<string, unknown>;
    const name = k.name ?? k.id ?? `key-${i + 1}`;
    if (typeof name !== 'string' || !NAME.test(name))
      fail(`${at}.name`, 'must be 1-64 letters, digits, dots, dashes or underscores');
    if (names.has(name as string)) fail(`${at}.name`, `duplicate name ${String(name)}`);
    names.add(name as string);
    if ((k.key === undefined) === (k.key_env === undefined)) fail(at, 'needs exactly one of key or key_env');
    let secret: string | undefined;
    if (k.key !== undefined) {
      if (typeof k.key !== 'string' || k.key.trim() === '') fail(`${at}.key`, 'must be a non-empty string');
      secret = (k.key as string).trim();
    } else {
      if (typeof k.key_env !== 'string' || k.key_env === '') fail(`${at}.key_env`, 'must name a variable');
      secret = env[k.key_env as string]?.trim();
      if (!secret) fail(`${at}.key_env`, `the variable ${String(k.key_env)} is not set`);
    }
    const weight = k.weight ?? 1;
    if (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0 || weight > 1_000_000)
      fail(`${at}.weight`, 'must be a number above 0 (at most 1000000)');
    return { name: name as string, apiKey: secret as string, weight: weight as number };
  });
}

/**
 * The credentials of a provider entry: each configured key, or its one key (`api_key`, or none for
 * a keyless server) named `default`. Built once per catalog load; the breaker of each is keyed by
 * provider and name, versioned by the secret's fingerprint (a new secret starts afresh).
 */
export function operatorCredentials(config: ProviderConfig): Credential[] {
  const keys = config.keys ?? [{ name: 'default', apiKey: config.apiKey, weight: 1 }];
  return keys.map((k) => ({
    apiKey: k.apiKey,
    isByok: false,
    name: k.name,
    weight: k.weight,
    health: { key: `${config.slug}/${k.name}`, version: fingerprint(k.apiKey) },
  }));
}
