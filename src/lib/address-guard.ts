/**
 * The SSRF guard of every request Gatehouse makes for a caller (interns' HTTP tool, the media
 * service's image URLs and provider output URLs): the host is resolved once, every address it
 * resolves to is judged (loopback, private, link-local and other internal ranges refused unless the
 * operator allows them), and the connection is pinned to exactly the address judged, so a second
 * DNS answer cannot swap it.
 */

import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, type Dispatcher, request } from 'undici';
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

/**
 * An undici dispatcher whose every connection goes to `pinned` (close it after use); `tls`: more
 * connection options (a CA to trust).
 */
export function pinnedAgent(
  pinned: Resolved,
  timeouts: { headersTimeout: number; bodyTimeout: number },
  tls: { ca?: string } = {},
) {
  const pin: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all) callback(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
  return new Agent({ connect: { lookup: pin, ...tls }, ...timeouts });
}

/** Why a guarded GET brought no body to read; each caller words it for its own callers. */
export class GuardedGetFailed extends Error {
  constructor(
    readonly reason: 'request' | 'status' | 'too_large',
    message: string,
    readonly status?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A guarded GET's answer: a 200 whose declared length is within the limit, its body still to read. */
export interface GuardedAnswer {
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
  /** Closes the pinned connection (once the body was read or given up). */
  close(): void;
}

/**
 * A GET of a caller's URL from inside the network: its host judged (AddressRefused), the connection
 * pinned to the address judged, no redirects (undici's `request` follows none), headers and body
 * each within `timeoutMs`. An answer other than 200, or one declaring more than `maxBytes`, is
 * refused (GuardedGetFailed) with its body discarded; the body's real size is its reader's to cap.
 */
export async function guardedGet(
  target: URL,
  opts: { allowPrivate: boolean; timeoutMs: number; maxBytes: number; accept: string; signal: AbortSignal },
): Promise<GuardedAnswer> {
  const pinned = await resolveAllowed(hostOf(target), opts.allowPrivate);
  const dispatcher = pinnedAgent(pinned, { headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs });
  const close = () => void dispatcher.close().catch(() => {});
  let res: Dispatcher.ResponseData;
  try {
    res = await request(target, {
      method: 'GET',
      headers: { accept: opts.accept },
      dispatcher,
      signal: opts.signal,
    });
  } catch (err) {
    close();
    const code = (err as NodeJS.ErrnoException).code ?? 'the request failed';
    throw new GuardedGetFailed('request', code, undefined, { cause: err });
  }
  // A body destroyed on refusal below has nobody else to give its abort error to.
  res.body.on('error', () => {});
  const refused = (reason: 'status' | 'too_large', message: string) => {
    res.body.destroy();
    close();
    return new GuardedGetFailed(reason, message, res.statusCode);
  };
  if (res.statusCode !== 200) throw refused('status', `answered ${res.statusCode}`);
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > opts.maxBytes)
    throw refused('too_large', `larger than ${opts.maxBytes} bytes`);
  return { headers: res.headers, body: res.body, close };
}
