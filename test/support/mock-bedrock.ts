/**
 * A mock AWS Bedrock Runtime (127.0.0.1, random port) speaking its real wire:
 *
 * - `POST /model/{modelId}/converse` (JSON) and `/converse-stream` (binary AWS event stream:
 *   messageStart, contentBlockStart/Delta/Stop, messageStop, metadata), for any model;
 * - `POST /model/{modelId}/invoke` and `/invoke-with-response-stream` with Anthropic's Messages
 *   body (answer: a Message, or `chunk` events whose `bytes` are base64 Anthropic stream events);
 *   `/invoke` with an embedding model's body: Titan's `{inputText}` → `{embedding,
 *   inputTextTokenCount}`, Cohere's `{texts}` → `{embeddings}` (vectors by `mockVector`).
 *
 * Every request's SigV4 signature is checked by signing it again with `@smithy/signature-v4` and
 * the secret of the access key it names (the mock's `credentials`): an unknown key is answered
 * 403 `UnrecognizedClientException`, a wrong signature 403 `InvalidSignatureException`, as AWS does.
 *
 * Claude's InvokeModel bodies are checked as Bedrock checks them: an `anthropic_beta` flag Bedrock
 * does not offer (BEDROCK_BETAS) is answered 400 `ValidationException` "invalid beta flag", as
 * Bedrock answers the betas only Anthropic's own API has (Claude Code's `advanced-tool-use-…`, …).
 *
 * Replies are scripted with the shared mock's steps (`enqueue`: `reply`, `status` + `error`,
 * `headers`, `delayMs`, `eventDelayMs`, `dieAfterEvents`, `endAfterEvents`), rendered in Bedrock's
 * formats, plus `exception`: an exception message mid-stream. Errors carry `x-amzn-ErrorType`.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { encodeEventStreamMessage } from '../../src/providers/bedrock/eventstream.js';
import {
  type MockFormat,
  type MockStep,
  type MockUpstream,
  mockVector,
  type RecordedRequest,
  type Resolved,
  renderAnthropicMessage,
  renderAnthropicStream,
  resolveReply,
  type WireTurn,
  type WireView,
  wireView,
} from './mock-upstream.js';

export interface AwsTestKeys {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** The keys the mock knows by default (an operator's, in tests). */
export const BEDROCK_TEST_KEYS: AwsTestKeys = {
  accessKeyId: 'AKIAGATEHOUSETEST001',
  secretAccessKey: 'bedrock-test-secret-0123456789abcdefSECRET',
};

export type BedrockOperation = 'converse' | 'converse-stream' | 'invoke' | 'invoke-with-response-stream';

export interface BedrockStep extends MockStep {
  /** An `exception` message after this many events of a stream (then the stream ends). */
  exception?: { afterEvents: number; type: string; message: string };
}

export interface BedrockRequest extends RecordedRequest {
  operation: BedrockOperation | null;
  /** The raw body as received (what was signed). */
  raw: string;
  /** The signature checked out. */
  signatureValid: boolean;
  /** The secret access key the valid signature was made with. */
  signedWith: string | null;
  /** The signature's credential scope: region and service. */
  scope: { region: string; service: string } | null;
}

export interface MockBedrock extends MockUpstream {
  requests: BedrockRequest[];
  enqueue(...steps: BedrockStep[]): void;
  /** Access keys the mock accepts (edit to add one). */
  credentials: AwsTestKeys[];
}

/**
 * The `anthropic_beta` flags Bedrock's InvokeModel takes for Claude (AWS's Anthropic Claude Messages
 * API parameters page, and Claude Code's own header betas Bedrock accepts).
 */
export const BEDROCK_BETAS = new Set([
  'claude-code-20250219',
  'computer-use-2024-10-22',
  'computer-use-2025-01-24',
  'computer-use-2025-11-24',
  'token-efficient-tools-2025-02-19',
  'interleaved-thinking-2025-05-14',
  'output-128k-2025-02-19',
  'dev-full-thinking-2025-05-14',
  'context-1m-2025-08-07',
  'context-management-2025-06-27',
  'effort-2025-11-24',
  'tool-search-tool-2025-10-19',
  'tool-examples-2025-10-29',
]);

