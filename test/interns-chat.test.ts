import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { OpenRouter } from '@openrouter/sdk';
import type { InternChatCompletionChunk } from '@openrouter/sdk/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDE_INPUT_TOOL } from '../src/interns/chat-stream.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';

/**
 * The interns chat route end to end: a real gateway, real runtime child processes started by the
 * local provisioner, the built-in dev model scripted with `gatehouse:{"steps":[…]}` directives,
 * and an HTTP server standing for the outside world the intern's http_request tool reaches.
 */

const SECRET = 'sk-live-0123456789-very-secret';

interface Chunk {
  id: string;
  object: string;
  model: string;
  choices: { index: number; delta: Record<string, any>; finish_reason: string | null }[];
  session_id?: string | null;
  usage?: Record<string, number> | null;
  error?: { code: number; message: string; metadata: { reason: string; retryable: boolean } };
}

interface Stream {
  status: number;
  text: string;
  chunks: Chunk[];
  done: boolean;
  content: string;
  reasoning: string;
  finish: string | null;
  final: Chunk | undefined;
  toolCall: { id: string; function: { name: string; arguments: string } } | undefined;
}

function parseStream(status: number, text: string): Stream {
  const datas = text
    .split('\n\n')
    .map((f) =>
      f
        .split('\n')
        .find((l) => l.startsWith('data: '))
        ?.slice(6),
    )
    .filter((d): d is string => d !== undefined);
  const done = datas.at(-1) === '[DONE]';
  const chunks = datas.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d) as Chunk);
  const deltas = chunks.flatMap((c) => c.choices.map((ch) => ch.delta));
  return {
    status,
    text,
    chunks,
    done,
    content: deltas.map((d) => d.content ?? '').join(''),
    reasoning: deltas.map((d) => d.reasoning ?? '').join(''),
    finish: chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).find((f) => f !== null) ?? null,
    final: chunks.find((c) => c.choices.length === 0),
    toolCall: deltas.flatMap((d) => d.tool_calls ?? [])[0],
  };
}

