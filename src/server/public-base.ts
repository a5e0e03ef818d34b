import type { FastifyRequest } from 'fastify';

const first = (v: string | string[] | undefined): string | undefined =>
  (Array.isArray(v) ? v[0] : v)?.split(',')[0]?.trim() || undefined;
const HOST = /^(?:[a-z0-9.-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i;

/**
 * Where the client reaches this gateway, for links an answer gives back (results files, a video
 * job's polling URL): the operator's public URL (GATEHOUSE_PUBLIC_URL) when set; else built from
 * the request: `X-Forwarded-Proto` / `X-Forwarded-Host` as a reverse proxy sets them, else the
 * connection's scheme and `Host`. A client forging them only misdirects its own next call.
 */
export function publicOrigin(req: FastifyRequest, publicUrl: string | null): string {
  if (publicUrl) return publicUrl;
  const proto = first(req.headers['x-forwarded-proto']);
  const scheme = proto === 'https' || proto === 'http' ? proto : req.protocol;
  const forwarded = first(req.headers['x-forwarded-host']);
  const host = [forwarded, req.headers.host].find((h) => h !== undefined && HOST.test(h)) ?? 'localhost';
  return `${scheme}://${host}`;
}
