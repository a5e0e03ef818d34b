import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DbHandle, openDatabase } from '../db/connection.js';
import { migrateToLatest } from '../db/migrate.js';
import { inputOf, laneOutput } from './capture.js';
import { type Capture, ContentLog } from './service.js';

const quiet = { warn: () => {}, error: () => {} };

describe('ContentLog', () => {
  let handle: DbHandle;
  beforeAll(async () => {
    handle = openDatabase('sqlite::memory:');
    await migrateToLatest(handle);
    const now = new Date().toISOString();
    await handle.db.insertInto('organizations').values({ id: 'org', name: 'Org', created_at: now }).execute();
    for (const [id, on] of [
      ['ws-on', 1],
      ['ws-off', 0],
    ] as const)
      await handle.db
        .insertInto('workspaces')
        .values({
          id,
          organization_id: 'org',
          name: id,
          slug: id,
          description: null,
          is_default: 0,
          default_text_model: null,
          default_image_model: null,
          default_provider_sort: null,
          disabled_server_tools: null,
          io_logging_api_key_ids: null,
          io_logging_sampling_rate: 1,
          is_data_discount_logging_enabled: 0,
          is_observability_broadcast_enabled: 0,
          is_observability_io_logging_enabled: 0,
          include_byok_in_budgets: 0,
          content_logging: on,
          content_retention_days: 2,
          created_by: null,
          created_at: now,
          updated_at: null,
        })
        .execute();
  });
  afterAll(() => handle?.close());

  const capture = (generationId: string, workspaceId = 'ws-on'): Capture => ({
    generationId,
    organizationId: 'org',
    workspaceId,
    input: () => ({ prompt: 'hi' }),
    output: { completion: 'hello', reasoning: null, tool_calls: null },
    error: null,
  });

  it('drops content past its queue bound and counts it; the rest is written', async () => {
    const metrics = new Registry();
    // No timer flush during the test: the queue fills.
    const log = new ContentLog({ db: handle.db, log: quiet, metrics, maxQueue: 2, intervalMs: 60_000 });
    await Promise.all([
      ...[0, 1, 2, 3, 4].map((i) => log.offer(capture(`gen-full-${i}`))),
      log.offer(capture('gen-off', 'ws-off')),
    ]);
    const dropped = await metrics.getSingleMetric('gatehouse_content_log_dropped_total')?.get();
    expect(dropped?.values).toEqual([
      expect.objectContaining({ labels: { reason: 'queue_full' }, value: 3 }),
    ]);
    await log.flush();
    const rows = await handle.db.selectFrom('generation_contents').select('generation_id').execute();
    expect(rows.map((r) => r.generation_id).sort()).toEqual(['gen-full-0', 'gen-full-1']);
    const row = await log.get({ organizationId: 'org', workspaceId: 'ws-on' }, 'gen-full-0');
    expect(row).toEqual({
      input: { prompt: 'hi' },
      output: { completion: 'hello', reasoning: null, tool_calls: null },
      error: null,
    });
    expect(await log.get({ organizationId: 'other', workspaceId: null }, 'gen-full-0')).toBeNull();
    expect(await log.get({ organizationId: 'org', workspaceId: 'ws-off' }, 'gen-full-0')).toBeNull();
    await log.close();
  });

  it('keeps content for the workspace retention, then purges it', async () => {
    const day = 86_400_000;
    let now = Date.now();
    const log = new ContentLog({ db: handle.db, log: quiet, metrics: new Registry(), now: () => now });
    await log.offer(capture('gen-ttl'));
    await log.flush();
    const scope = { organizationId: 'org', workspaceId: null };
    now += day;
    expect(await log.get(scope, 'gen-ttl')).not.toBeNull();
    now += 1.5 * day;
    expect(await log.get(scope, 'gen-ttl')).toBeNull();
    expect(await log.purgeExpired()).toBeGreaterThanOrEqual(1);
    const left = await handle.db
      .selectFrom('generation_contents')
      .select('generation_id')
      .where('generation_id', '=', 'gen-ttl')
      .execute();
    expect(left).toEqual([]);
    await log.close();
  });
});

describe('what is kept of a call', () => {
  it("keeps the input in the caller's format, without large inline files", () => {
    expect(inputOf('responses', { input: 'just this' })).toEqual({ prompt: 'just this' });
    expect(inputOf('responses', { input: 'q', instructions: 'be brief' })).toEqual({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'q' },
      ],
    });
    const image = `data:image/png;base64,${'A'.repeat(5000)}`;
    const kept = inputOf('chat', {
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: image } }] }],
      provider: { order: ['openai'] },
    });
    expect(JSON.stringify(kept)).not.toContain('AAAA');
    expect(JSON.stringify(kept)).toContain('data:image/png;base64,[');
    expect(JSON.stringify(kept)).not.toContain('provider');
  });

  it('reads a passed-through answer in its own format', () => {
    expect(
      laneOutput('anthropic-messages', {
        content: [
          { type: 'thinking', thinking: 'hmm' },
          { type: 'text', text: 'yes' },
          { type: 'tool_use', id: 'tu_1', name: 'f', input: { a: 1 } },
        ],
      }),
    ).toEqual({
      completion: 'yes',
      reasoning: 'hmm',
      tool_calls: [{ id: 'tu_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
    });
    expect(
      laneOutput('openai-responses', {
        output: [
          { type: 'reasoning', summary: [{ type: 'summary_text', text: 'why' }] },
          { type: 'message', content: [{ type: 'output_text', text: 'because' }] },
        ],
      }),
    ).toEqual({ completion: 'because', reasoning: 'why', tool_calls: null });
  });
});
