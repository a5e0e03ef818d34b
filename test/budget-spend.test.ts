import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client } from './support/http.js';

/** A workspace budget says what the workspace spent in its current window (spent_usd). */
describe.each(databases)('workspace budget spend (%s)', (db) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(db);
  });
  afterAll(() => gw?.stop());

  it('counts the workspace’s spend in the window, BYOK only when the workspace says so', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const ws = (await mgmt('POST', '/workspaces', { name: 'Spend', slug: 'spend' })).body.data;
    const other = (await mgmt('POST', '/workspaces', { name: 'Other', slug: 'other' })).body.data;
    const spend = (workspace: string, cost: number, byok: 0 | 1, at = new Date()) =>
      gw.services.db
        .insertInto('usage_events')
        .values({
          id: newId(),
          organization_id: gw.organizationId,
          workspace_id: workspace,
          key_hash: null,
          user_id: null,
          model: 'm',
          provider: 'p',
          cost_usd: cost,
          is_byok: byok,
          created_at: at.toISOString(),
        })
        .execute();
    await spend(ws.id, 0.75, 0);
    await spend(ws.id, 2, 1); // BYOK
    await spend(ws.id, 10, 0, new Date(Date.now() - 400 * 86_400_000)); // over a year ago
    await spend(other.id, 5, 0); // another workspace

    expect(
      (await mgmt('PUT', `/workspaces/${ws.id}/budgets/lifetime`, { limit_usd: 100 })).body.data,
    ).toMatchObject({
      reset_interval: null,
      spent_usd: 10.75,
    });
    await mgmt('PUT', `/workspaces/${ws.id}/budgets/monthly`, { limit_usd: 50 });
    const listed = (await mgmt('GET', `/workspaces/${ws.slug}/budgets`)).body;
    expect(
      listed.data.map((b: { reset_interval: string | null; spent_usd: number }) => [
        b.reset_interval,
        b.spent_usd,
      ]),
    ).toEqual([
      ['monthly', 0.75],
      [null, 10.75],
    ]);
    // With BYOK counted, the BYOK call adds up.
    const withByok = await mgmt('PUT', `/workspaces/${ws.id}/budgets/monthly`, {
      limit_usd: 50,
      include_byok_in_budgets: true,
    });
    expect(withByok.body).toMatchObject({ include_byok_in_budgets: true, data: { spent_usd: 2.75 } });
    expect((await mgmt('GET', `/workspaces/${ws.id}/budgets/monthly`)).body.data.spent_usd).toBe(2.75);
  });
});
