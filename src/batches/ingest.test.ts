import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchConfig } from '../config.js';
import { type DbHandle, openDatabase } from '../db/connection.js';
import { migrateToLatest } from '../db/migrate.js';
import { ApiError } from '../lib/errors.js';
import { type Catalog, loadCatalog } from '../routing/catalog.js';
import { Ingestion, MAX_BATCH_MODELS, newBatchId } from './ingest.js';
import { createBatch } from './store.js';

/** The ingestion's model rules: one model or several, a top-level `model`, the per-model tallies. */
describe('batch ingestion: models', () => {
  let dir: string;
  let handle: DbHandle;
  let catalog: Catalog;
  const config = { maxBytes: 10 * 1024 * 1024, maxItemBytes: 1024 * 1024 } as BatchConfig;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-ingest-'));
    handle = openDatabase(join(dir, 'db.sqlite'));
    await migrateToLatest(handle);
    // The development models, and MAX_BATCH_MODELS + 1 more on the development provider.
    const models = Array.from(
      { length: MAX_BATCH_MODELS + 1 },
      (_, i) => `  - { id: extra/m${i}, endpoints: [{ provider: gatehouse, upstream_model: echo }] }`,
    );
    const file = join(dir, 'gatehouse.yaml');
    writeFileSync(file, `models:\n${models.join('\n')}\n`);
    catalog = loadCatalog({ GATEHOUSE_CONFIG: file });
  });
  afterAll(async () => {
    await handle.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const item = (customId: string, model: string, extra: object = {}) => ({
    custom_id: customId,
    body: { model, messages: [{ role: 'user', content: 'hi' }], ...extra },
  });

  async function ingest(body: string | object) {
    const id = newBatchId();
    const now = Math.floor(Date.now() / 1000);
    await createBatch(handle.db, {
      id,
      organization_id: 'o',
      workspace_id: 'w',
      key_hash: 'k',
      user_id: null,
      endpoint: '',
      completion_window: '24h',
      status: 'validating',
      created_at: now,
      expires_at: now + 86400,
      updated_at_ms: Date.now(),
    });
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    return new Ingestion(handle.db, catalog, config, id, handle.sqlite).read(
      (async function* () {
        yield Buffer.from(text);
      })(),
    );
  }

  async function refusal(body: string | object): Promise<string> {
    try {
      await ingest(body);
    } catch (err) {
      if (err instanceof ApiError && err.status === 400) return err.message;
      throw err;
    }
    throw new Error('not refused');
  }

  const batch = (requests: object[], extra: object = {}) => ({
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
    requests,
    ...extra,
  });

  it('keeps the model of a one-model batch, by its canonical id', async () => {
    const r = await ingest(batch([item('a', 'echo'), item('b', 'gatehouse/echo', { max_tokens: 7 })]));
    expect(r.model).toBe('gatehouse/echo');
    expect(r.models).toEqual([
      expect.objectContaining({ model: 'gatehouse/echo', index: 0, customId: 'a', count: 2 }),
    ]);
    expect(r.models[0]).toMatchObject({ completionTokens: 7, completionTokensUnset: 1 });
  });

  it('takes requests for several models: no batch model, a tally per model in order of first use', async () => {
    const r = await ingest(
      batch([
        item('a', 'gatehouse/scripted', { max_tokens: 10 }),
        item('b', 'echo', { max_tokens: 20 }),
        item('c', 'gatehouse/scripted'),
        item('d', 'extra/m0', { max_tokens: 5 }),
      ]),
    );
    expect(r.model).toBeNull();
    expect(r.count).toBe(4);
    expect(r.models.map((m) => [m.model, m.index, m.customId, m.count])).toEqual([
      ['gatehouse/scripted', 0, 'a', 2],
      ['gatehouse/echo', 1, 'b', 1],
      ['extra/m0', 3, 'd', 1],
    ]);
    expect(r.models.map((m) => [m.completionTokens, m.completionTokensUnset])).toEqual([
      [10, 1],
      [20, 0],
      [5, 0],
    ]);
    // The prompt estimate of each model is its own requests' (4 characters a token).
    const [scripted, echo] = r.models;
    expect(echo?.promptTokens).toBe(
      Math.ceil(JSON.stringify(item('b', 'echo', { max_tokens: 20 })).length / 4),
    );
    expect(scripted?.promptTokens).toBeGreaterThan(echo?.promptTokens as number);
  });

  it('tallies requests read before `endpoint` the same way', async () => {
    const r = await ingest(
      `{"requests":[${JSON.stringify(item('a', 'echo'))},${JSON.stringify(item('b', 'gatehouse/scripted'))}],"endpoint":"/v1/chat/completions","completion_window":"24h"}`,
    );
    expect(r.model).toBeNull();
    expect(r.models.map((m) => m.model)).toEqual(['gatehouse/echo', 'gatehouse/scripted']);
  });

  it('a top-level model still forces one model, before or after the requests', async () => {
    expect(
      await refusal(batch([item('a', 'echo'), item('b', 'gatehouse/scripted')], { model: 'gatehouse/echo' })),
    ).toMatch(/^requests\[1\] \(custom_id "b"\)\.body\.model: must be the batch's model gatehouse\/echo/);
    expect(
      await refusal(
        `{"endpoint":"/v1/chat/completions","completion_window":"24h","requests":[${JSON.stringify(item('a', 'echo'))},${JSON.stringify(item('b', 'gatehouse/scripted'))}],"model":"echo"}`,
      ),
    ).toMatch(/^requests\[1\] \(custom_id "b"\)\.body\.model: must be the batch's model echo/);
    const one = await ingest(batch([item('a', 'echo')], { model: 'gatehouse/echo' }));
    expect(one.model).toBe('gatehouse/echo');
  });

  it(`refuses a ${MAX_BATCH_MODELS + 1}th model, naming its request; repeats of known models are fine`, async () => {
    const requests = Array.from({ length: MAX_BATCH_MODELS }, (_, i) => item(`r-${i}`, `extra/m${i}`));
    const full = await ingest(batch([...requests, item('again', 'extra/m3')]));
    expect(full.models).toHaveLength(MAX_BATCH_MODELS);
    expect(full.model).toBeNull();
    expect(await refusal(batch([...requests, item('one-more', 'gatehouse/echo')]))).toMatch(
      new RegExp(
        `^requests\\[${MAX_BATCH_MODELS}\\] \\(custom_id "one-more"\\)\\.body\\.model: a batch may use at most ${MAX_BATCH_MODELS} different models`,
      ),
    );
  });

  it('still refuses an unknown model and a model of the wrong kind, by request', async () => {
    expect(await refusal(batch([item('a', 'echo'), item('b', 'nobody/none')]))).toMatch(
      /^requests\[1\] \(custom_id "b"\)\.body\.model: model nobody\/none not found/,
    );
    expect(await refusal(batch([item('a', 'echo'), item('b', 'gatehouse/embed')]))).toMatch(
      /^requests\[1\] \(custom_id "b"\)\.body\.model: gatehouse\/embed is not a chat model/,
    );
  });
});
