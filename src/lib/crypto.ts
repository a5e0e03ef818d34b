import * as crypto from 'node:crypto';
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * SHA-256 in hex — every authenticated request hashes its bearer token. The one-shot `crypto.hash`
 * (Node 20.12+) takes ~40 % of the time of a Hash object; older Node 20 releases lack it.
 */
export const sha256Hex: (value: string) => string =
  typeof crypto.hash === 'function'
    ? (value) => crypto.hash('sha256', value, 'hex')
    : (value) => createHash('sha256').update(value).digest('hex');

/** A new secret key as shown once to the caller, e.g. `sk-gh-v1-<64 hex>`. */
export const newSecretKey = (): string => `sk-gh-v1-${randomBytes(32).toString('hex')}`;

/** A masked form that identifies a secret without revealing it: `sk-gh-v1-a1b...f9e`. */
export function maskSecret(secret: string): string {
  if (secret.length <= 8) return '*'.repeat(secret.length);
  const head = Math.min(12, Math.floor(secret.length / 4));
  return `${secret.slice(0, head)}...${secret.slice(-3)}`;
}

/** Constant-time string comparison (for the admin token). */
export function safeEqual(a: string, b: string): boolean {
  const ab = createHash('sha256').update(a).digest();
  const bb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ab, bb);
}

/**
 * AES-256-GCM under the master key. Output: `v1.<iv b64>.<tag b64>.<ciphertext b64>`.
 * `aad` binds a ciphertext to its row (e.g. the credential id) so ciphertexts cannot be swapped.
 */
export function encrypt(masterKey: Buffer, plaintext: string, aad: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv);
  cipher.setAAD(Buffer.from(aad));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(
    '.',
  );
}

export function decrypt(masterKey: Buffer, sealed: string, aad: string): string {
  const [version, iv, tag, body] = sealed.split('.');
  if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('Unknown ciphertext format');
  const decipher = createDecipheriv('aes-256-gcm', masterKey, Buffer.from(iv, 'base64'));
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
}
