import { createHash } from 'node:crypto';
import type { Caller } from '../accounts/caller.js';
import type { InternsConfig } from '../config.js';
import type { Db } from '../db/connection.js';
import { codedError } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import type { VaultService } from '../vault/service.js';
import type { InternAccess } from './access.js';
import { assertRuntimeRoom } from './capacity.js';
import { InternErrorCode } from './model.js';
import type { Provisioner } from './provisioner.js';
import type { ProvisioningLoops } from './provisioning.js';
import type { CreateInternBody } from './schemas.js';
import * as store from './store.js';

/**
 * POST /interns, idempotent (seed "Create an intern"). A create is an operation keyed by
 * (workspace + creator, Idempotency-Key or a key derived from the body) whose steps are:
 *   1. insert the intern (`stopped`, or `queued` with provision: true) and the operation row, in
 *      one transaction;
 *   2. create the intern's private vault and store its id;
 *   3. with provision: true, start the provisioning loop (background);
 *   4. mark the operation done.
 * A retry of an unfinished operation (same key and body) runs steps 2–4 again (each is
 * idempotent) and answers 201; a retry of a finished one answers 200 with the intern as it is now.
 */

export interface CreateDeps {
  db: Db;
  config: InternsConfig;
  vault: VaultService;
  loops: ProvisioningLoops;
  access: InternAccess;
  provisioner: Pick<Provisioner, 'runtimeCount'>;
  log: () => { error(obj: object, msg: string): void };
  /** Finishing steps under way on this node, by intern id (concurrent retries share one). */
  inflight: Map<string, Promise<store.InternRow>>;
}

export interface CreateResult {
  status: 200 | 201;
  row: store.InternRow;
}

/** JSON with object keys sorted at every level: equal bodies hash equal whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Thrown when the request's deadline passed: the route has already answered 408. */
export class DeadlineExceeded extends Error {}

const checkDeadline = (signal: AbortSignal) => {
  if (signal.aborted) throw new DeadlineExceeded('route deadline exceeded');
};

export async function createIntern(
  deps: CreateDeps,
  caller: Caller,
  body: CreateInternBody,
  idempotencyKey: string | undefined,
  signal: AbortSignal,
): Promise<CreateResult> {
  const { db, config } = deps;
  if (
    body.workspace_id !== undefined &&
    body.workspace_id.toLowerCase() !== caller.workspaceId.toLowerCase()
  ) {
    throw codedError(
      400,
      InternErrorCode.invalidBody,
      "workspace_id must be the API key's workspace (interns are created in the key's workspace)",
    );
  }
  const userId = caller.userId;
  if (userId === null) {
    throw codedError(
      403,
      InternErrorCode.noActingUser,
      'This key acts as the organization and has no member to own the intern; use a key created by a member',
    );
  }
  if (idempotencyKey !== undefined && (idempotencyKey.length < 1 || idempotencyKey.length > 255)) {
    throw codedError(400, InternErrorCode.invalidBody, 'Idempotency-Key must be 1 to 255 characters');
  }
  const bodyHash = sha256(canonicalJson(body));
  const scope = `${caller.workspaceId}:${userId}`;
  const key = idempotencyKey ?? `derived:${bodyHash}`;

  for (let attempt = 0; attempt < 3; attempt++) {
    checkDeadline(signal);
    const op = await store.findCreateOp(db, scope, key);
    if (op) {
      if (op.body_hash !== bodyHash) {
        throw codedError(
          409,
          InternErrorCode.idempotencyKeyReused,
          'This Idempotency-Key was used with a different request body',
        );
      }
      const row = await store.findIntern(db, op.intern_id);
      if (!row) {
        // The intern is gone (its ops go with it; a leftover op is stale): create afresh.
        await store.deleteOp(db, scope, key);
        continue;
      }
      if (op.done === 1) return { status: 200, row };
      return { status: 201, row: await finish(deps, row, body, scope, key, signal) };
    }

    if (await store.nameTaken(db, caller.workspaceId, userId, body.name)) {
      // Taken by a concurrent create with this very key (it committed after our lookup): replay it.
      if (await store.findCreateOp(db, scope, key)) continue;
      throw nameTakenError(body.name);
    }
    if ((await store.countOwned(db, userId)) >= config.perMemberLimit) {
      throw codedError(
        409,
        InternErrorCode.internLimitReached,
        `You already own ${config.perMemberLimit} interns (all workspaces together), the most allowed; delete one first`,
      );
    }
    if (body.provision) await assertRuntimeRoom(deps, caller.organizationId);
    const attached = body.vault_id ? await attachableVault(deps, caller, body.vault_id) : null;
    checkDeadline(signal);

    const now = store.stamp();
    const intern: store.NewIntern = {
      id: newId(),
      organization_id: caller.organizationId,
      workspace_id: caller.workspaceId,
      creator_user_id: userId,
      owner_key_hash: caller.keyHash,
      name: body.name,
      description: body.description ?? null,
      instructions: body.instructions ?? null,
      model: null,
      status: body.provision ? 'queued' : 'stopped',
      last_failure_message: null,
      progress_step: null,
      progress_total: null,
      progress_label: null,
      hostname: null,
      vault_id: null,
      attached_vault_id: attached,
      provisioned_model: null,
      created_at: now,
      updated_at: now,
    };
    const inserted = await store.insertInternWithOp(db, intern, {
      scope,
      idempotency_key: key,
      body_hash: bodyHash,
      intern_id: intern.id,
      created_at: now,
    });
    if (inserted === 'name_taken') {
      if (await store.findCreateOp(db, scope, key)) continue; // as above: our key's create won the name
      throw nameTakenError(body.name);
    }
    if (inserted === 'op_exists') continue; // a concurrent create with this key won: replay it
    return {
      status: 201,
      row: await finish(deps, { ...intern, archive_failed: 0 }, body, scope, key, signal),
    };
  }
  throw new Error('create operation kept changing under this request');
}

