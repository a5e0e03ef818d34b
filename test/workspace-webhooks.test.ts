/**
 * A workspace's webhook signing secret at rest, on both databases: sealed under the master key and
 * bound to its workspace (a ciphertext moved to another row does not open), read back only by a
 * process that has the master key — the media service alone without it says so rather than signing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkspaceWebhooks } from '../src/accounts/workspace-webhooks.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client } from './support/http.js';

describe.each(databases)('workspace webhook signing secrets (%s)', (db) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(db);
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('are sealed, bound to their workspace, and read only with the master key', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const a = (await mgmt('POST', '/workspaces', { name: 'A', slug: 'hooks-a' })).body.data.id as string;
    const b = (await mgmt('POST', '/workspaces', { name: 'B', slug: 'hooks-b' })).body.data.id as string;
    await mgmt('PATCH', `/workspaces/${b}`, { video_callback_url: 'https://hooks.example.com/b' });
    const made = await mgmt('POST', '/workspaces/hooks-a/webhook-secret');
    expect(made.status).toBe(201);
    expect(made.body.data.workspace_id).toBe(a);
    const secret = made.body.data.signing_secret as string;

    const row = async (id: string) =>
      gw.services.db.selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const sealed = (await row(a)).webhook_secret_ciphertext;
    expect(sealed).toMatch(/^v1\./);
    expect(sealed).not.toContain(secret.slice(6));
    const hooks = gw.services.workspaceWebhooks;
    expect(await hooks.signingSecret(a)).toBe(secret);
    expect(await hooks.signingSecret(b)).toBeNull();
    expect(await hooks.callbackUrl(b)).toBe('https://hooks.example.com/b');

    // Moved to another workspace's row, the ciphertext does not open.
    await gw.services.db
      .updateTable('workspaces')
      .set({ webhook_secret_ciphertext: sealed })
      .where('id', '=', b)
      .execute();
    await expect(hooks.signingSecret(b)).rejects.toThrow();

    // Without the master key: settings read, secrets refused with the reason.
    const keyless = new WorkspaceWebhooks(gw.services.db, null, gw.services.workspaces);
    expect(await keyless.callbackUrl(b)).toBe('https://hooks.example.com/b');
    await expect(keyless.signingSecret(a)).rejects.toThrow(/master key/);

    // Deleting the workspace takes its secret with it.
    await mgmt('DELETE', '/workspaces/hooks-a');
    expect(await hooks.signingSecret(a)).toBeNull();
  });
});
