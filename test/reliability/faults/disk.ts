/**
 * A full disk under the media service's filesystem object store. The store's directory is a real
 * 1 MiB tmpfs (`mount -t tmpfs -o size=1m`: this suite runs as root in its container, and CI in the
 * same container), so ENOSPC comes from the kernel, a temp file half-written included. Where mount
 * is not permitted (a non-root checkout) the same scenario runs with ENOSPC injected at the fs layer
 * (node:fs/promises' writeFile writes half, then fails as the kernel would) and the figures say so.
 *
 * Asserted: a generation whose output cannot be stored answers 507 `storage_full` in the media
 * envelope `{success:false, message, error:{code}}`; no file of it stays behind (neither the temp
 * file nor the outputs of the same generation that did fit); the service keeps answering, and once
 * space is back generations are stored again.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { MediaHandle } from '../../../src/media/server.js';
import type { GeneratedOutput, MediaGenerator } from '../../../src/media/types.js';
import { figures, Tally } from './common.js';

/** Every file under `dir`, relative. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(relative(dir, join(e.parentPath, e.name)));
  }
  return out.sort();
}

/** How to make the disk full: a real tmpfs when mount is permitted, else fs-layer injection. */
function tryMountTmpfs(dir: string): boolean {
  if (process.env.FAULTS_DISK === 'inject') return false;
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Answers `plan.count` outputs of `plan.bytes` bytes each (a PNG signature, then filler). */
class SizedGenerator implements MediaGenerator {
  plan = { count: 1, bytes: 100_000 };
  async generate(): Promise<GeneratedOutput[]> {
    return Array.from({ length: this.plan.count }, (_, i) => {
      const data = Buffer.alloc(this.plan.bytes, i + 1);
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(data);
      return { data, contentType: 'image/png', extension: 'png' };
    });
  }
}

export function diskFaults(): void {
  describe('a full disk under the media object store', () => {
    const root = mkdtempSync(join(tmpdir(), 'gatehouse-disk-'));
    const store = join(root, 'objects');
    let mounted = false;
    /** Fs-layer injection only: whether writes fail as on a full disk. */
    const injected = { full: false };
    let media: MediaHandle;
    const generator = new SizedGenerator();

    beforeAll(async () => {
      mounted = tryMountTmpfs(root);
      if (!mounted) {
        // The modules below are loaded afresh with a writeFile that fails like a full disk.
        vi.resetModules();
        vi.doMock('node:fs/promises', async (importOriginal) => {
          const fs = await importOriginal<typeof import('node:fs/promises')>();
          const writeFile: typeof fs.writeFile = async (file, data, opts) => {
            if (!injected.full) return fs.writeFile(file, data, opts);
            const buf = Buffer.isBuffer(data) ? data : Buffer.from(String(data));
            await fs.writeFile(file, buf.subarray(0, buf.length >> 1), opts);
            throw Object.assign(new Error(`ENOSPC: no space left on device, write`), {
              errno: -28,
              code: 'ENOSPC',
              syscall: 'write',
            });
          };
          return { ...fs, writeFile, default: { ...fs, writeFile } };
        });
      }
      const { loadMediaConfig } = await import('../../../src/media/config.js');
      const { startMedia } = await import('../../../src/media/server.js');
      const config = loadMediaConfig({
        MEDIA_PORT: '0',
        MEDIA_HOST: '127.0.0.1',
        GATEHOUSE_MEDIA_STORE_DIR: store,
      });
      media = await startMedia(config, { log: false, generator });
    });

    afterAll(async () => {
      await media?.close();
      vi.doUnmock('node:fs/promises');
      if (mounted) execFileSync('umount', [root]);
      rmSync(root, { recursive: true, force: true });
    });

    const generate = async () => {
      const res = await fetch(`${media.url}/api/t2i/model-a`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'a lighthouse at dusk' }),
      });
      return { status: res.status, body: (await res.json()) as any };
    };

    /** Leaves about `bytes` free on the tmpfs (a filler file takes the rest). */
    const fill = (bytes: number) => {
      const s = statfsSync(root);
      const free = s.bavail * s.bsize;
      writeFileSync(join(root, 'filler'), Buffer.alloc(Math.max(0, free - bytes)));
    };

    it('answers 507 storage_full, leaves no partial file, and works again once space is back', async () => {
      const outcomes = new Tally();
      generator.plan = { count: 1, bytes: 100_000 };
      const first = await generate();
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      const before = filesUnder(store);
      expect(before).toHaveLength(1);

      // The disk fills up: one output too big for what is left, then two of which one fits.
      if (mounted) fill(150_000);
      else injected.full = true;
      const plans = [
        { count: 1, bytes: 400_000 },
        { count: 2, bytes: 100_000 },
      ];
      let underFault = 0;
      for (let round = 0; round < 5; round++) {
        for (const plan of plans) {
          generator.plan = plan;
          const r = await generate();
          underFault++;
          outcomes.add(`${r.status} ${r.body?.error?.code ?? 'ok'}`);
          expect(r.status, JSON.stringify(r.body)).toBe(507);
          expect(r.body).toMatchObject({ success: false, error: { code: 'storage_full' } });
          expect(typeof r.body.message).toBe('string');
          expect(filesUnder(store)).toEqual(before);
        }
        expect((await fetch(`${media.url}/health`)).status).toBe(200);
      }
      const status = (await (await fetch(`${media.url}/api/status`)).json()) as any;
      expect(status).toMatchObject({ status: 'online', running: 0 });

      // Space is back.
      if (mounted) rmSync(join(root, 'filler'));
      else injected.full = false;
      generator.plan = { count: 2, bytes: 300_000 };
      const after = await generate();
      expect(after.status, JSON.stringify(after.body)).toBe(200);
      const files = filesUnder(store);
      expect(files).toHaveLength(before.length + 2);
      for (const f of files) expect(statSync(join(store, f)).size).toBeGreaterThan(0);

      figures.rows.push(
        [
          'disk: how ENOSPC was produced',
          mounted
            ? 'a real 1 MiB tmpfs under the store, filled up'
            : 'injected at node:fs/promises (mount not permitted, or FAULTS_DISK=inject)',
        ],
        ['disk: generations under a full disk', underFault],
        ['disk: — answered 507 storage_full (media envelope)', outcomes.get('507 storage_full')],
        ['disk: files left behind by failed generations (temp or partial outputs)', 0],
        ['disk: generations stored once space was back', `${after.status === 200 ? 2 : 0} outputs, 200`],
      );
      figures.notes.push(
        'Disk: a full object store is 507 `storage_full` (Insufficient Storage: the request was valid and may succeed once space is freed, unlike a 5xx of the service itself); the generation is not billed, and of a multi-output generation none is kept.',
      );
    });
  });
}
