/**
 * Who may generate (GATEHOUSE_MEDIA_AUTH), checked on `POST /api/*` before the body is read:
 *
 * - `keys`: `Authorization: Bearer <Gatehouse API key>`, looked up in the gateway's database
 *   (KeysService.authenticate: unknown, disabled and expired keys are refused; so are management
 *   keys, which manage and never generate).
 * - `token`: one static bearer token (GATEHOUSE_MEDIA_TOKEN), compared in constant time.
 * - `none`: open; for a trusted network only.
 *
 * Unset: `keys` when the service is handed the gateway's keys (inside `gatehouse serve`, which
 * shares its database), `none` otherwise (`gatehouse media` alone, tests) — with a warning logged.
 * /health, /api/status, /files/*, /openapi.json, /docs and `/` are always public.
 */

import type { Caller } from '../accounts/caller.js';
import { credentialTooLong } from '../lib/credentials.js';
import { safeEqual } from '../lib/crypto.js';
import type { MediaAuthMode, MediaConfig } from './config.js';
import { MediaError } from './types.js';

/** What `keys` mode needs of the gateway: KeysService satisfies it. */
export interface KeyAuthenticator {
  authenticate(token: string): Promise<Caller | null>;
}

/** The outcome of a check: the key's caller in `keys` mode, null otherwise. */
export type MediaCaller = Caller | null;

export class MediaAuthError extends MediaError {
  constructor(message: string, status = 401, code = 'unauthorized') {
    super(status, code, message);
    this.name = 'MediaAuthError';
  }
}

export function resolveAuthMode(
  config: Pick<MediaConfig, 'auth'>,
  keys: KeyAuthenticator | null,
): MediaAuthMode {
  return config.auth ?? (keys ? 'keys' : 'none');
}

/** The bearer token of an Authorization header, or null. */
export function bearer(header: string | undefined): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m ? (m[1] as string) : null;
}

export class MediaAuth {
  constructor(
    readonly mode: MediaAuthMode,
    private readonly opts: { token?: string | null; keys?: KeyAuthenticator | null } = {},
  ) {
    if (mode === 'token' && !opts.token)
      throw new Error('GATEHOUSE_MEDIA_AUTH=token needs GATEHOUSE_MEDIA_TOKEN');
    if (mode === 'keys' && !opts.keys)
      throw new Error("GATEHOUSE_MEDIA_AUTH=keys needs the gateway's database");
  }

  /** Checks a request's Authorization header; throws MediaAuthError (401) when refused. */
  async check(authorization: string | undefined): Promise<MediaCaller> {
    if (this.mode === 'none') return null;
    // Refused before it is hashed, compared or looked up (and so never cached).
    if (credentialTooLong(authorization))
      throw new MediaAuthError('Invalid credentials: the Authorization header is too long');
    const token = bearer(authorization);
    if (!token) throw new MediaAuthError('Send Authorization: Bearer <key>');
    if (this.mode === 'token') {
      if (!safeEqual(token, this.opts.token as string)) throw new MediaAuthError('Invalid token');
      return null;
    }
    const caller = await (this.opts.keys as KeyAuthenticator).authenticate(token);
    if (!caller) throw new MediaAuthError('Invalid, disabled or expired API key');
    if (caller.isManagement)
      throw new MediaAuthError('Management keys cannot generate media; use an API key', 403, 'forbidden');
    return caller;
  }
}
