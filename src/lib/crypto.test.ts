import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decrypt, encrypt, maskSecret, safeEqual, sha256Hex } from './crypto.js';

describe('crypto helpers', () => {
  const key = randomBytes(32);

  it('round-trips AES-256-GCM and never leaves the plaintext in the ciphertext', () => {
    const sealed = encrypt(key, 'sk-secret-value', 'row-1');
    expect(sealed).not.toContain('sk-secret-value');
    expect(decrypt(key, sealed, 'row-1')).toBe('sk-secret-value');
    expect(encrypt(key, 'sk-secret-value', 'row-1')).not.toBe(sealed); // fresh IV each time
  });

  it('refuses a ciphertext moved to another row, a wrong key or a tampered body', () => {
    const sealed = encrypt(key, 'value', 'row-1');
    expect(() => decrypt(key, sealed, 'row-2')).toThrow();
    expect(() => decrypt(randomBytes(32), sealed, 'row-1')).toThrow();
    const parts = sealed.split('.');
    parts[3] = Buffer.from('other').toString('base64');
    expect(() => decrypt(key, parts.join('.'), 'row-1')).toThrow();
  });

  it('hashes as lowercase SHA-256 hex and masks without revealing the middle', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const secret = `sk-gh-v1-${'a1b2c3d4'.repeat(8)}`;
    const label = maskSecret(secret);
    expect(label.startsWith('sk-gh-v1-')).toBe(true);
    expect(label).toContain('...');
    expect(label.length).toBeLessThan(24);
    expect(maskSecret('short')).toBe('*****');
  });

  it('compares tokens in constant time', () => {
    expect(safeEqual('a-token', 'a-token')).toBe(true);
    expect(safeEqual('a-token', 'b-token')).toBe(false);
    expect(safeEqual('a', 'a-longer')).toBe(false);
  });
});
