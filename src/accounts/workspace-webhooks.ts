import { randomBytes } from 'node:crypto';
import type { Db } from '../db/connection.js';
import { decrypt, encrypt } from '../lib/crypto.js';
import { notFound } from '../lib/errors.js';
import { nowIso } from '../lib/time.js';
import type { Caller } from './caller.js';
import type { WorkspacesService } from './workspaces.service.js';
import * as store from './workspaces.store.js';

/** Binds a sealed secret to its workspace, so a ciphertext cannot be moved to another row. */
const aad = (workspaceId: string) => `webhook-secret:${workspaceId}`;

/**
 * A workspace's webhook signing secret (OpenRouter's workspace setting for video callbacks): made
 * or replaced on request and shown that once, kept sealed under the master key like BYOK keys, and
 * unsealed only for the media service signing an event (never over HTTP).
 */
export class WorkspaceWebhooks {
  constructor(
    private readonly db: Db,
    /** Null in a media process that was not given the gateway's master key: signing secrets cannot be read. */
    private readonly masterKey: Buffer | null,
    private readonly workspaces: Pick<WorkspacesService, 'get'>,
  ) {}

  /** Makes the workspace a new signing secret (replacing any), returned this once. */
  async rotate(caller: Pick<Caller, 'organizationId'>, ref: string) {
    const ws = await this.workspaces.get(caller, ref);
    const secret = `whsec_${randomBytes(24).toString('base64url')}`;
    await store.updateWorkspace(this.db, ws.id, {
      webhook_secret_ciphertext: encrypt(this.sealingKey(), secret, aad(ws.id)),
      updated_at: nowIso(),
    });
    return { workspace_id: ws.id, signing_secret: secret };
  }

  /** Removes the workspace's signing secret (events go unsigned); 404 when it has none. */
  async remove(caller: Pick<Caller, 'organizationId'>, ref: string): Promise<void> {
    const ws = await this.workspaces.get(caller, ref);
    if (ws.webhook_secret_ciphertext === null) throw notFound('Webhook signing secret');
    await store.updateWorkspace(this.db, ws.id, { webhook_secret_ciphertext: null, updated_at: nowIso() });
  }

  /** Where the workspace's video jobs without a `callback_url` send their end, or null. */
  async callbackUrl(workspaceId: string): Promise<string | null> {
    return (await store.findWorkspaceById(this.db, workspaceId))?.video_callback_url ?? null;
  }

  /** The secret the workspace's video job events are signed with; null when it has none (unsigned). */
  async signingSecret(workspaceId: string): Promise<string | null> {
    const sealed = (await store.findWorkspaceById(this.db, workspaceId))?.webhook_secret_ciphertext ?? null;
    return sealed === null ? null : decrypt(this.sealingKey(), sealed, aad(workspaceId));
  }

  private sealingKey(): Buffer {
    if (this.masterKey) return this.masterKey;
    throw new Error(
      "the workspace signs its webhooks, but this process was not given the gateway's master key (GATEHOUSE_MASTER_KEY)",
    );
  }
}
