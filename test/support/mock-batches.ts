import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A mock of the providers' batch APIs over a real socket, on one server told apart by path:
 * `/openai/v1/…` speaks OpenAI's Files and Batch APIs (validating → in_progress → finalizing →
 * completed, output and error files as JSON Lines), `/anthropic/v1/messages/batches…` Anthropic's
 * Message Batches (in_progress → canceling → ended, results JSONL at `results_url`). Both also
 * answer the synchronous calls (`/chat/completions`, `/messages`) the worker falls back to.
 *
 * The test steps the lifecycle (`advance`, `finish`, `end`) instead of waiting: nothing moves on
 * its own. An item's fate in a batch is read from its text: `ERRORED` → the provider's per-item
 * error, `EXPIRED` → expired (never run); anything else succeeds with `done <text>`. Synchronous
 * calls always succeed (the provider's batch failure was not the request's fault).
 */

export type Vendor = 'openai' | 'anthropic';

export interface MockItem {
  custom_id: string;
  /** The body the provider would run (OpenAI: the line's `body`; Anthropic: `params`). */
  body: Record<string, any>;
  url?: string;
  method?: string;
}

export interface MockBatch {
  vendor: Vendor;
  id: string;
  status: string;
  endpoint: string | null;
  completion_window: string | null;
  metadata: Record<string, string> | null;
  items: MockItem[];
  /** Headers of the create call (authentication checked by tests). */
  headers: Record<string, string | string[] | undefined>;
  cancelRequested: boolean;
  outputFileId: string | null;
  errorFileId: string | null;
  /** Anthropic: the results JSONL once ended. */
  results: string | null;
}

export interface SyncCall {
  vendor: Vendor;
  path: string;
  body: any;
}

export interface MockBatches {
  url: string;
  batches: MockBatch[];
  /** Files uploaded through OpenAI's Files API: id → text. */
  files: Map<string, { purpose: string; text: string; filename: string }>;
  /** Synchronous calls (the worker's). */
  sync: SyncCall[];
  /** The next create (OpenAI's batch, or Anthropic's) is refused with this status and message. */
  refuseNext: { status: number; message: string } | null;
  /** One lifecycle step of a batch (OpenAI: validating → in_progress → finalizing → completed). */
  advance(id: string): MockBatch;
  /** Runs a batch to its successful end. */
  finish(id: string): MockBatch;
  /** Ends a batch as `failed` or `expired` (OpenAI), with no results. */
  end(id: string, status: 'failed' | 'expired'): MockBatch;
  close(): Promise<void>;
}

/** Token usage of every answered item (prompt 10, completion 5): its cost is easy to check. */
export const ITEM_USAGE = { prompt: 10, completion: 5 };

const textOf = (body: any): string => {
  const m = body?.messages?.[0]?.content ?? body?.input ?? '';
  return typeof m === 'string' ? m : JSON.stringify(m);
};

const fateOf = (body: any): 'succeeded' | 'errored' | 'expired' => {
  const t = textOf(body);
  return t.includes('ERRORED') ? 'errored' : t.includes('EXPIRED') ? 'expired' : 'succeeded';
};

let seq = 0;
const newId = (prefix: string) => `${prefix}_${Date.now().toString(36)}${(seq++).toString(36)}`;

function openAiAnswer(body: any) {
  return {
    id: newId('chatcmpl'),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: `done ${textOf(body)}` },
        finish_reason: 'stop',
        logprobs: null,
      },
    ],
    usage: {
      prompt_tokens: ITEM_USAGE.prompt,
      completion_tokens: ITEM_USAGE.completion,
      total_tokens: ITEM_USAGE.prompt + ITEM_USAGE.completion,
    },
  };
}

/** The answer of an OpenAI batch line, in its endpoint's shape. */
function openAiAnswerFor(url: string | undefined, body: any) {
  if (url === '/v1/embeddings')
    return {
      object: 'list',
      model: body.model,
      data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2, 0.3, 0.4] }],
      usage: { prompt_tokens: ITEM_USAGE.prompt, total_tokens: ITEM_USAGE.prompt },
    };
  if (url === '/v1/responses')
    return {
      id: newId('resp'),
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'completed',
      model: body.model,
      output: [
        {
          type: 'message',
          id: newId('msg'),
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: `done ${textOf(body)}`, annotations: [] }],
        },
      ],
      usage: {
        input_tokens: ITEM_USAGE.prompt,
        output_tokens: ITEM_USAGE.completion,
        total_tokens: ITEM_USAGE.prompt + ITEM_USAGE.completion,
      },
    };
  return openAiAnswer(body);
}

function anthropicAnswer(body: any) {
  return {
    id: newId('msg'),
    type: 'message',
    role: 'assistant',
    model: body.model,
    content: [{ type: 'text', text: `done ${textOf(body)}` }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: ITEM_USAGE.prompt, output_tokens: ITEM_USAGE.completion },
  };
}

