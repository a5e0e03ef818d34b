import { badRequest } from '../lib/errors.js';

/**
 * The hosts a secret may be released to (digest §7): exact hostnames or IPv4 literals. Entries are
 * lowercased and lose one trailing dot; duplicates collapse (first occurrence kept). Schemes,
 * ports, paths, wildcards, IPv6, empty entries and whitespace are refused — egress matches a
 * request's host against this list exactly, so anything looser would be a silent never-match or a
 * wider release than the caller meant.
 */

export const MAX_HOSTS = 100;
const MAX_HOSTNAME = 253;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const OCTET = /^(?:0|[1-9][0-9]{0,2})$/;

/** A host entry quoted for an error message (hosts are not secret, but keep messages short). */
const quote = (entry: string) => JSON.stringify(entry.length > 80 ? `${entry.slice(0, 77)}...` : entry);

/** The normalized form of one entry, or why it is refused. */
export function normalizeHost(entry: string): { host: string } | { problem: string } {
  if (entry.length === 0) return { problem: 'is empty' };
  if (/\s/.test(entry)) return { problem: 'contains whitespace' };
  if (entry.includes('://')) {
    return { problem: 'has a scheme; give the bare hostname (e.g. api.example.com)' };
  }
  if (entry.includes('*')) return { problem: 'is a wildcard; list each exact hostname' };
  if (/[/?#]/.test(entry)) return { problem: 'has a path, query or fragment; give the bare hostname' };
  if (entry.includes('@')) return { problem: 'has user information; give the bare hostname' };
  if (entry.startsWith('[') || (entry.match(/:/g)?.length ?? 0) > 1) {
    return { problem: 'is an IPv6 address; only hostnames and IPv4 addresses are supported' };
  }
  if (entry.includes(':')) return { problem: 'has a port; give the hostname without it' };

  let host = entry.toLowerCase();
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host.length === 0) return { problem: 'is not a hostname' };
  if (host.length > MAX_HOSTNAME) return { problem: `is longer than ${MAX_HOSTNAME} characters` };

  const labels = host.split('.');
  // A name whose last label is numeric is read as an IPv4 address by URL parsers (WHATWG): accept
  // it only as a canonical dotted quad, so that what is stored is what egress will compare.
  if (/^[0-9]+$/.test(labels[labels.length - 1] ?? '')) {
    const ipv4 = labels.length === 4 && labels.every((l) => OCTET.test(l) && Number(l) <= 255);
    return ipv4 ? { host } : { problem: 'is not a valid IPv4 address (expected four numbers 0–255)' };
  }
  for (const label of labels) {
    if (label.length === 0) return { problem: 'has an empty label (consecutive or leading dots)' };
    if (label.length > 63) return { problem: 'has a label longer than 63 characters' };
    if (!LABEL.test(label)) {
      return {
        problem: /[^a-z0-9-]/.test(label)
          ? 'contains a character other than a-z, 0-9, - and . (internationalized names: use the xn-- form)'
          : 'has a label starting or ending with a hyphen',
      };
    }
  }
  return { host };
}

/** Normalizes a `hosts` list; a refused entry is a 400 naming it (index and value). */
export function normalizeHosts(entries: readonly string[]): string[] {
  if (entries.length === 0) throw badRequest('hosts must list at least one hostname');
  if (entries.length > MAX_HOSTS) throw badRequest(`hosts must list at most ${MAX_HOSTS} hostnames`);
  const out = new Set<string>();
  entries.forEach((entry, i) => {
    const r = normalizeHost(entry);
    if ('problem' in r) throw badRequest(`hosts[${i}] ${quote(entry)} ${r.problem}`);
    out.add(r.host);
  });
  return [...out];
}
