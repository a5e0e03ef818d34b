import { createServer, request as httpRequest } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';

export interface ProxiedRequest {
  method: string;
  /** Path and query as the client sent them. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** JSON-parsed body, or the raw text when it is not JSON (null for an upgrade). */
  body: any;
  /** A WebSocket (or other) upgrade: its bytes are relayed both ways once the target answers. */
  upgrade?: boolean;
  /** The headers of the answer relayed to the client, once they came. */
  answerHeaders?: Record<string, string | string[] | undefined>;
}

export interface RecordingProxy {
  url: string;
  requests: ProxiedRequest[];
  close(): Promise<void>;
}

/**
 * A reverse proxy that records every request and forwards it unchanged to `target` (an
 * http://host:port origin), relaying the answer as it streams. Put between a client and the
 * gateway, it shows exactly what the client sent, to compare with what reached the upstream.
 * Upgrades (a WebSocket handshake) are recorded and then relayed byte for byte.
 */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const requests: ProxiedRequest[] = [];
  const to = new URL(target);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: any = raw.toString('utf8');
      try {
        body = body ? JSON.parse(body) : null;
      } catch {}
      const record: ProxiedRequest = {
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: req.headers,
        body,
      };
      requests.push(record);
      const upstream = httpRequest(
        {
          host: to.hostname,
          port: to.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: to.host },
        },
        (answer) => {
          record.answerHeaders = answer.headers;
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', (err) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`recording proxy: ${err.message}`);
      });
      upstream.end(raw);
    });
  });
  const tunnels = new Set<Socket>();
  server.on('upgrade', (req, socket: Socket, head: Buffer) => {
    requests.push({
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      headers: req.headers,
      body: null,
      upgrade: true,
    });
    const upstream = connect(Number(to.port), to.hostname, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2)
        lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) upstream.write(head);
      upstream.pipe(socket).pipe(upstream);
    });
    for (const s of [socket, upstream]) {
      tunnels.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        tunnels.delete(s);
        socket.destroy();
        upstream.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => {
      server.closeAllConnections();
      for (const s of tunnels) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
