import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ROUTES, loadMediaConfig, parseRoutes } from './config.js';

describe('loadMediaConfig', () => {
  it('has the documented defaults', () => {
    const c = loadMediaConfig({ GATEHOUSE_DATA_DIR: '/srv/gh' });
    expect(c).toMatchObject({
      port: 8081,
      host: '0.0.0.0',
      maxUploadBytes: 20 * 1024 * 1024,
      publicUrl: null,
      storeDir: '/srv/gh/objects',
      timeoutMs: 120_000,
      fetchPrivate: false,
    });
    expect(c.routes).toBe(DEFAULT_ROUTES);
    expect(loadMediaConfig({}).storeDir).toBe(resolve('./data/objects'));
  });

  it("reads the gateway's master key in keys mode, and never makes one", () => {
    const data = mkdtempSync(join(tmpdir(), 'media-master-'));
    const hex = 'ab'.repeat(32);
    const keys = { GATEHOUSE_DATA_DIR: data, GATEHOUSE_MEDIA_AUTH: 'keys' };
    expect(loadMediaConfig(keys).masterKey).toBeNull();
    expect(existsSync(join(data, 'master.key'))).toBe(false);
    writeFileSync(join(data, 'master.key'), `${hex}\n`);
    expect(loadMediaConfig(keys).masterKey?.toString('hex')).toBe(hex);
    expect(
      loadMediaConfig({ ...keys, GATEHOUSE_MASTER_KEY: 'cd'.repeat(32) }).masterKey?.toString('hex'),
    ).toBe('cd'.repeat(32));
    // Other modes read no database and no secret.
    expect(loadMediaConfig({ GATEHOUSE_DATA_DIR: data }).masterKey).toBeNull();
  });

  it("refuses a filesystem store that is, contains or overlaps the gateway's files", async () => {
    const { mkdtempSync, mkdirSync, rmSync, symlinkSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const root = mkdtempSync(join(tmpdir(), 'store-dir-'));
    try {
      const data = join(root, 'data');
      mkdirSync(data);
      symlinkSync(data, join(root, 'data-link'));
      const load =
        (store: string, extra: Record<string, string> = {}) =>
        () =>
          loadMediaConfig({ GATEHOUSE_DATA_DIR: data, GATEHOUSE_MEDIA_STORE_DIR: store, ...extra });
      for (const store of [data, root, join(root, 'data-link'), `${data}/./`])
        expect(load(store), store).toThrow(
          /GATEHOUSE_MEDIA_STORE_DIR .* is the data directory or contains it/,
        );
      expect(load(join(data, 'interns'))).toThrow(/overlaps the interns' directories/);
      expect(load(join(data, 'journal', 'x'))).toThrow(/overlaps the usage journal/);
      const db = join(root, 'elsewhere', 'gh.db');
      expect(load(join(root, 'elsewhere'), { DATABASE_URL: `sqlite:${db}` })).toThrow(
        /overlaps the SQLite database/,
      );
      // A directory of its own is fine, inside the data directory (the default) or anywhere else.
      expect(load(join(data, 'objects'))().storeDir).toBe(join(data, 'objects'));
      expect(loadMediaConfig({ GATEHOUSE_DATA_DIR: data }).storeDir).toBe(join(data, 'objects'));
      expect(load(join(root, 'media'))().storeDir).toBe(join(root, 'media'));
      // The S3 store keeps nothing on disk.
      expect(() =>
        loadMediaConfig({
          GATEHOUSE_DATA_DIR: data,
          GATEHOUSE_MEDIA_STORE_DIR: data,
          GATEHOUSE_MEDIA_STORE: 's3',
          GATEHOUSE_MEDIA_S3_BUCKET: 'b',
          GATEHOUSE_MEDIA_S3_REGION: 'us-east-1',
        }),
      ).not.toThrow(/STORE_DIR/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('reads overrides', () => {
    const c = loadMediaConfig({
      MEDIA_PORT: '9000',
      MEDIA_HOST: '127.0.0.1',
      GATEHOUSE_MEDIA_PUBLIC_URL: 'https://media.example.com/',
      GATEHOUSE_MEDIA_STORE_DIR: '/var/objects',
      GATEHOUSE_MEDIA_MAX_UPLOAD_BYTES: '1000',
      GATEHOUSE_MEDIA_TIMEOUT_MS: '5000',
      GATEHOUSE_MEDIA_FETCH_PRIVATE: 'on',
    });
    expect(c).toMatchObject({
      port: 9000,
      host: '127.0.0.1',
      publicUrl: 'https://media.example.com',
      storeDir: '/var/objects',
      maxUploadBytes: 1000,
      timeoutMs: 5000,
      fetchPrivate: true,
    });
    expect(() => loadMediaConfig({ MEDIA_PORT: 'x' })).toThrow(/MEDIA_PORT/);
    expect(() => loadMediaConfig({ GATEHOUSE_MEDIA_PUBLIC_URL: 'ftp://x' })).toThrow(/PUBLIC_URL/);
  });

  it('replaces the routes from a YAML file with snake_case keys', () => {
    const dir = mkdtempSync(join(tmpdir(), 'media-config-'));
    const file = join(dir, 'media.yaml');
    writeFileSync(
      file,
      [
        'routes:',
        '  - kind: i2i',
        '    name: edit-1',
        '    provider: local',
        '    provider_model: edit-v1',
        '    requires_image: true',
        '    params:',
        '      image_input: { type: image_urls, min_items: 1, max_items: 2 }',
        '      quality: { type: string, enum: [low, high], default: low }',
      ].join('\n'),
    );
    const c = loadMediaConfig({ GATEHOUSE_MEDIA_CONFIG: file });
    expect(c.routes).toEqual([
      {
        kind: 'i2i',
        name: 'edit-1',
        provider: 'local',
        providerModel: 'edit-v1',
        requiresImage: true,
        params: {
          image_input: { type: 'image_urls', minItems: 1, maxItems: 2 },
          quality: { type: 'string', enum: ['low', 'high'], default: 'low' },
        },
      },
    ]);
  });

  it('refuses malformed routes with a message naming the place', () => {
    expect(() => parseRoutes([{ kind: 'audio', name: 'x' }])).toThrow(/routes\[0\]\.kind/);
    expect(() => parseRoutes([{ kind: 't2i', name: 'a/b' }])).toThrow(/routes\[0\]\.name/);
    expect(() => parseRoutes([{ kind: 't2i', name: 'a', params: { q: { type: 'float' } } }])).toThrow(
      /params\.q\.type/,
    );
    expect(() =>
      parseRoutes([{ kind: 't2i', name: 'a', params: { q: { type: 'string', enum: ['a'], default: 'b' } } }]),
    ).toThrow(/default/);
    expect(() => parseRoutes([{ kind: 't2i', name: 'a', params: { prompt: { type: 'string' } } }])).toThrow(
      /prompt/,
    );
    expect(() =>
      parseRoutes([
        { kind: 't2i', name: 'a' },
        { kind: 't2i', name: 'a' },
      ]),
    ).toThrow(/twice/);
    expect(() => parseRoutes([{ kind: 'i2i', name: 'a', requires_image: true }])).toThrow(/requires_image/);
    expect(parseRoutes([{ kind: 't2i', name: 'a' }])).toEqual([
      { kind: 't2i', name: 'a', provider: 'local', providerModel: 'a', params: {} },
    ]);
  });
});
