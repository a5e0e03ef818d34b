/**
 * The floor: the least a Node.js gateway can do per call — a pass-through proxy on node:http and an
 * undici Pool, parsing the JSON request, rewriting the model, forwarding, and for a non-streaming
 * answer parsing and re-serialising the JSON response (streams are piped through as they come). No
 * auth, no policy, no accounting, no framework. It runs as its own process like the gateways, so
 * the difference between it and calling the mock directly is what the extra process hop costs on
 * this machine (wake-ups, loopback sockets, HTTP parsing twice); a gateway's "added latency" cannot
 * go below it.
 *
 *   node --import tsx bench/floor-proxy.ts --port 18003 --upstream http://127.0.0.1:18001
 * Prints `{"ready":true,"port":N}` once listening.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const upstream = arg('--upstream');
if (!upstream || !/^http:\/\/127\.\d+\.\d+\.\d+:\d+$/.test(upstream))
  throw new Error('--upstream http://127.x.x.x:port is required');
const pool = new Pool(upstream, { connections: 256, keepAliveTimeout: 60_000 });

const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', async () => {
    try {
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as { model?: string; stream?: boolean };
      body.model = 'fast';
      const up = await pool.request({
        path: '/v1/chat/completions',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (body.stream) {
        res.writeHead(up.statusCode, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        for await (const chunk of up.body) res.write(chunk);
        res.end();
        return;
      }
      const out = (await up.body.json()) as Record<string, unknown>;
      out.model = 'bench/fast';
      const text = JSON.stringify(out);
      res.writeHead(up.statusCode, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    } catch (err) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: (err as Error).message } }));
    }
  });
});
server.keepAliveTimeout = 120_000;
server.listen(Number(arg('--port') ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ ready: true, port: (server.address() as AddressInfo).port })}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
