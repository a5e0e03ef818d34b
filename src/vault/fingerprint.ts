import { createHmac } from 'node:crypto';
import type { Caller } from '../accounts/caller.js';

/**
 * Secret fingerprints: HMAC-SHA-256 under the vault's own key of the value together with the
 * secret's name and who wrote it. Rewriting the same value under the same name keeps the
 * fingerprint; the same value under another name, or written by another member, fingerprints
 * otherwise. So a member who may write into a vault cannot use it as an oracle (write guesses,
 * compare their fingerprints with someone else's secret): their own writes never reproduce it.
 * A copy is keyed to its source's fingerprint, never to the copier (see `copiedFrom`).
 */

/** The writer a fingerprint is keyed to: the member behind the key, or the key acting as the organization. */
export const writerOf = (caller: Pick<Caller, 'userId' | 'keyHash'>): string =>
  caller.userId ? `user:${caller.userId}` : `key:${caller.keyHash}`;

/**
 * The writer of a copy: the source secret's fingerprint, which is keyed to whoever wrote the
 * source. A copier cannot write under this identity, so they cannot test guesses against a copy.
 */
export const copiedFrom = (sourceFingerprint: string): string => `copy-of:${sourceFingerprint}`;

/** Hex fingerprint of `value` stored as `name` by `writer`, under the vault's HMAC key. */
export function fingerprintOf(vaultKey: Buffer, name: string, writer: string, value: string): string {
  // A JSON array keeps the parts apart (no two different triples encode alike).
  return createHmac('sha256', vaultKey)
    .update(JSON.stringify([name, writer, value]), 'utf8')
    .digest('hex');
}
