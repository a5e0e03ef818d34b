/**
 * A gateway or media service whose port is taken stops with a message naming the variable that
 * sets the port, not Node's bare `listen EADDRINUSE`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { startGateway } from '../src/gateway.js';
import { loadMediaConfig } from '../src/media/config.js';
import { startMedia } from '../src/media/server.js';

describe('a port already in use', () => {
  let holder: Server;
  let port: number;
  const dirs: string[] = [];
  beforeAll(async () => {
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    port = (holder.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => holder.close(resolve));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const dataDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'gatehouse-listen-'));
    dirs.push(d);
    return d;
  };

  it('stops the gateway with an error naming PORT', async () => {
    const config = loadConfig({
      GATEHOUSE_DATA_DIR: dataDir(),
      PORT: String(port),
      HOST: '127.0.0.1',
      GATEHOUSE_METRICS_PORT: 'off',
      GATEHOUSE_WORKER: 'off',
      GATEHOUSE_MEDIA: 'off',
      LOG_LEVEL: 'silent',
    });
    await expect(startGateway(config, { log: { level: 'silent' } })).rejects.toThrow(
      new RegExp(`^PORT: port ${port} on 127\\.0\\.0\\.1 is already in use`),
    );
  });

  it('stops the media service with an error naming MEDIA_PORT', async () => {
    const config = loadMediaConfig({
      GATEHOUSE_DATA_DIR: dataDir(),
      MEDIA_PORT: String(port),
      MEDIA_HOST: '127.0.0.1',
      GATEHOUSE_MEDIA_AUTH: 'none',
    });
    await expect(startMedia(config)).rejects.toThrow(
      /^MEDIA_PORT: port \d+ on 127\.0\.0\.1 is already in use/,
    );
  });
});