export async function startMockBatches(): Promise<MockBatches> {
  const mock: MockBatches = {
    url: '',
    batches: [],
    files: new Map(),
    sync: [],
    refuseNext: null,
    advance: (id) => step(find(id)),
    finish: (id) => {
      const b = find(id);
      while (!['completed', 'ended', 'cancelled', 'failed', 'expired'].includes(b.status)) step(b);
      return b;
    },
    end: (id, status) => {
      const b = find(id);
      b.status = status;
      return b;
    },
    close: async () => {},
  };
  const find = (id: string) => {
    const b = mock.batches.find((x) => x.id === id);
    if (!b) throw new Error(`no mock batch ${id}`);
    return b;
  };

  /** The results of an ended batch; items of a cancelled batch that never ran are cancelled. */
  const conclude = (b: MockBatch, cancelled: boolean) => {
    if (b.vendor === 'openai') {
      const out: string[] = [];
      const err: string[] = [];
      for (const it of b.items) {
        const fate = cancelled ? 'expired' : fateOf(it.body);
        if (fate === 'succeeded')
          out.push(
            JSON.stringify({
              id: newId('batch_req'),
              custom_id: it.custom_id,
              response: {
                status_code: 200,
                request_id: newId('req'),
                body: openAiAnswerFor(it.url, it.body),
              },
              error: null,
            }),
          );
        else if (fate === 'errored')
          out.push(
            JSON.stringify({
              id: newId('batch_req'),
              custom_id: it.custom_id,
              response: {
                status_code: 400,
                request_id: newId('req'),
                body: { error: { message: 'mock: this request is invalid', type: 'invalid_request_error' } },
              },
              error: null,
            }),
          );
        else
          err.push(
            JSON.stringify({
              id: newId('batch_req'),
              custom_id: it.custom_id,
              response: null,
              error: {
                code: 'batch_expired',
                message: 'This request could not be executed before the completion window expired.',
              },
            }),
          );
      }
      if (out.length) {
        b.outputFileId = newId('file');
        mock.files.set(b.outputFileId, {
          purpose: 'batch_output',
          text: `${out.join('\n')}\n`,
          filename: 'out.jsonl',
        });
      }
      if (err.length) {
        b.errorFileId = newId('file');
        mock.files.set(b.errorFileId, {
          purpose: 'batch_output',
          text: `${err.join('\n')}\n`,
          filename: 'err.jsonl',
        });
      }
      return;
    }
    b.results = `${b.items
      .map((it) => {
        const fate = cancelled ? 'canceled' : fateOf(it.body);
        const result =
          fate === 'succeeded'
            ? { type: 'succeeded', message: anthropicAnswer(it.body) }
            : fate === 'errored'
              ? {
                  type: 'errored',
                  error: {
                    type: 'error',
                    error: { type: 'invalid_request_error', message: 'mock: invalid' },
                  },
                }
              : { type: fate };
        return JSON.stringify({ custom_id: it.custom_id, result });
      })
      .join('\n')}\n`;
  };

  const step = (b: MockBatch): MockBatch => {
    if (b.vendor === 'openai') {
      const next: Record<string, string> = {
        validating: 'in_progress',
        in_progress: 'finalizing',
        finalizing: 'completed',
        cancelling: 'cancelled',
      };
      const to = next[b.status];
      if (!to) return b;
      b.status = to;
      if (to === 'completed') conclude(b, false);
      if (to === 'cancelled') conclude(b, true);
      return b;
    }
    if (b.status === 'in_progress' || b.status === 'canceling') {
      conclude(b, b.status === 'canceling');
      b.status = 'ended';
    }
    return b;
  };

  const openAiView = (b: MockBatch) => ({
    id: b.id,
    object: 'batch',
    endpoint: b.endpoint,
    input_file_id: 'file',
    completion_window: b.completion_window,
    status: b.status,
    output_file_id: b.outputFileId,
    error_file_id: b.errorFileId,
    metadata: b.metadata,
    errors:
      b.status === 'failed'
        ? { object: 'list', data: [{ code: 'mock', message: 'mock: the batch failed' }] }
        : null,
    request_counts: { total: b.items.length, completed: 0, failed: 0 },
  });

  const anthropicView = (b: MockBatch) => ({
    id: b.id,
    type: 'message_batch',
    processing_status: b.status,
    request_counts: {
      processing: b.status === 'ended' ? 0 : b.items.length,
      succeeded: 0,
      errored: 0,
      canceled: 0,
      expired: 0,
    },
    results_url: b.status === 'ended' ? `${mock.url}/anthropic/v1/messages/batches/${b.id}/results` : null,
  });

  const send = (res: ServerResponse, status: number, body: unknown, type = 'application/json') => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const path = (req.url ?? '').split('?')[0] as string;
    const json = () => JSON.parse(raw.toString('utf8') || '{}');

    // OpenAI
    if (req.method === 'POST' && path === '/openai/v1/files') {
      const form = await new Request('http://mock/', {
        method: 'POST',
        headers: { 'content-type': String(req.headers['content-type']) },
        body: raw,
      }).formData();
      const file = form.get('file') as File;
      const id = newId('file');
      mock.files.set(id, {
        purpose: String(form.get('purpose')),
        text: await file.text(),
        filename: file.name,
      });
      return send(res, 200, { id, object: 'file', purpose: form.get('purpose'), filename: file.name });
    }
    if (req.method === 'POST' && path === '/openai/v1/batches') {
      const body = json();
      if (mock.refuseNext) {
        const r = mock.refuseNext;
        mock.refuseNext = null;
        return send(res, r.status, { error: { message: r.message, type: 'invalid_request_error' } });
      }
      const file = mock.files.get(body.input_file_id);
      if (!file) return send(res, 400, { error: { message: 'no such file' } });
      const b: MockBatch = {
        vendor: 'openai',
        id: newId('batch'),
        status: 'validating',
        endpoint: body.endpoint,
        completion_window: body.completion_window,
        metadata: body.metadata ?? null,
        items: file.text
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l)),
        headers: req.headers,
        cancelRequested: false,
        outputFileId: null,
        errorFileId: null,
        results: null,
      };
      mock.batches.push(b);
      return send(res, 200, openAiView(b));
    }
    if (req.method === 'GET' && path === '/openai/v1/batches') {
      const data = mock.batches
        .filter((b) => b.vendor === 'openai')
        .reverse()
        .map(openAiView);
      return send(res, 200, { object: 'list', data, has_more: false });
    }
    const openAiBatch = /^\/openai\/v1\/batches\/([^/]+)(\/cancel)?$/.exec(path);
    if (openAiBatch) {
      const m = openAiBatch;
      const b = mock.batches.find((x) => x.id === m[1]);
      if (!b) return send(res, 404, { error: { message: 'no such batch' } });
      if (m[2] && req.method === 'POST') {
        b.cancelRequested = true;
        if (['validating', 'in_progress', 'finalizing'].includes(b.status)) b.status = 'cancelling';
      }
      return send(res, 200, openAiView(b));
    }
    const content = /^\/openai\/v1\/files\/([^/]+)\/content$/.exec(path);
    if (req.method === 'GET' && content) {
      const m = content;
      const f = mock.files.get(m[1] as string);
      return f
        ? send(res, 200, f.text, 'application/jsonl')
        : send(res, 404, { error: { message: 'no such file' } });
    }
    if (req.method === 'POST' && path === '/openai/v1/chat/completions') {
      const body = json();
      mock.sync.push({ vendor: 'openai', path, body });
      return send(res, 200, openAiAnswer(body));
    }

    // Anthropic
    if (req.method === 'POST' && path === '/anthropic/v1/messages/batches') {
      const body = json();
      if (mock.refuseNext) {
        const r = mock.refuseNext;
        mock.refuseNext = null;
        return send(res, r.status, {
          type: 'error',
          error: { type: 'invalid_request_error', message: r.message },
        });
      }
      const b: MockBatch = {
        vendor: 'anthropic',
        id: newId('msgbatch'),
        status: 'in_progress',
        endpoint: null,
        completion_window: null,
        metadata: null,
        items: (body.requests ?? []).map((r: any) => ({ custom_id: r.custom_id, body: r.params })),
        headers: req.headers,
        cancelRequested: false,
        outputFileId: null,
        errorFileId: null,
        results: null,
      };
      mock.batches.push(b);
      return send(res, 200, anthropicView(b));
    }
    const anthropicBatch = /^\/anthropic\/v1\/messages\/batches\/([^/]+)(\/cancel|\/results)?$/.exec(path);
    if (anthropicBatch) {
      const m = anthropicBatch;
      const b = mock.batches.find((x) => x.id === m[1]);
      if (!b)
        return send(res, 404, {
          type: 'error',
          error: { type: 'not_found_error', message: 'no such batch' },
        });
      if (m[2] === '/results')
        return b.results
          ? send(res, 200, b.results, 'application/binary')
          : send(res, 404, { type: 'error' });
      if (m[2] === '/cancel' && req.method === 'POST') {
        b.cancelRequested = true;
        if (b.status === 'in_progress') b.status = 'canceling';
      }
      return send(res, 200, anthropicView(b));
    }
    if (req.method === 'POST' && path === '/anthropic/v1/messages') {
      const body = json();
      mock.sync.push({ vendor: 'anthropic', path, body });
      return send(res, 200, anthropicAnswer(body));
    }
    send(res, 404, { error: { message: `mock-batches: no route ${req.method} ${path}` } });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => send(res, 500, { error: { message: String(err) } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  mock.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  mock.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return mock;
}