const ERROR_TYPES: Record<number, string> = {
  400: 'ValidationException',
  401: 'UnrecognizedClientException',
  403: 'AccessDeniedException',
  404: 'ResourceNotFoundException',
  408: 'ModelTimeoutException',
  424: 'ModelErrorException',
  429: 'ThrottlingException',
  500: 'InternalServerException',
  503: 'ServiceUnavailableException',
};

const CONVERSE_STOP = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'content_filtered',
};

function converseUsage(r: Resolved) {
  const write = r.reply.usage?.cache_write_tokens ?? 0;
  const input = Math.max(0, r.prompt - r.cached - write);
  return {
    inputTokens: input,
    outputTokens: r.completion,
    totalTokens: input + r.completion + r.cached + write,
    cacheReadInputTokens: r.cached,
    cacheWriteInputTokens: write,
  };
}

export function renderConverse(r: Resolved): unknown {
  const content: unknown[] = [];
  if (r.reasoning)
    content.push({ reasoningContent: { reasoningText: { text: r.reasoning, signature: 'mock-signature' } } });
  if (r.text) content.push({ text: r.text });
  for (const c of r.calls)
    content.push({ toolUse: { toolUseId: c.id, name: c.name, input: JSON.parse(c.args) } });
  return {
    output: { message: { role: 'assistant', content } },
    stopReason: CONVERSE_STOP[r.finish],
    usage: converseUsage(r),
    metrics: { latencyMs: 12 },
  };
}

type StreamEvent = { type: string; body: unknown };

const textPieces = (s: string): string[] => s.match(/\s*\S+\s*/g) ?? (s ? [s] : []);
function pieces(s: string, n: number): string[] {
  const size = Math.max(1, Math.ceil(s.length / n));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

export function renderConverseStream(r: Resolved): StreamEvent[] {
  const out: StreamEvent[] = [{ type: 'messageStart', body: { role: 'assistant' } }];
  let index = 0;
  if (r.reasoning) {
    for (const p of textPieces(r.reasoning))
      out.push({
        type: 'contentBlockDelta',
        body: { contentBlockIndex: index, delta: { reasoningContent: { text: p } } },
      });
    out.push({ type: 'contentBlockStop', body: { contentBlockIndex: index++ } });
  }
  if (r.text) {
    for (const p of textPieces(r.text))
      out.push({ type: 'contentBlockDelta', body: { contentBlockIndex: index, delta: { text: p } } });
    out.push({ type: 'contentBlockStop', body: { contentBlockIndex: index++ } });
  }
  for (const c of r.calls) {
    out.push({
      type: 'contentBlockStart',
      body: { contentBlockIndex: index, start: { toolUse: { toolUseId: c.id, name: c.name } } },
    });
    for (const p of pieces(c.args, r.reply.argPieces ?? 3))
      out.push({
        type: 'contentBlockDelta',
        body: { contentBlockIndex: index, delta: { toolUse: { input: p } } },
      });
    out.push({ type: 'contentBlockStop', body: { contentBlockIndex: index++ } });
  }
  out.push({ type: 'messageStop', body: { stopReason: CONVERSE_STOP[r.finish] } });
  out.push({ type: 'metadata', body: { usage: converseUsage(r), metrics: { latencyMs: 12 } } });
  return out;
}

/** Anthropic stream events as InvokeModelWithResponseStream `chunk` events (base64 JSON in `bytes`). */
export function renderInvokeStream(r: Resolved, model: string): StreamEvent[] {
  const events = renderAnthropicStream(r, model).map((e) =>
    'data' in e ? (e.data as Record<string, unknown>) : {},
  );
  return events.map((data) => {
    const withMetrics =
      data.type === 'message_stop'
        ? {
            ...data,
            'amazon-bedrock-invocationMetrics': {
              inputTokenCount: r.prompt,
              outputTokenCount: r.completion,
              invocationLatency: 12,
              firstByteLatency: 5,
            },
          }
        : data;
    return { type: 'chunk', body: { bytes: Buffer.from(JSON.stringify(withMetrics)).toString('base64') } };
  });
}

// ---------------------------------------------------------------------------------------------
// Signature check

const AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]+)$/;

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** `20251126T101500Z` → Date. */
const amzDate = (s: string): Date =>
  new Date(
    `${s.slice(0, 4)}-${s.slice(4, 6)}-${s.slice(6, 8)}T${s.slice(9, 11)}:${s.slice(11, 13)}:${s.slice(13, 15)}Z`,
  );

