/**
 * The SSRF guard of every request Gatehouse makes for a caller (interns' HTTP tool, the media
 * service's image URLs and provider output URLs): the host is resolved once, every address it
 * resolves to is judged (loopback, private, link-local and other internal ranges refused unless the
 * operator allows them), and the connection is pinned to exactly the address judged, so a second
 * DNS answer cannot swap it.
 */

import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { Agent } from 'undici';
import { isPrivateAddress } from './addresses.js';

export type Resolved = { address: string; family: number };

/** Why a host may not be fetched: it did not resolve, or it resolves to an internal address. */
export class AddressRefused extends Error {
  constructor(
    readonly reason: 'unresolved' | 'private',
    message: string,
  ) {
    super(message);
  }
}

/** The host part of a URL, without IPv6 brackets or a trailing dot. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');

/** Resolves `host` and judges every address; the first one is the one to connect to. */
export async function resolveAllowed(host: string, allowPrivate: boolean): Promise<Resolved> {
  let addresses: Resolved[];
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await lookup(host, { all: true, verbatim: true });
    } catch (err) {
      throw new AddressRefused(
        'unresolved',
        `Could not resolve ${host}: ${(err as NodeJS.ErrnoException).code ?? 'lookup failed'}`,
      );
    }
  }
  const pinned = addresses[0];
  if (!pinned) throw new AddressRefused('unresolved', `Could not resolve ${host}`);
  const bad = allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address));
  if (bad)
    throw new AddressRefused(
      'private',
      `${host} resolves to ${bad.address}, a loopback, private or link-local address`,
    );
  return pinned;
}

/** An undici dispatcher whose every connection goes to `pinned` (close it after use). */
export function pinnedAgent(pinned: Resolved, timeouts: { headersTimeout: number; bodyTimeout: number }) {
  const pin: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all) callback(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
  return new Agent({ connect: { lookup: pin }, ...timeouts });
}
