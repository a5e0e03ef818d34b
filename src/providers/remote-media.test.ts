import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../formats/chat.js';
import { CallAbort } from '../lib/call-abort.js';
import { createRemoteMedia, inlineRemoteMedia } from './remote-media.js';

/** Image and document URLs fetched for the wires that take data inline only, from a local server. */

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
let server: Server;
let base: string;
const hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    if (req.url === '/a.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
    if (req.url === '/doc.pdf')
      return res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.4');
    if (req.url === '/page')
      return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<p>');
    if (req.url?.startsWith('/big'))
      return res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(4096));
    if (req.url === '/moved') return res.writeHead(302, { location: '/a.png' }).end();
    if (req.url === '/slow') return; // never answers
    res.writeHead(404).end();
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const signal = () => new CallAbort();

describe('createRemoteMedia', () => {
  it('public (the default): a loopback or private address is refused, nothing is fetched', async () => {
    const media = createRemoteMedia({ mode: 'public' });
    const before = hits.length;
    await expect(media.fetch(`${base}/a.png`, signal())).rejects.toThrow(/loopback, private or link-local/);
    await expect(media.fetch(`http://localhost:${new URL(base).port}/a.png`, signal())).rejects.toThrow(
      /localhost resolves to/,
    );
    expect(hits.length).toBe(before);
  });

  it('any: fetches the body with its media type', async () => {
    const media = createRemoteMedia({ mode: 'any' });
    expect(await media.fetch(`${base}/a.png`, signal())).toEqual({
      mediaType: 'image/png',
      data: PNG.toString('base64'),
    });
  });

  it('refuses what it cannot use: an error status, a redirect (never followed), too large, too slow, off', async () => {
    const media = createRemoteMedia({ mode: 'any', maxBytes: 1024, timeoutMs: 300 });
    await expect(media.fetch(`${base}/missing`, signal())).rejects.toThrow(/answered 404/);
    await expect(media.fetch(`${base}/moved`, signal())).rejects.toThrow(/answered 302/);
    await expect(media.fetch(`${base}/big`, signal())).rejects.toThrow(/larger than 1024 bytes/);
    await expect(media.fetch(`${base}/slow`, signal())).rejects.toThrow(/no answer within 300 ms/);
    await expect(media.fetch('ftp://example.com/a.png', signal())).rejects.toThrow(/only http\(s\)/);
    // A presigned URL's signature and a URL's user info are not repeated in the error.
    const err = await media
      .fetch(`http://user:pw@127.0.0.1:${new URL(base).port}/missing?X-Amz-Signature=abc&v=1`, signal())
      .catch((e: Error) => e);
    expect((err as Error).message).toContain(
      `could not fetch http://127.0.0.1:${new URL(base).port}/missing?X-Amz-Signature=[REDACTED]&v=1`,
    );
    expect((err as Error).message).not.toMatch(/abc|pw@/);
    await expect(createRemoteMedia({ mode: 'off' }).fetch(`${base}/a.png`, signal())).rejects.toThrow(
      /GATEHOUSE_REMOTE_MEDIA=off/,
    );
  });
});

describe('inlineRemoteMedia', () => {
  const req = (urls: { image?: string[]; file?: string[] }): ChatRequest => ({
    model: 'm',
    messages: [
      {
        role: 'user',
        content: [
          ...(urls.image ?? []).map((url) => ({
            type: 'image_url' as const,
            image_url: { url, detail: 'low' as const },
          })),
          ...(urls.file ?? []).map((file_data) => ({
            type: 'file' as const,
            file: { filename: 'd.pdf', file_data },
          })),
          { type: 'text' as const, text: 'hi' },
        ],
      },
    ],
  });

  it('replaces image and document URLs with their data, each URL fetched once; data: URLs untouched', async () => {
    const media = createRemoteMedia({ mode: 'any' });
    const before = hits.length;
    const out = await inlineRemoteMedia(
      req({
        image: [`${base}/a.png`, `${base}/a.png`, 'data:image/gif;base64,R0lG'],
        file: [`${base}/doc.pdf`],
      }),
      media,
      signal(),
    );
    expect(hits.length - before).toBe(2);
    expect(out.messages[0]?.content).toEqual([
      {
        type: 'image_url',
        image_url: { url: `data:image/png;base64,${PNG.toString('base64')}`, detail: 'low' },
      },
      {
        type: 'image_url',
        image_url: { url: `data:image/png;base64,${PNG.toString('base64')}`, detail: 'low' },
      },
      { type: 'image_url', image_url: { url: 'data:image/gif;base64,R0lG', detail: 'low' } },
      {
        type: 'file',
        file: {
          filename: 'd.pdf',
          file_data: `data:application/pdf;base64,${Buffer.from('%PDF-1.4').toString('base64')}`,
        },
      },
      { type: 'text', text: 'hi' },
    ]);
  });

  it('a call fetches at most 16 URLs, and at most maxBytes in all', async () => {
    const before = hits.length;
    const many = Array.from({ length: 17 }, (_, i) => `${base}/a.png?${i}`);
    await expect(
      inlineRemoteMedia(req({ image: many }), createRemoteMedia({ mode: 'any' }), signal()),
    ).rejects.toThrow(/at most 16 image and document URLs/);
    expect(hits.length).toBe(before);
    const small = createRemoteMedia({ mode: 'any', maxBytes: 6000 });
    await expect(
      inlineRemoteMedia(req({ image: [`${base}/big?1`, `${base}/big?2`] }), small, signal()),
    ).rejects.toThrow(/add up to more than 6000 bytes|larger than/);
    expect(
      (await inlineRemoteMedia(req({ image: [`${base}/big?3`] }), small, signal())).messages[0]?.content,
    ).toHaveLength(2);
  });

  it('a request without URLs is returned as it is; an image URL that is not an image is refused', async () => {
    const plain = req({ image: ['data:image/gif;base64,R0lG'] });
    expect(await inlineRemoteMedia(plain, undefined, signal())).toBe(plain);
    await expect(
      inlineRemoteMedia(req({ image: [`${base}/page`] }), createRemoteMedia({ mode: 'any' }), signal()),
    ).rejects.toThrow(/sent text\/html, not an image/);
    await expect(inlineRemoteMedia(req({ image: [`${base}/a.png`] }), undefined, signal())).rejects.toThrow(
      /inline only/,
    );
  });
});
