/**
 * The floor: the least a Node.js gateway can do per call — a pass-through proxy on node:http and an
 * undici Pool, parsing the JSON request, rewriting the model, forwarding, and for a non-streaming
 * answer parsing and re-serialising the JSON response (streams are piped through as they come). No
 * auth, no policy, no accounting, no framework. It runs as its own process like the gateways, so
 * the difference between it and calling the mock directly is what the extra process hop costs on
 * this machine (wake-ups, loopback sockets, HTTP parsing twice); a gateway's "added latency" cannot
 * go below it.
 *
 * It serves `POST /v1/chat/completions` and `POST /v1/messages` (Anthropic), forwarded to the same
 * path upstream; the model `bench/<name>` is sent as `<name>` and the answer's model set back.
 *
 * With `--fastify` the same proxy runs as one Fastify route (logger at warn, no hooks, no schema):
 * the `floor-fastify` row, so that the table shows what the HTTP framework alone costs per call,
 * apart from Gatehouse's own work.
 *
 *   node --import tsx bench/floor-proxy.ts --port 18003 --upstream http://127.0.0.1:18001 [--fastify]
 * Prints `{"ready":true,"port":N}` once listening.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { Pool } from 'undici';

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const upstream = arg('--upstream');
if (!upstream || !/^http:\/\/127\.\d+\.\d+\.\d+:\d+$/.test(upstream))
  throw new Error('--upstream http://127.x.x.x:port is required');
const pool = new Pool(upstream, { connections: 256, keepAliveTimeout: 60_000 });

/** The paths forwarded (to the same path upstream); anything else is a 404. */
const PATHS = new Set(['/v1/chat/completions', '/v1/messages']);

/** Forwards a parsed body; the upstream's status, content type and body (a stream, or JSON re-serialised). */
async function forward(path: string, body: { model?: string; stream?: boolean }) {
  const model = body.model ?? 'bench/fast';
  body.model = model.startsWith('bench/') ? model.slice(6) : model;
  const up = await pool.request({
    path,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (body.stream) return { status: up.statusCode, stream: up.body, text: null };
  const out = (await up.body.json()) as Record<string, unknown>;
  out.model = model;
  return { status: up.statusCode, stream: null, text: JSON.stringify(out) };
}
const failure = (err: unknown) => JSON.stringify({ error: { message: (err as Error).message } });

const ready = (port: number) => process.stdout.write(`${JSON.stringify({ ready: true, port })}\n`);
const port = Number(arg('--port') ?? 0);

if (process.argv.includes('--fastify')) {
  const app = Fastify({ logger: { level: 'warn' } });
  for (const path of PATHS)
    app.post(path, async (req, reply) => {
      try {
        const r = await forward(path, req.body as { model?: string; stream?: boolean });
        reply.code(r.status);
        if (r.stream)
          return reply.type('text/event-stream').header('cache-control', 'no-cache').send(r.stream);
        return reply.type('application/json').send(r.text);
      } catch (err) {
        return reply.code(502).type('application/json').send(failure(err));
      }
    });
  await app.listen({ port, host: '127.0.0.1' });
  ready((app.server.address() as AddressInfo).port);
  const stop = () => app.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} else {
  const server = createServer((req, res) => {
    const path = req.url ?? '';
    if (req.method !== 'POST' || !PATHS.has(path)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(failure(new Error('not found')));
      return;
    }
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', async () => {
      try {
        const r = await forward(path, JSON.parse(Buffer.concat(parts).toString('utf8')));
        if (r.stream) {
          res.writeHead(r.status, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
          for await (const chunk of r.stream) res.write(chunk);
          res.end();
          return;
        }
        const text = r.text as string;
        res.writeHead(r.status, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
        });
        res.end(text);
      } catch (err) {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(failure(err));
      }
    });
  });
  server.keepAliveTimeout = 120_000;
  server.listen(port, '127.0.0.1', () => ready((server.address() as AddressInfo).port));
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
