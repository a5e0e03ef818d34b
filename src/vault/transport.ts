import { badRequest } from '../lib/errors.js';

/**
 * How a secret may travel (digest §7, beyond `hosts`): over HTTPS to port 443 only, unless the
 * secret says otherwise. `allow_http: true` also allows plain HTTP (port 80): the value then
 * crosses the network readable by anyone on the path, so it is an explicit choice per secret.
 * `ports` lists further ports the value may be sent to (with either allowed scheme).
 */

export const MAX_PORTS = 20;

export interface SecretTransport {
  allowHttp: boolean;
  /** Ports beyond the scheme's default (443, or 80 for http), ascending. */
  ports: number[];
}

export const DEFAULT_TRANSPORT: SecretTransport = { allowHttp: false, ports: [] };

/** The `ports` list of a write: integers 1–65535, duplicates collapsed, sorted; a 400 otherwise. */
export function normalizePorts(ports: readonly unknown[] | undefined): number[] {
  if (ports === undefined) return [];
  if (ports.length > MAX_PORTS) throw badRequest(`ports must list at most ${MAX_PORTS} ports`);
  ports.forEach((p, i) => {
    if (!Number.isInteger(p) || (p as number) < 1 || (p as number) > 65_535) {
      throw badRequest(`ports[${i}] must be an integer from 1 to 65535`);
    }
  });
  return [...new Set(ports as number[])].sort((a, b) => a - b);
}

/**
 * Why secret `name` may not go to a URL of this scheme and port, or null when it may. The port is
 * the URL's own, or the scheme's default when it names none.
 */
export function transportProblem(
  name: string,
  t: SecretTransport,
  scheme: 'http' | 'https',
  port: number,
): { code: 'scheme_not_allowed' | 'port_not_allowed'; message: string } | null {
  if (scheme === 'http' && !t.allowHttp) {
    return {
      code: 'scheme_not_allowed',
      message: `Secret ${name} is sent over HTTPS only; use an https:// URL (plain http needs allow_http on the secret)`,
    };
  }
  const standard = scheme === 'https' ? 443 : 80;
  if (port !== standard && !t.ports.includes(port)) {
    return {
      code: 'port_not_allowed',
      message: `Secret ${name} may not be sent to port ${port} (allowed: ${[standard, ...t.ports].join(', ')}; list other ports in the secret's ports)`,
    };
  }
  return null;
}
