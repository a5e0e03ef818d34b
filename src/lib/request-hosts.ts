import type { IncomingHttpHeaders } from 'node:http';

/** `host[:port]` → the lowercase hostname (IPv6 keeps its brackets), without a trailing dot. */
function hostname(value: string): string {
  const v = value.trim().toLowerCase();
  const name = v.startsWith('[') ? v.slice(0, v.indexOf(']') + 1) : (v.split(':', 1)[0] ?? '');
  return name.replace(/\.$/, '');
}

/**
 * Every hostname a request names: its `Host` header and each entry of `X-Forwarded-Host` (set by a
 * reverse proxy that rewrites Host). Meant for refusals only (regional hostnames): a client picks
 * both headers freely, so a forged value can only get its own request refused, never let it through.
 * Read from the headers directly, so the rule does not depend on Fastify's trustProxy (not enabled).
 */
export function namedHosts(headers: IncomingHttpHeaders): string[] {
  const forwarded = headers['x-forwarded-host'];
  const values = [headers.host ?? '', ...(Array.isArray(forwarded) ? forwarded : [forwarded ?? ''])]
    .flatMap((v) => v.split(','))
    .map(hostname);
  return [...new Set(values.filter((h) => h.length > 0))];
}
