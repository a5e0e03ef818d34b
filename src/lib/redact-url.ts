/**
 * Query parameters whose values are credentials in someone's API (`?api_key=`, `?key=` of Google,
 * `?token=`, `?access_token=`, presigned URLs' `X-Amz-Signature` and `X-Amz-Credential`, …),
 * matched on the decoded name, case-insensitively.
 */
const SENSITIVE =
  /^(?:key|sig|pwd|auth|jwt|code)$|api[-_.]?key|[-_.]key$|token|secret|passw|signature|credential|authorization|session/i;

export const REDACTED = '[REDACTED]';

function decodedName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}

/**
 * The URL (or path with query) as it may be logged: the values of credential-looking query
 * parameters replaced by `[REDACTED]`, everything else byte for byte.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const hash = url.indexOf('#', q);
  const end = hash === -1 ? url.length : hash;
  const params = url
    .slice(q + 1, end)
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      const name = eq === -1 ? part : part.slice(0, eq);
      return SENSITIVE.test(decodedName(name)) ? `${name}=${REDACTED}` : part;
    });
  return `${url.slice(0, q + 1)}${params.join('&')}${url.slice(end)}`;
}
