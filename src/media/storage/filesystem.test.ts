import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { contentTypeFor, FilesystemStore, isValidKey } from './filesystem.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('FilesystemStore', () => {
  it('validates keys', () => {
    for (const k of ['t2i/2025/01/02/abc.png', 'a', 'a_b-c.d/e']) expect(isValidKey(k), k).toBe(true);
    for (const k of ['', '/abs', '../x', 'a/../b', 'a//b', 'a/', './a', 'a b', 'a\\b', 'a%2f', 'é'])
      expect(isValidKey(k), k).toBe(false);
  });

  it('writes under its directory, returns the public URL, reads back; refuses bad keys', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fs-store-'));
    dirs.push(dir);
    const store = new FilesystemStore(dir, 'http://localhost:1');
    store.setPublicUrl('https://cdn.example.com/');
    const key = 't2i/2025/01/02/0f8c2a6e-3b1d-4c7e-9a5f-2d4b6c8e0a1f.webp'; // as the service names outputs
    const r = await store.put(key, Buffer.from('RIFF'), 'image/webp');
    expect(r).toEqual({ url: `https://cdn.example.com/files/${key}`, key });
    expect(await readFile(join(dir, key), 'utf8')).toBe('RIFF');
    const f = await store.open(key);
    expect(f).toMatchObject({ size: 4, contentType: 'image/webp' });
    f?.stream.destroy();
    expect(await store.open('t2i/2025/01/02/0f8c2a6e-3b1d-4c7e-9a5f-2d4b6c8e0a10.webp')).toBeNull();
    // Written, but not named as an output: not served.
    await store.put('t2i/2025/01/02/x.webp', Buffer.from('RIFF'), 'image/webp');
    expect(await store.open('t2i/2025/01/02/x.webp')).toBeNull();
    expect(await store.open('../etc/passwd')).toBeNull();
    expect(await store.open('t2i')).toBeNull(); // a directory
    await expect(store.put('../escape.png', Buffer.from('x'), 'image/png')).rejects.toThrow(
      /Invalid object key/,
    );
  });

  it('maps extensions to content types', () => {
    expect(contentTypeFor('a/b.jpg')).toBe('image/jpeg');
    expect(contentTypeFor('a/b.mp4')).toBe('video/mp4');
    expect(contentTypeFor('a/b.bin')).toBe('application/octet-stream');
  });
});