export type Verdict =
  | { ok: true; secret: string; region: string; service: string }
  | {
      ok: false;
      type:
        | 'UnrecognizedClientException'
        | 'InvalidSignatureException'
        | 'MissingAuthenticationTokenException';
      message: string;
    };

export async function verify(
  req: IncomingMessage,
  rawPath: string,
  raw: string,
  keys: AwsTestKeys[],
): Promise<Verdict> {
  const auth = one(req.headers.authorization) ?? '';
  const m = AUTH.exec(auth);
  const date = one(req.headers['x-amz-date']);
  if (!m || !date)
    return {
      ok: false,
      type: 'MissingAuthenticationTokenException',
      message: 'Missing Authentication Token',
    };
  const [, keyId, , region, service, signedHeaders] = m as unknown as string[];
  const key = keys.find((k) => k.accessKeyId === keyId);
  if (!key)
    return {
      ok: false,
      type: 'UnrecognizedClientException',
      message: 'The security token included in the request is invalid.',
    };
  const headers: Record<string, string> = {};
  for (const name of (signedHeaders as string).split(';')) headers[name] = one(req.headers[name]) ?? '';
  const u = new URL(rawPath, 'http://mock');
  const signer = new SignatureV4({
    service: service as string,
    region: region as string,
    sha256: Sha256,
    credentials: {
      accessKeyId: key.accessKeyId,
      secretAccessKey: key.secretAccessKey,
      ...(headers['x-amz-security-token'] ? { sessionToken: headers['x-amz-security-token'] } : {}),
    },
  });
  const host = headers.host ?? '';
  const signed = await signer.sign(
    {
      method: req.method ?? 'POST',
      protocol: 'http:',
      hostname: host.split(':')[0] ?? '',
      path: u.pathname,
      query: Object.fromEntries(u.searchParams),
      headers,
      body: raw,
    },
    { signingDate: amzDate(date) },
  );
  if (signed.headers.authorization !== auth)
    return {
      ok: false,
      type: 'InvalidSignatureException',
      message:
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
    };
  return { ok: true, secret: key.secretAccessKey, region: region as string, service: service as string };
}

// ---------------------------------------------------------------------------------------------
// Normalised view (the contract suite's `wireView` for Bedrock requests)

const str = (x: unknown): string => (typeof x === 'string' ? x : '');

function newTurn(role: WireTurn['role']): WireTurn {
  return { role, text: '', images: [], toolCalls: [], toolResults: [], reasoning: [] };
}