export const nameTakenError = (name: string) =>
  codedError(409, InternErrorCode.nameTaken, `You already have an intern named ${name} in this workspace`);

/**
 * The vault `vault_id` names, when it is the private vault of a live intern of this workspace that
 * the caller may act on (borrowing a vault lends its secrets: only their owner may do that).
 */
async function attachableVault(deps: CreateDeps, caller: Caller, vaultId: string): Promise<string> {
  const { workspaceId } = caller;
  const refuse = (why: string) =>
    codedError(409, InternErrorCode.vaultNotAttachable, `vault_id ${vaultId} cannot be attached: ${why}`);
  const ownerId = await deps.vault.ownerOfVault(workspaceId, vaultId);
  if (!ownerId) throw refuse('it is not the private vault of an intern of this workspace');
  const owner = await store.findInternIn(deps.db, workspaceId, ownerId);
  if (!owner || !(await deps.access.mayAct(caller, owner)))
    throw refuse('it is not the private vault of an intern of this workspace');
  if (owner.status === 'destroying' || owner.status === 'destroy_failed') {
    throw refuse('its intern is being deleted');
  }
  return vaultId;
}

/**
 * Steps 2–4 of a create (see the top of this file), from wherever a previous attempt stopped.
 * Concurrent retries on this node wait for the one under way instead of repeating its steps.
 */
async function finish(
  deps: CreateDeps,
  row: store.InternRow,
  body: CreateInternBody,
  scope: string,
  key: string,
  signal: AbortSignal,
): Promise<store.InternRow> {
  for (;;) {
    const running = deps.inflight.get(row.id);
    if (!running) break;
    await running.catch(() => {});
    checkDeadline(signal);
    const op = await store.findCreateOp(deps.db, scope, key);
    const now = await store.findIntern(deps.db, row.id);
    if (now && op?.done === 1) return now;
    if (now) row = now;
  }
  const work = finishSteps(deps, row, body, scope, key, signal);
  deps.inflight.set(row.id, work);
  try {
    return await work;
  } finally {
    if (deps.inflight.get(row.id) === work) deps.inflight.delete(row.id);
  }
}

async function finishSteps(
  deps: CreateDeps,
  row: store.InternRow,
  body: CreateInternBody,
  scope: string,
  key: string,
  signal: AbortSignal,
): Promise<store.InternRow> {
  const { db } = deps;
  checkDeadline(signal);
  let current = row;
  if (current.vault_id === null) {
    let vaultId: string;
    try {
      vaultId = await deps.vault.createInternVault(current.workspace_id, current.id);
    } catch (err) {
      deps.log().error({ err, internId: current.id }, 'creating the intern vault failed');
      throw upstream('the intern vault could not be created');
    }
    checkDeadline(signal);
    await store.updateIntern(db, current.id, { vault_id: vaultId, updated_at: store.stamp() });
    current = { ...current, vault_id: vaultId };
  }
  if (body.provision && current.status === 'queued') {
    try {
      deps.loops.start(current.id);
    } catch (err) {
      deps.log().error({ err, internId: current.id }, 'starting the provisioning failed');
      throw upstream('provisioning could not be started');
    }
  }
  checkDeadline(signal);
  await store.markOpDone(db, scope, key);
  return (await store.findIntern(db, current.id)) ?? current;
}

const upstream = (what: string) =>
  codedError(
    502,
    InternErrorCode.upstreamUnavailable,
    `The intern was created but ${what}; retry the same request to finish it`,
  );
