/**
 * What a console sign-in leaves behind: its management key and, when the provider gave one, its ID
 * token (sealed, on the server: sign-out sends it to the provider as `id_token_hint`, and the
 * browser never keeps it). Sign-out deletes both; the sweeper deletes expired ones.
 */
import type { Db } from '../db/connection.js';
import { decrypt, encrypt } from '../lib/crypto.js';
import type { Log } from '../lib/log.js';
import { nowIso } from '../lib/time.js';
import type { Caller } from './caller.js';
import type { KeysService } from './keys.service.js';
import * as keyStore from './keys.store.js';

/** Names of the management keys console sign-ins create (sign-out deletes only those). */
export const SIGN_IN_KEY_PREFIX = 'console sign-in: ';
/** How often expired sign-in keys are deleted, ms. */
export const SWEEP_EVERY_MS = 10 * 60_000;

/** The sealed token is bound to its key: a row copied onto another key does not open. */
const idTokenAad = (keyHash: string) => `oidc-id-token:${keyHash}`;

export async function rememberIdToken(
  db: Db,
  masterKey: Buffer,
  keyHash: string,
  idToken: string,
  expiresAt: string,
): Promise<void> {
  await db
    .insertInto('console_sign_ins')
    .values({
      key_hash: keyHash,
      id_token_ciphertext: encrypt(masterKey, idToken, idTokenAad(keyHash)),
      expires_at: expiresAt,
      created_at: nowIso(),
    })
    .execute();
}

/** The ID token of this sign-in, deleted as it is read (null when none, or it no longer opens). */
async function takeIdToken(db: Db, masterKey: Buffer, keyHash: string): Promise<string | null> {
  const row = await db
    .selectFrom('console_sign_ins')
    .select('id_token_ciphertext')
    .where('key_hash', '=', keyHash)
    .executeTakeFirst();
  if (!row) return null;
  await db.deleteFrom('console_sign_ins').where('key_hash', '=', keyHash).execute();
  try {
    return decrypt(masterKey, row.id_token_ciphertext, idTokenAad(keyHash));
  } catch {
    return null; // sealed under a master key since rotated: sign-out goes on without the hint
  }
}

/**
 * Sign-out: deletes the calling key when a console sign-in created it, and hands back the sign-in's
 * ID token if one was kept. null for any other key, which stays. Works with the provider's settings
 * gone too: the keys outlive a configuration change.
 */
export async function signOutKey(
  db: Db,
  keys: KeysService,
  masterKey: Buffer,
  caller: Caller,
): Promise<{ idToken: string | null } | null> {
  const row = await keyStore.findKey(db, caller.keyHash);
  if (row?.is_management !== 1 || !row.name.startsWith(SIGN_IN_KEY_PREFIX)) return null;
  await keyStore.deleteKey(db, row.hash);
  keys.invalidate(row.hash);
  return { idToken: await takeIdToken(db, masterKey, row.hash) };
}

/**
 * Deletes the sign-in keys (all users, or one user's in one organization) and the kept ID tokens
 * that expired by `now`; returns how many keys went.
 */
export async function dropExpiredSignIns(
  db: Db,
  keys: KeysService,
  now = nowIso(),
  only?: { organizationId: string; userId: string },
): Promise<number> {
  let q = db
    .selectFrom('api_keys')
    .select('hash')
    .where('is_management', '=', 1)
    .where('name', 'like', `${SIGN_IN_KEY_PREFIX}%`)
    .where('expires_at', '<=', now);
  if (only)
    q = q.where('organization_id', '=', only.organizationId).where('creator_user_id', '=', only.userId);
  const stale = await q.execute();
  for (const { hash } of stale) {
    await keyStore.deleteKey(db, hash);
    keys.invalidate(hash);
    if (only) await db.deleteFrom('console_sign_ins').where('key_hash', '=', hash).execute();
  }
  // Also the tokens of sign-in keys deleted another way (DELETE /keys, an organization deleted).
  if (!only) await db.deleteFrom('console_sign_ins').where('expires_at', '<=', now).execute();
  return stale.length;
}

/**
 * Deletes expired sign-in keys every `everyMs` (else they stay until the same person signs in
 * again). Every process may run one: the deletes are idempotent.
 */
export class SignInSweeper {
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly deps: { db: Db; keys: KeysService; log: Log }) {}

  start(everyMs = SWEEP_EVERY_MS): void {
    this.timer = setInterval(() => void this.sweep(), everyMs);
    this.timer.unref(); // never what keeps the process alive
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async sweep(): Promise<number> {
    try {
      const n = await dropExpiredSignIns(this.deps.db, this.deps.keys);
      if (n > 0) this.deps.log.info({ keys: n }, 'oidc: expired console sign-in keys deleted');
      return n;
    } catch (err) {
      this.deps.log.warn({ err }, 'oidc: deleting expired console sign-in keys failed');
      return 0;
    }
  }
}
