import type { Socket } from 'node:net';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { sendSse } from './stream.js';

/**
 * How a stream's frames reach the socket: the frames of one turn in one write, and — once the
 * upstream stream is over and only its recording is left — the last frames and the end together.
 */
describe('sendSse', () => {
  const apps: ReturnType<typeof Fastify>[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  /** Serves two frames produced in one turn, then the end a loop turn later (as after the journal). */
  async function serve(settledAfterFrames: boolean) {
    const app = Fastify();
    apps.push(app);
    const writes: number[] = [];
    app.get('/s', (req, reply) => {
      const socket = reply.raw.socket as Socket & {
        _writev: (...a: unknown[]) => void;
        _write: (...a: unknown[]) => void;
      };
      for (const name of ['_writev', '_write'] as const) {
        const original = socket[name].bind(socket);
        socket[name] = (...a: unknown[]) => {
          writes.push(Date.now());
          original(...a);
        };
      }
      let over = false;
      async function* frames() {
        yield 'data: one\n\n';
        yield 'data: two\n\n';
        over = true;
        await new Promise((r) => setImmediate(r));
      }
      return sendSse(req, reply, frames(), { settled: () => settledAfterFrames && over });
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const res = await fetch(`http://127.0.0.1:${port}/s`);
    const text = await res.text();
    return { text, writes: writes.length };
  }

  it('sends the last frames and the end in one write once the stream is settled', async () => {
    const { text, writes } = await serve(true);
    expect(text).toBe('data: one\n\ndata: two\n\n');
    expect(writes).toBe(1);
  });

  it('sends frames as soon as the turn ends while the stream goes on', async () => {
    const { text, writes } = await serve(false);
    expect(text).toBe('data: one\n\ndata: two\n\n');
    // The frames (with the headers) in one write, the end in another.
    expect(writes).toBe(2);
  });

  it('encodes each frame, and ends a stream that fails after it started with the failure frames', async () => {
    const app = Fastify();
    apps.push(app);
    app.get('/f', (req, reply) => {
      async function* frames() {
        yield { n: 1 };
        throw new Error('upstream went away');
      }
      return sendSse(req, reply, frames(), {
        encode: (f) => `data: ${JSON.stringify(f)}\n\n`,
        failed: (err) => [`event: error\ndata: ${(err as Error).message}\n\n`],
      });
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const res = await fetch(`http://127.0.0.1:${port}/f`);
    expect(res.status).toBe(200);
    // A clean end (a cut connection would reject here), the error in the caller's format last.
    expect(await res.text()).toBe('data: {"n":1}\n\nevent: error\ndata: upstream went away\n\n');
  });
});
