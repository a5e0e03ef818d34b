import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  RUNTIME_PATHS,
  RUNTIME_TOKEN_HEADER,
  type RuntimeEvent,
  type TurnRefusal,
  type TurnRequest,
} from '../runtime-protocol.js';
import type { Agent } from './agent.js';
import type { RuntimeConfig } from './config.js';

const MAX_TURN_BYTES = 4 * 1024 * 1024;

const digest = (s: string) => createHash('sha256').update(s).digest();

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

const refusal = (res: ServerResponse, status: number, reason: TurnRefusal['reason'], message: string) =>
  json(res, status, { reason, message } satisfies TurnRefusal);

const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

function readBody(req: IncomingMessage, limit: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) over = true;
      else chunks.push(c);
    });
    req.on('end', () => resolve(over ? null : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** A TurnRequest from a body, or a message naming what is wrong. */
export function parseTurn(body: unknown): TurnRequest | string {
  if (!body || typeof body !== 'object') return 'The body must be a JSON object';
  const b = body as Record<string, unknown>;
  if (typeof b.session_id !== 'string' || !b.session_id) return 'session_id must be a non-empty string';
  const m = b.message as Record<string, unknown> | undefined;
  if (!m || typeof m !== 'object') return 'message must be an object';
  if (typeof m.content !== 'string') return 'message.content must be a string';
  if (typeof b.owner !== 'string' || !b.owner) return 'owner must be a non-empty string';
  if (typeof b.grant !== 'string' || !b.grant) return 'grant must be a non-empty string';
  const approval_mode = b.approval_mode === 'manual' ? 'manual' : 'self-drive';
  const who = { owner: b.owner, grant: b.grant };
  if (m.role === 'user')
    return { session_id: b.session_id, approval_mode, ...who, message: { role: 'user', content: m.content } };
  if (m.role === 'tool') {
    if (typeof m.tool_call_id !== 'string' || !m.tool_call_id) return 'message.tool_call_id must be a string';
    return {
      session_id: b.session_id,
      approval_mode,
      ...who,
      message: { role: 'tool', tool_call_id: m.tool_call_id, content: m.content },
    };
  }
  return "message.role must be 'user' or 'tool'";
}

/**
 * The runtime's HTTP server (runtime-protocol.ts): the token-guarded `/_runtime/*` side the gateway
 * drives, and a small public side (`/`, `/status`) the gateway's hostname proxy reaches.
 */
export function createRuntimeServer(config: RuntimeConfig, agent: Agent): Server {
  const expected = digest(config.token);
  const authorized = (req: IncomingMessage) => {
    const given = req.headers[RUNTIME_TOKEN_HEADER];
    return typeof given === 'string' && timingSafeEqual(digest(given), expected);
  };

  async function turns(req: IncomingMessage, res: ServerResponse) {
    const text = await readBody(req, MAX_TURN_BYTES);
    if (text === null) return refusal(res, 413, 'bad_request', 'The turn request is too large');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return refusal(res, 400, 'bad_request', 'The body is not valid JSON');
    }
    const turn = parseTurn(body);
    if (typeof turn === 'string') return refusal(res, 400, 'bad_request', turn);
    const outcome = agent.turn(turn);
    if (outcome.kind === 'refused') return json(res, outcome.status, outcome.refusal);
    if (outcome.kind === 'steered') return json(res, 202, { steered: true });

    // The run has claimed its session: it must be driven (and so release it) whatever happens here.
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort(new Error('the client closed the turn request'));
    });
    try {
      if (res.destroyed) throw new Error('the client closed the turn request');
      res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-cache' });
      res.flushHeaders();
    } catch (err) {
      controller.abort(err);
    }
    const emit = (e: RuntimeEvent) => {
      if (!res.destroyed && !res.writableEnded) res.write(`${JSON.stringify(e)}\n`);
    };
    await outcome.run(emit, controller.signal);
    if (!res.writableEnded) res.end();
  }

  function publicSide(req: IncomingMessage, res: ServerResponse, path: string) {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return json(res, 405, { error: { code: 405, message: 'Method not allowed' } });
    if (path === '/status')
      return json(res, 200, { name: config.name, model: config.model, status: 'running' });
    if (path === '/') {
      const name = escapeHtml(config.name);
      const html =
        `<!doctype html><html><head><meta charset="utf-8"><title>${name}</title></head>` +
        `<body><h1>${name}</h1><p>Intern ${name} is running (model ${escapeHtml(config.model)}).</p></body></html>`;
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-length': Buffer.byteLength(html),
      });
      res.end(req.method === 'HEAD' ? undefined : html);
      return;
    }
    json(res, 404, { error: { code: 404, message: 'Not found' } });
  }

  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const done = (err: unknown) => {
      if (!res.headersSent) json(res, 500, { error: { code: 500, message: (err as Error).message } });
      else res.destroy();
    };
    try {
      if (path === '/_runtime' || path.startsWith('/_runtime/')) {
        if (!authorized(req))
          return json(res, 401, { error: { code: 401, message: 'Missing or invalid runtime token' } });
        if (path === RUNTIME_PATHS.health && req.method === 'GET')
          return json(res, 200, { ok: true, model: config.model });
        if (path === RUNTIME_PATHS.turns && req.method === 'POST') return void turns(req, res).catch(done);
        return json(res, 404, { error: { code: 404, message: 'Not found' } });
      }
      publicSide(req, res, path);
    } catch (err) {
      done(err);
    }
  });
}