/** One normalised view of a Converse request; an InvokeModel request is viewed as Anthropic's. */
export function bedrockView(req: RecordedRequest): WireView {
  const r = req as BedrockRequest;
  const auth =
    r.signatureValid && r.signedWith ? { header: 'authorization' as const, key: r.signedWith } : null;
  if (r.operation === 'invoke' || r.operation === 'invoke-with-response-stream')
    return { ...wireView({ ...req, format: 'anthropic-messages' }), auth };
  const body = req.body ?? {};
  const v: WireView = {
    format: req.format,
    model: req.model,
    stream: req.stream,
    system: Array.isArray(body.system) ? body.system.map((b: any) => str(b.text)).join('') : null,
    turns: [],
    tools: [],
    auth,
  };
  for (const m of body.messages ?? []) {
    const t = newTurn(m.role === 'assistant' ? 'assistant' : 'user');
    for (const b of m.content ?? []) {
      if (typeof b.text === 'string') t.text += b.text;
      else if (b.image) t.images.push({ mediaType: `image/${b.image.format}`, data: b.image.source?.bytes });
      else if (b.toolUse)
        t.toolCalls.push({ id: b.toolUse.toolUseId, name: b.toolUse.name, args: b.toolUse.input });
      else if (b.toolResult)
        t.toolResults.push({ id: b.toolResult.toolUseId, content: b.toolResult.content });
    }
    v.turns.push(t);
  }
  v.tools = (body.toolConfig?.tools ?? [])
    .filter((t: any) => t.toolSpec)
    .map((t: any) => ({
      name: t.toolSpec.name,
      description: t.toolSpec.description,
      parameters: t.toolSpec.inputSchema?.json,
    }));
  return v;
}

// ---------------------------------------------------------------------------------------------
// Server

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

function wait(ms: number, res: ServerResponse): Promise<boolean> {
  if (!ms) return Promise.resolve(!res.destroyed);
  return new Promise((resolve) => {
    const onClose = () => {
      clearTimeout(t);
      resolve(false);
    };
    const t = setTimeout(() => {
      res.off('close', onClose);
      resolve(!res.destroyed);
    }, ms);
    res.once('close', onClose);
  });
}

const write = (res: ServerResponse, b: Uint8Array): Promise<void> =>
  new Promise((resolve) => {
    if (res.destroyed) return resolve();
    res.write(b, () => resolve());
  });

function matches(step: BedrockStep, req: BedrockRequest): boolean {
  const m = step.match;
  if (!m) return true;
  if (m.model && m.model !== req.model) return false;
  if (m.path && (typeof m.path === 'string' ? !req.path.endsWith(m.path) : !m.path.test(req.path)))
    return false;
  return true;
}

/** A Titan (`inputText`) or Cohere (`texts`) embeddings body. */
const embedRequest = (body: any): boolean =>
  !!body && typeof body === 'object' && (typeof body.inputText === 'string' || Array.isArray(body.texts));

const PATH = /\/model\/([^/]+)\/(converse|converse-stream|invoke|invoke-with-response-stream)$/;

