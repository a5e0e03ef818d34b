/**
 * A local OTLP/HTTP trace sink for bench/tracing.ts: accepts `POST /v1/traces` (protobuf or JSON),
 * answers 200 at once and keeps only counts (`GET /stats`: export requests and bytes received).
 * It prints `{"ready":true,"port":N}` on stdout once listening.
 */
import { createServer } from 'node:http';

const portArg = process.argv.indexOf('--port');
const port = portArg >= 0 ? Number(process.argv[portArg + 1]) : 0;
const stats = { requests: 0, bytes: 0 };

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
    return;
  }
  req.on('data', (c: Buffer) => {
    stats.bytes += c.length;
  });
  req.on('end', () => {
    stats.requests++;
    const json = String(req.headers['content-type'] ?? '').startsWith('application/json');
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
    res.end(json ? '{}' : undefined);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => {
  const address = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ ready: true, port: address.port })}\n`);
});
