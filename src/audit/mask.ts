/** What a masked value reads as in the audit log. */
export const REDACTED = '[redacted]';

/**
 * Field names whose values are secrets: API key secrets (`key`), BYOK keys, vault values, tokens,
 * passwords. Matched against the whole name, case-insensitive, so `api_key`, `clientSecret` and
 * `admin_token` match too.
 */
const SECRET_NAME = /key|secret|token(?!s)|password|passphrase|credential|^value$/i;
/**
 * Names that match SECRET_NAME but hold identifiers or counts, not secrets: key hashes and ids,
 * flags, display labels and names (`tokens` plural is a count and never matched above).
 */
const NOT_SECRET = /(_|^)(hash|hashes|id|ids|label|name)$|^is_/i;

const isSecretName = (name: string) => SECRET_NAME.test(name) && !NOT_SECRET.test(name);

/**
 * Objects whose every value is a secret whatever its name: HTTP headers a caller configures (a
 * webhook's `Authorization`, an API key under any header name).
 */
const ALL_SECRET = /^headers$/i;

/**
 * A copy of `value` with every secret field's value replaced by "[redacted]", at any depth (arrays
 * and nested objects included). The one masking function of the audit log: every before, after and
 * request body goes through it before it is stored. Booleans and nulls stay (they disclose nothing
 * and say whether a secret is set).
 */
export function maskSecrets(value: unknown, depth = 0): unknown {
  // Bodies are depth-limited on the way in; this bound only keeps a cyclic value from recursing.
  if (depth > 64) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, depth + 1));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(value)) {
    if (ALL_SECRET.test(name) && v !== null && typeof v === 'object' && !Array.isArray(v)) {
      out[name] = Object.fromEntries(Object.keys(v).map((h) => [h, REDACTED]));
      continue;
    }
    out[name] =
      isSecretName(name) && v !== null && typeof v !== 'boolean' ? REDACTED : maskSecrets(v, depth + 1);
  }
  return out;
}