describe('interns chat', () => {
  let gw: TestGateway;
  let api: ReturnType<typeof client>;
  const logs: string[] = [];
  const bodies: string[] = [];
  let outside: Server;
  let outsideUrl: string;
  const outsideSeen: { url: string; authorization: string | undefined }[] = [];

  const logStream = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });

  /** Every response body is kept: none may contain the secret. */
  async function call(method: string, path: string, body?: unknown, headers?: Record<string, string>) {
    const res = await api(method, path, body, headers);
    bodies.push(res.text);
    return res;
  }

  async function chat(
    internId: string,
    body: Record<string, unknown>,
    signal?: AbortSignal,
    key: string = gw.apiKey,
  ): Promise<Stream> {
    const res = await fetch(`${gw.url}/api/v1/interns/${internId}/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: JSON.stringify({ stream: true, ...body }),
      signal,
    });
    const text = await res.text();
    bodies.push(text);
    return parseStream(res.status, text);
  }

  async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
    const until = Date.now() + ms;
    for (;;) {
      const got = await probe();
      if (got !== undefined) return got;
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function runningIntern(
    name: string,
    extra: Record<string, unknown> = {},
  ): Promise<{ id: string; hostname: string; vault_id: string }> {
    const created = await call('POST', '/interns', {
      name,
      provision: true,
      instructions: 'Be brief.',
      ...extra,
    });
    expect(created.status).toBe(201);
    return waitFor(`${name} running`, async () => {
      const got = await call('GET', `/interns/${created.body.id}`);
      if (got.body.status === 'failed')
        throw new Error(`provisioning failed: ${got.body.last_failure_message}`);
      return got.body.status === 'running' ? got.body : undefined;
    });
  }

  const directive = (d: unknown) => `gatehouse:${JSON.stringify(d)}`;

  beforeAll(async () => {
    outside = createServer((req: IncomingMessage, res) => {
      outsideSeen.push({ url: req.url ?? '', authorization: req.headers.authorization });
      res.setHeader('content-type', 'text/plain');
      res.end(`you sent: ${req.headers.authorization ?? 'nothing'}`);
    });
    await new Promise<void>((r) => outside.listen(0, '127.0.0.1', r));
    outsideUrl = `http://127.0.0.1:${(outside.address() as AddressInfo).port}`;
    gw = await startTestGateway('sqlite', {
      logStream,
      env: {
        GATEHOUSE_INTERNS_EGRESS_PRIVATE: 'on',
        GATEHOUSE_INTERNS_KEEPALIVE_MS: '300',
        GATEHOUSE_INTERNS_PER_MEMBER: '50',
        GATEHOUSE_INTERNS_INTERACTION_TIMEOUT_MS: '60000',
      },
    });
    api = client(gw.url, gw.apiKey);
    const granted = await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 50,
    });
    expect(granted.status).toBe(201);
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
    await new Promise((r) => outside?.close(r));
  });

  it('streams a reply: role chunk, content, one stop, a final chunk with session_id and usage, [DONE]; usage is billed to the owner key', async () => {
    const intern = await runningIntern('plain');
    const s = await chat(intern.id, { messages: [{ role: 'user', content: 'hello there intern' }] });
    expect(s.status).toBe(200);
    expect(s.done).toBe(true);
    expect(s.chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant' });
    expect(s.chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(new Set(s.chunks.map((c) => c.id)).size).toBe(1);
    expect(s.content).toContain('hello there intern');
    expect(s.finish).toBe('stop');
    expect(s.chunks.filter((c) => c.choices.some((ch) => ch.finish_reason !== null))).toHaveLength(1);
    expect(s.final?.session_id).toMatch(/\S/);
    expect(s.final?.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(s.final?.usage?.total_tokens).toBe(
      (s.final?.usage?.prompt_tokens ?? 0) + (s.final?.usage?.completion_tokens ?? 0),
    );
    await gw.services.accountant.flush();
    const generations = await gw.services.db
      .selectFrom('generations')
      .select(['key_hash', 'model'])
      .where('model', 'like', 'gatehouse/%')
      .execute();
    expect(generations.length).toBeGreaterThan(0);
    const owner = await gw.services.db
      .selectFrom('interns')
      .select('owner_key_hash')
      .where('id', '=', intern.id)
      .executeTakeFirstOrThrow();
    expect(generations.some((g) => g.key_hash === owner.owner_key_hash)).toBe(true);
  }, 60_000);

  it('streams through the official SDK, its chunk validation included', async () => {
    const intern = await runningIntern('sdk-chat');
    const sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.apiKey,
      retryConfig: { strategy: 'none' },
    });
    const res = await sdk.interns.chat({
      internId: intern.id,
      internChatCompletionRequest: {
        stream: true,
        messages: [{ role: 'user', content: 'hello from the sdk' }],
      },
    });
    expect('status' in res.result).toBe(false);
    const chunks: InternChatCompletionChunk[] = [];
    for await (const chunk of res.result as AsyncIterable<InternChatCompletionChunk>) chunks.push(chunk);
    const text = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? '')).join('');
    expect(text).toContain('hello from the sdk');
    const final = chunks.at(-1);
    expect(final?.choices).toEqual([]);
    expect(final?.sessionId).toMatch(/\S/);
    expect(final?.usage?.totalTokens).toBeGreaterThan(0);
  }, 60_000);

  it('refuses what the route does not take, before any stream', async () => {
    const intern = await runningIntern('strict');
    const notStream = await call('POST', `/interns/${intern.id}/chat/completions`, {
      stream: false,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(notStream.status).toBe(400);
    expect(notStream.body.error).toMatchObject({
      code: 400,
      metadata: { reason: 'bad_request', retryable: false },
    });
    const toolWithoutSession = await call('POST', `/interns/${intern.id}/chat/completions`, {
      stream: true,
      messages: [{ role: 'tool', tool_call_id: 'int_x', content: 'allow' }],
    });
    expect(toolWithoutSession.status).toBe(400);
    const unknownInteraction = await call('POST', `/interns/${intern.id}/chat/completions`, {
      stream: true,
      session_id: 'sess_never_paused',
      messages: [{ role: 'tool', tool_call_id: 'int_nope', content: 'allow' }],
    });
    expect([400, 409]).toContain(unknownInteraction.status);
    expect(unknownInteraction.body.error.code).toBe(unknownInteraction.status);
    const missing = await call('POST', '/interns/00000000-0000-4000-8000-000000000000/chat/completions', {
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(missing.status).toBe(404);
    expect(missing.body.error.metadata.reason).toBe('not_found');

    const stopped = await call('POST', '/interns', { name: 'sleeper' });
    const notReady = await call('POST', `/interns/${stopped.body.id}/chat/completions`, {
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(notReady.status).toBe(409);
    expect(notReady.body.error.metadata).toEqual({ reason: 'intern_not_ready', retryable: true });
  }, 60_000);

  it('pauses for permission in manual mode; allow runs the tool, reject does not', async () => {
    const intern = await runningIntern('careful');
    const workdir = join(gw.services.config.interns.runtimeDir, intern.id);
    const script = (path: string) =>
      directive({
        steps: [
          { tool_calls: [{ name: 'write_file', arguments: { path, content: 'written by the intern' } }] },
          { text: 'finished' },
        ],
      });

    const paused = await chat(intern.id, {
      approval_mode: 'manual',
      messages: [{ role: 'user', content: script('allowed.txt') }],
    });
    expect(paused.status).toBe(200);
    expect(paused.finish).toBe('tool_calls');
    expect(paused.toolCall?.function.name).toBe(PROVIDE_INPUT_TOOL);
    const args = JSON.parse(paused.toolCall!.function.arguments);
    expect(args).toMatchObject({ kind: 'permission', operation: 'write_file' });
    expect(args.options).toContain('allow_once');
    expect(paused.final?.usage).toBeNull();
    const sessionId = paused.final!.session_id!;
    expect(findFile(workdir, 'allowed.txt')).toBe(false);

    const allowed = await chat(intern.id, {
      session_id: sessionId,
      messages: [
        { role: 'assistant', tool_calls: [{ id: paused.toolCall!.id, function: paused.toolCall!.function }] },
        { role: 'tool', tool_call_id: paused.toolCall!.id, content: 'allow_once' },
      ],
    });
    expect(allowed.finish).toBe('stop');
    expect(allowed.content).toContain('finished');
    expect(allowed.final?.session_id).toBe(sessionId);
    expect(findFile(workdir, 'allowed.txt')).toBe(true);

    // The same interaction answered twice.
    const again = await call('POST', `/interns/${intern.id}/chat/completions`, {
      stream: true,
      session_id: sessionId,
      messages: [{ role: 'tool', tool_call_id: paused.toolCall!.id, content: 'allow_once' }],
    });
    expect(again.status).toBe(409);
    expect(again.body.error.metadata.reason).toBe('interaction_not_pending');

    const paused2 = await chat(intern.id, {
      approval_mode: 'manual',
      messages: [{ role: 'user', content: script('refused.txt') }],
    });
    expect(paused2.finish).toBe('tool_calls');
    const rejected = await chat(intern.id, {
      session_id: paused2.final!.session_id,
      messages: [{ role: 'tool', tool_call_id: paused2.toolCall!.id, content: 'reject' }],
    });
    expect(rejected.finish).toBe('stop');
    expect(findFile(workdir, 'refused.txt')).toBe(false);
  }, 90_000);

  it('asks a question (elicitation) and carries on with the answer', async () => {
    const intern = await runningIntern('curious');
    const asked = await chat(intern.id, {
      messages: [
        {
          role: 'user',
          content: directive({
            steps: [
              { tool_calls: [{ name: 'ask_user', arguments: { message: 'Which city?' } }] },
              { text: 'noted' },
            ],
          }),
        },
      ],
    });
    expect(asked.finish).toBe('tool_calls');
    const args = JSON.parse(asked.toolCall!.function.arguments);
    expect(args).toMatchObject({ kind: 'elicitation', message: 'Which city?' });
    expect(Array.isArray(args.fields)).toBe(true);
    const answered = await chat(intern.id, {
      session_id: asked.final!.session_id,
      messages: [{ role: 'tool', tool_call_id: asked.toolCall!.id, content: 'Paris' }],
    });
    expect(answered.finish).toBe('stop');
    expect(answered.content).toContain('noted');
    expect(answered.final?.usage?.total_tokens).toBeGreaterThan(0);
  }, 60_000);

  it('steers a message into a running turn (202) and sends keepalives while the model is slow', async () => {
    const intern = await runningIntern('steerable');
    const sessionId = 'sess_steer_1';
    const running = chat(intern.id, {
      session_id: sessionId,
      messages: [{ role: 'user', content: directive({ delay_ms: 2000, text: 'slow answer' }) }],
    });
    await new Promise((r) => setTimeout(r, 700));
    const steered = await call('POST', `/interns/${intern.id}/chat/completions`, {
      stream: true,
      session_id: sessionId,
      messages: [{ role: 'user', content: 'also, be quick' }],
    });
    expect(steered.status).toBe(202);
    expect(steered.body).toEqual({ session_id: sessionId, status: 'steered' });
    const s = await running;
    expect(s.status).toBe(200);
    expect(s.text).toContain(': keepalive');
    expect(s.finish).toBe('stop');
  }, 60_000);

  it('ends a streaming run with run_ended (410) when the intern is suspended meanwhile', async () => {
    const intern = await runningIntern('suspended');
    const streaming = chat(intern.id, {
      messages: [{ role: 'user', content: directive({ delay_ms: 5000, text: 'never' }) }],
    });
    await new Promise((r) => setTimeout(r, 700));
    expect((await call('POST', `/interns/${intern.id}/suspend`)).status).toBe(200);
    const s = await streaming;
    expect(s.status).toBe(200);
    expect(s.finish).toBe('error');
    const errorChunk = s.chunks.find((c) => c.error);
    expect(errorChunk?.error).toMatchObject({
      code: 410,
      metadata: { reason: 'run_ended', retryable: false },
    });
    expect(s.final?.session_id).toMatch(/\S/);
    expect(s.done).toBe(true);
    expect(s.content).not.toContain('never');
  }, 60_000);

  it('keeps a paused session across a gateway restart', async () => {
    const intern = await runningIntern('durable');
    const paused = await chat(intern.id, {
      messages: [
        {
          role: 'user',
          content: directive({
            steps: [
              { tool_calls: [{ name: 'ask_user', arguments: { message: 'Proceed?' } }] },
              { text: 'resumed fine' },
            ],
          }),
        },
      ],
    });
    expect(paused.finish).toBe('tool_calls');
    gw = await gw.restart();
    api = client(gw.url, gw.apiKey);
    await waitFor('running after restart', async () => {
      const got = await call('GET', `/interns/${intern.id}`);
      return got.body.status === 'running' ? got.body : undefined;
    });
    const resumed = await chat(intern.id, {
      session_id: paused.final!.session_id,
      messages: [{ role: 'tool', tool_call_id: paused.toolCall!.id, content: 'yes' }],
    });
    expect(resumed.status).toBe(200);
    expect(resumed.finish).toBe('stop');
    expect(resumed.content).toContain('resumed fine');
  }, 90_000);

  it('sends a vault secret only to a host it is bound to; elsewhere the request is refused and the refusal shows in the chat', async () => {
    const intern = await runningIntern('courier');
    // The outside host is plain HTTP on a random port: the secret allows both.
    const put = await call('PUT', `/vault/interns/${intern.id}/secrets/api_token`, {
      value: SECRET,
      hosts: ['127.0.0.1'],
      allow_http: true,
      ports: [Number(new URL(outsideUrl).port)],
    });
    expect(put.status).toBe(200);
    const otherHost = outsideUrl.replace('127.0.0.1', 'localhost');
    const request = (url: string) =>
      directive({
        steps: [
          {
            tool_calls: [
              {
                name: 'http_request',
                arguments: {
                  method: 'GET',
                  url: `${url}/data`,
                  headers: { authorization: 'Bearer {{vault:api_token}}' },
                },
              },
            ],
          },
          { text: 'request done' },
        ],
      });

    const before = outsideSeen.length;
    const refused = await chat(intern.id, { messages: [{ role: 'user', content: request(otherHost) }] });
    expect(refused.finish).toBe('stop');
    expect(refused.reasoning).toMatch(/refused/i);
    expect(refused.reasoning).toContain('api_token');
    expect(outsideSeen.length).toBe(before);

    const sent = await chat(intern.id, { messages: [{ role: 'user', content: request(outsideUrl) }] });
    expect(sent.finish).toBe('stop');
    expect(outsideSeen.length).toBe(before + 1);
    expect(outsideSeen.at(-1)?.authorization).toBe(`Bearer ${SECRET}`);

    // An intern borrowing this vault may use its secrets; it cannot write them.
    const borrower = await runningIntern('borrower', { vault_id: intern.vault_id });
    const borrowed = await chat(borrower.id, { messages: [{ role: 'user', content: request(outsideUrl) }] });
    expect(borrowed.finish).toBe('stop');
    expect(outsideSeen.length).toBe(before + 2);
    expect(outsideSeen.at(-1)?.authorization).toBe(`Bearer ${SECRET}`);
    const own = await call('PUT', `/vault/interns/${borrower.id}/secrets/api_token`, {
      value: 'other-value',
      hosts: ['x.example'],
    });
    expect(own.status).toBe(200);
    const lenderSecrets = await call('GET', `/vault/interns/${intern.id}/secrets`);
    expect(lenderSecrets.body.data.map((x: { hosts: string[] }) => x.hosts)).toEqual([['127.0.0.1']]);

    // The secret is in no response, no log line and nothing the intern stored.
    for (const body of bodies) expect(body).not.toContain(SECRET);
    for (const line of logs) expect(line).not.toContain(SECRET);
    const workdir = join(gw.services.config.interns.runtimeDir, intern.id);
    for (const file of filesUnder(workdir)) expect(readFileSync(file, 'utf8')).not.toContain(SECRET);
    const stored = await gw.services.db.selectFrom('vault_secrets').select('value_sealed').execute();
    for (const row of stored) expect(row.value_sealed).not.toContain(SECRET);
  }, 90_000);

  it('bills and guards a chat as the calling key: a $0-limit or model-forbidden key gets no completion, through its own intern or an admin’s reach into another’s', async () => {
    const intern = await runningIntern('billed');
    const mgmt = client(gw.url, gw.managementKey);
    const admin = adminClient(gw.url);
    const keyOf = async (body: Record<string, unknown>) => {
      const res = await mgmt('POST', '/keys', { creator_user_id: gw.ownerUserId, ...body });
      expect(res.status, res.text).toBe(201);
      return { key: res.body.key as string, hash: res.body.data.hash as string };
    };
    const generationsOf = async (hash: string) => {
      await gw.services.accountant.flush();
      return gw.services.db
        .selectFrom('generations')
        .select(['id', 'model'])
        .where('key_hash', '=', hash)
        .execute();
    };
    const owner = await gw.services.db
      .selectFrom('interns')
      .select('owner_key_hash')
      .where('id', '=', intern.id)
      .executeTakeFirstOrThrow();
    const ownerBefore = (await generationsOf(owner.owner_key_hash)).length;
    const refusedRun = (s: Stream, status: number) => {
      expect(s.status).toBe(200);
      expect(s.finish).toBe('error');
      const failed = s.chunks.find((c) => c.error)?.error;
      expect(failed?.code).toBe(status);
      expect(failed?.metadata.reason).toBe('turn_failed');
      expect(s.content).toBe('');
    };

    // The owner's own $0-limit key: its limit holds through the intern.
    const broke = await keyOf({ name: 'broke', limit: 0 });
    refusedRun(
      await chat(intern.id, { messages: [{ role: 'user', content: 'spend' }] }, undefined, broke.key),
      403,
    );
    expect(await generationsOf(broke.hash)).toEqual([]);

    // A key whose guardrail does not allow the intern's model: refused, not run on the owner's terms.
    const narrow = await keyOf({ name: 'narrow' });
    const guardrail = await mgmt('POST', '/guardrails', { name: 'narrow', allowed_models: ['acme/other'] });
    expect(guardrail.status, guardrail.text).toBe(201);
    const assigned = await mgmt('POST', `/guardrails/${guardrail.body.data.id}/assignments/keys`, {
      key_hashes: [narrow.hash],
    });
    expect(assigned.status, assigned.text).toBe(200);
    refusedRun(
      await chat(intern.id, { messages: [{ role: 'user', content: 'forbidden' }] }, undefined, narrow.key),
      403,
    );
    expect(await generationsOf(narrow.hash)).toEqual([]);

    // An organization admin may act on another member's intern, but its $0 key still pays nothing.
    const adminUser = await admin('POST', '/admin/users', {
      email: `admin-${Date.now()}@example.com`,
      organization_id: gw.organizationId,
      role: 'admin',
      interns_programme: true,
    });
    // Only the operator attributes a key to another user; the owner then sets its $0 limit.
    const adminKey = await admin('POST', '/admin/keys', {
      name: 'admin-broke',
      user_id: adminUser.body.data.id,
    });
    expect(adminKey.status, adminKey.text).toBe(201);
    const capped = await mgmt('PATCH', `/keys/${adminKey.body.data.hash}`, { limit: 0 });
    expect(capped.status, capped.text).toBe(200);
    refusedRun(
      await chat(
        intern.id,
        { messages: [{ role: 'user', content: 'spend theirs' }] },
        undefined,
        adminKey.body.key,
      ),
      403,
    );
    // A plain member does not reach it at all.
    const memberUser = await admin('POST', '/admin/users', {
      email: `member-${Date.now()}@example.com`,
      organization_id: gw.organizationId,
      role: 'member',
      interns_programme: true,
    });
    const memberKey = await admin('POST', '/admin/keys', {
      name: 'member',
      user_id: memberUser.body.data.id,
    });
    const hidden = await chat(
      intern.id,
      { messages: [{ role: 'user', content: 'hi' }] },
      undefined,
      memberKey.body.key,
    );
    expect(hidden.status).toBe(404);
    expect((await generationsOf(owner.owner_key_hash)).length).toBe(ownerBefore);

    // A key that may pay is billed itself, not the key that created the intern.
    const payer = await keyOf({ name: 'payer' });
    const paid = await chat(
      intern.id,
      { messages: [{ role: 'user', content: 'on me' }] },
      undefined,
      payer.key,
    );
    expect(paid.finish).toBe('stop');
    expect(paid.content).toContain('on me');
    expect((await generationsOf(payer.hash)).length).toBeGreaterThan(0);
    expect((await generationsOf(owner.owner_key_hash)).length).toBe(ownerBefore);

    // Sessions are bound to the key that started them: another key cannot continue one.
    const sessionId = paid.final!.session_id!;
    const stolen = await chat(intern.id, {
      session_id: sessionId,
      messages: [{ role: 'user', content: 'what did they say?' }],
    });
    expect(stolen.status).toBe(404);
    expect(JSON.parse(stolen.text).error.metadata.reason).toBe('not_found');
    expect(stolen.text).not.toContain('on me');
    const again = await chat(
      intern.id,
      { session_id: sessionId, messages: [{ role: 'user', content: 'still me' }] },
      undefined,
      payer.key,
    );
    expect(again.finish).toBe('stop');
  }, 60_000);
});

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

function findFile(dir: string, name: string): boolean {
  return filesUnder(dir).some((p) => p.endsWith(`/${name}`));
}

describe('interns chat with GATEHOUSE_INTERNS_PAUSE_TOOL=openrouter.provide_input', () => {
  it('pauses with the name the official SDK accepts, and resumes through it', async () => {
    const gw = await startTestGateway('sqlite', {
      env: { GATEHOUSE_INTERNS_PAUSE_TOOL: 'openrouter.provide_input' },
    });
    try {
      const api = client(gw.url, gw.apiKey);
      await adminClient(gw.url)('POST', '/admin/credits', {
        organization_id: gw.organizationId,
        amount_usd: 5,
      });
      const created = await api('POST', '/interns', { name: 'sdk-pause', provision: true });
      const until = Date.now() + 30_000;
      while ((await api('GET', `/interns/${created.body.id}`)).body.status !== 'running') {
        if (Date.now() > until) throw new Error('intern not running');
        await new Promise((r) => setTimeout(r, 100));
      }
      const sdk = new OpenRouter({
        serverURL: `${gw.url}/api/v1`,
        apiKey: gw.apiKey,
        retryConfig: { strategy: 'none' },
      });
      const collect = async (request: Parameters<typeof sdk.interns.chat>[0]) => {
        const res = await sdk.interns.chat(request);
        const chunks: InternChatCompletionChunk[] = [];
        for await (const c of res.result as AsyncIterable<InternChatCompletionChunk>) chunks.push(c);
        return chunks;
      };
      const script = `gatehouse:${JSON.stringify({
        steps: [
          { tool_calls: [{ name: 'ask_user', arguments: { message: 'Colour?' } }] },
          { text: 'blue it is' },
        ],
      })}`;
      const paused = await collect({
        internId: created.body.id,
        internChatCompletionRequest: { stream: true, messages: [{ role: 'user', content: script }] },
      });
      const call = paused.flatMap((c) => c.choices.flatMap((ch) => ch.delta.toolCalls ?? []))[0];
      expect(call?.function.name).toBe('openrouter.provide_input');
      const sessionId = paused.at(-1)?.sessionId;
      expect(sessionId).toBeTruthy();
      const resumed = await collect({
        internId: created.body.id,
        internChatCompletionRequest: {
          stream: true,
          sessionId: sessionId ?? undefined,
          messages: [{ role: 'tool', toolCallId: call!.id, content: 'blue' }],
        },
      });
      expect(resumed.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? '')).join('')).toContain(
        'blue it is',
      );
    } finally {
      await gw.stop();
    }
  }, 60_000);
});