export async function startMockBedrock(opts: { credentials?: AwsTestKeys[] } = {}): Promise<MockBedrock> {
  const queue: (BedrockStep & { left: number })[] = [];
  const requests: BedrockRequest[] = [];
  const credentials = [...(opts.credentials ?? [BEDROCK_TEST_KEYS])];

  function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(text)),
      'x-amzn-requestid': randomUUID(),
      ...headers,
    });
    res.end(text);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const rawPath = req.url ?? '/';
    const u = new URL(rawPath, 'http://mock');
    let body: any = raw;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {}
    const route = PATH.exec(u.pathname);
    const operation = (route?.[2] as BedrockOperation | undefined) ?? null;
    const verdict = await verify(req, rawPath, raw, credentials);
    const rec: BedrockRequest = {
      method: req.method ?? 'POST',
      path: u.pathname,
      query: Object.fromEntries(u.searchParams),
      headers: req.headers,
      body,
      format: embedRequest(body)
        ? // Not one of the shared mock's formats: only ever matched as /embed/.
          ('bedrock-embed' as MockFormat)
        : operation?.startsWith('invoke')
          ? 'anthropic-messages'
          : 'unknown',
      model: route ? decodeURIComponent(route[1] as string) : null,
      stream: operation === 'converse-stream' || operation === 'invoke-with-response-stream',
      operation,
      raw,
      signatureValid: verdict.ok,
      signedWith: verdict.ok ? verdict.secret : null,
      scope: verdict.ok ? { region: verdict.region, service: verdict.service } : null,
    };
    requests.push(rec);
    if (!verdict.ok)
      return json(
        res,
        403,
        { message: verdict.message },
        { 'x-amzn-errortype': `${verdict.type}:http://internal.amazon.com/coral/com.amazon.coral.service/` },
      );
    if (!operation || req.method !== 'POST')
      return json(
        res,
        404,
        { message: `mock: no route for ${req.method} ${u.pathname}` },
        { 'x-amzn-errortype': 'UnknownOperationException' },
      );

    const betas: unknown[] =
      operation?.startsWith('invoke') && Array.isArray(body?.anthropic_beta) ? body.anthropic_beta : [];
    if (betas.some((b) => !BEDROCK_BETAS.has(String(b))))
      return json(
        res,
        400,
        { message: 'The model returned the following errors: invalid beta flag' },
        { 'x-amzn-errortype': 'ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/' },
      );

    const idx = queue.findIndex((s) => matches(s, rec));
    const step = idx >= 0 ? queue[idx] : undefined;
    if (step && --step.left <= 0) queue.splice(idx, 1);
    if (step?.delayMs && !(await wait(step.delayMs, res))) return;

    const status = step?.status ?? 200;
    if (status >= 400) {
      const type = step?.error?.type ?? ERROR_TYPES[status] ?? 'InternalServerException';
      return json(res, status, step?.body ?? { message: step?.error?.message ?? type }, {
        'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
        ...step?.headers,
      });
    }
    const model = rec.model ?? 'unknown-model';
    if (operation === 'invoke' && embedRequest(body) && step?.body === undefined) {
      const words = (t: string) => Math.max(1, t.split(/\s+/).filter(Boolean).length);
      if (typeof body.inputText === 'string')
        return json(res, 200, {
          embedding: mockVector(body.inputText),
          inputTextTokenCount: words(body.inputText),
        });
      const texts = body.texts as string[];
      return json(
        res,
        200,
        {
          id: randomUUID(),
          response_type: 'embeddings_floats',
          texts,
          embeddings: texts.map((t) => mockVector(t)),
        },
        { 'x-amzn-bedrock-input-token-count': String(texts.reduce((n, t) => n + words(t), 0)) },
      );
    }
    const r = resolveReply(step?.reply, model, body);
    if (!rec.stream) {
      if (step?.body !== undefined) return json(res, 200, step.body, step.headers);
      return json(
        res,
        200,
        operation === 'invoke' ? renderAnthropicMessage(r, model) : renderConverse(r),
        step?.headers,
      );
    }
    const events = operation === 'converse-stream' ? renderConverseStream(r) : renderInvokeStream(r, model);
    res.writeHead(200, {
      'content-type': 'application/vnd.amazon.eventstream',
      'x-amzn-requestid': randomUUID(),
      ...step?.headers,
    });
    res.flushHeaders();
    for (let i = 0; i < events.length; i++) {
      if (step?.exception && i >= step.exception.afterEvents) {
        const e = step.exception;
        await write(res, encodeEventStreamMessage('exception', e.type, { message: e.message }));
        res.end();
        return;
      }
      if (step?.dieAfterEvents !== undefined && i >= step.dieAfterEvents) {
        res.destroy();
        return;
      }
      if (step?.endAfterEvents !== undefined && i >= step.endAfterEvents) break;
      if (i > 0 && step?.eventDelayMs && !(await wait(step.eventDelayMs, res))) return;
      const e = events[i] as StreamEvent;
      await write(res, encodeEventStreamMessage('event', e.type, e.body));
    }
    res.end();
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: `mock crashed: ${String(err)}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    models: [],
    credentials,
    requests,
    enqueue(...steps: BedrockStep[]) {
      for (const s of steps) queue.push({ ...s, left: s.times ?? 1 });
    },
    reset() {
      queue.length = 0;
      requests.length = 0;
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}
