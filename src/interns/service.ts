/**
 * Interns: the lifecycle behind /interns (routes.ts → this service → store.ts).
 *
 * - create (create.ts): an idempotent operation — intern row + operation row in one transaction,
 *   then the private vault, then (provision: true) the provisioning loop; a retry resumes it.
 * - provision: stopped/failed → queued, then a background loop (provisioning.ts) moves it to
 *   provisioning, resolves the model (intern.model ?? workspace default ?? configured default) and
 *   the hostname, runs the provisioner's steps with `progress` written before each, and settles
 *   running (or failed with the step's message). A runtime that exits unasked → failed.
 * - suspend: cancels the loop, stops the runtime → stopped.
 * - delete: → destroying, then in the background the provisioner destroys the runtime (archiving
 *   its directory unless the loss was acknowledged), the vault goes, borrowers are detached and the
 *   row is removed; an archive failure leaves destroy_failed with last_failure_message
 *   `workspace_archive_failed: …` (deletable only with acknowledge_workspace_loss: true).
 * - start (boot): running interns are provisioned again, queued/provisioning ones resume from
 *   their first step, destroying ones finish their destroy. close: loops abort, runtimes stop.
 * Transitions follow TRANSITIONS (model.ts); anything else is 409 invalid_transition. Every write
 * bumps updated_at; background writes are conditional on the status they expect.
 */
import type { Caller } from '../accounts/caller.js';
import type { KeysService } from '../accounts/keys.service.js';
import type { WorkspacesService } from '../accounts/workspaces.service.js';
import type { InternsConfig } from '../config.js';
import type { Db } from '../db/connection.js';
import type { InternStatus } from '../db/schema.js';
import { codedError } from '../lib/errors.js';
import { settledWithin } from '../lib/time.js';
import type { VaultService } from '../vault/service.js';
import type { InternAccess } from './access.js';
import { assertRuntimeRoom } from './capacity.js';
import { type CreateResult, createIntern, nameTakenError } from './create.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { INTERN_STATUSES, InternErrorCode, type InternView, nextStatus, TRANSITIONS } from './model.js';
import { ProvisionError, type Provisioner } from './provisioner.js';
import { ProvisioningLoops } from './provisioning.js';
import { type RunGrant, RunGrants } from './run-grants.js';
import type { CreateInternBody, ListInternsQuery, UpdateInternBody } from './schemas.js';
import * as store from './store.js';
import { internView } from './view.js';

export type InternRow = store.InternRow;

export interface InternsLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** How long shutdown waits for destroys under way, ms. */
const CLOSE_DESTROY_WAIT_MS = 5_000;

/** The message of a destroy that failed with something other than a ProvisionError. */
const DESTROY_FAILURE = 'Deleting the intern failed because of an internal error';

const notFound = () => codedError(404, InternErrorCode.notFound, 'Intern not found');
const invalidTransition = (row: InternRow, action: string) =>
  codedError(
    409,
    InternErrorCode.invalidTransition,
    `Cannot ${action} an intern whose status is ${row.status}`,
  );
const invalid = (message: string) => codedError(400, InternErrorCode.invalidBody, message);

/** Interns: create (idempotent), lifecycle transitions, provisioning and the boot-time reconcile. */
export class InternsService {
  private readonly log: InternsLog;
  private readonly loops: ProvisioningLoops;
  private readonly destroys = new Map<string, Promise<void>>();
  private readonly createsInFlight = new Map<string, Promise<InternRow>>();
  /** Run grants of the chats streaming on this node (run-grants.ts). */
  readonly grants = new RunGrants();

  constructor(
    readonly deps: {
      db: Db;
      config: InternsConfig;
      vault: VaultService;
      provisioner: Provisioner;
      keys: KeysService;
      workspaces: WorkspacesService;
      access: InternAccess;
      log: InternsLog;
    },
  ) {
    this.log = deps.log;
    this.loops = new ProvisioningLoops({
      db: deps.db,
      config: deps.config,
      provisioner: deps.provisioner,
      workspaceModel: async (organizationId, workspaceId) =>
        (await deps.workspaces.get({ organizationId }, workspaceId)).default_text_model ?? null,
      log: () => this.log,
    });
    deps.provisioner.onExit((internId, message) => {
      this.runtimeExited(internId, message).catch((err) =>
        this.log.error({ err, internId }, 'recording a runtime exit failed'),
      );
    });
  }

  /**
   * The intern `id` if the caller's workspace holds it and the caller may read it (access.ts);
   * throws 404 `not_found` otherwise, so another member's intern looks like no intern at all.
   */
  async visible(caller: Caller, id: string): Promise<InternRow> {
    const row = await store.findInternIn(this.deps.db, caller.workspaceId, id);
    if (!row || !(await this.deps.access.mayRead(caller, row))) throw notFound();
    return row;
  }

  /**
   * The intern `id` if the caller may act on it (chat, update, provision, suspend, delete, vault
   * writes): 403 `no_acting_user` for a key without a user, 404 `not_found` for anyone but its
   * owner and the workspace's administrators.
   */
  async actable(caller: Caller, id: string): Promise<InternRow> {
    this.deps.access.requireUser(caller);
    const row = await store.findInternIn(this.deps.db, caller.workspaceId, id);
    if (!row || !(await this.deps.access.mayAct(caller, row))) throw notFound();
    return row;
  }

  /** The caller a run grant bills (the key of the chat request that issued it), or null when that key is disabled. */
  async grantCaller(grant: RunGrant): Promise<Caller | null> {
    return this.deps.keys.callerOf(grant.keyHash);
  }

  view(row: InternRow): InternView {
    return internView(row);
  }

  /** POST /interns (create.ts). `signal` is the route deadline: work stops when it aborts. */
  async create(
    caller: Caller,
    body: CreateInternBody,
    idempotencyKey: string | undefined,
    signal: AbortSignal,
  ): Promise<CreateResult> {
    return createIntern(
      {
        db: this.deps.db,
        config: this.deps.config,
        vault: this.deps.vault,
        loops: this.loops,
        access: this.deps.access,
        provisioner: this.deps.provisioner,
        log: () => this.log,
        inflight: this.createsInFlight,
      },
      caller,
      body,
      idempotencyKey,
      signal,
    );
  }

  /**
   * GET /interns: the interns the caller may read, newest first, a cursor page at a time — every
   * intern of the workspace for its administrators and organization-acting keys, otherwise the
   * caller's own.
   */
  async list(
    caller: Caller,
    query: ListInternsQuery,
  ): Promise<{ data: InternView[]; has_more: boolean; next_cursor?: string }> {
    if (
      query.workspace_id !== undefined &&
      query.workspace_id.toLowerCase() !== caller.workspaceId.toLowerCase()
    ) {
      throw invalid("workspace_id must be the API key's workspace");
    }
    const statuses = parseStatuses(query.status);
    let cursor = null;
    if (query.starting_after !== undefined) {
      cursor = decodeCursor(query.starting_after);
      if (!cursor) throw invalid('starting_after is not a cursor returned by this API (use next_cursor)');
    }
    const limit = query.limit ?? 50;
    const everyone =
      caller.userId === null || (await this.deps.access.administers(caller, caller.workspaceId));
    const rows = await store.listInterns(this.deps.db, caller.workspaceId, {
      creatorUserId: everyone ? null : caller.userId,
      statuses,
      limit: limit + 1,
      cursor,
    });
    const page = rows.slice(0, limit);
    const hasMore = rows.length > limit;
    const last = page[page.length - 1];
    return {
      data: page.map(internView),
      has_more: hasMore,
      ...(hasMore && last ? { next_cursor: encodeCursor({ createdAt: last.created_at, id: last.id }) } : {}),
    };
  }

  /** PATCH /interns/{id}: name, description, instructions, model (effective on the next provision). */
  async update(caller: Caller, id: string, patch: UpdateInternBody): Promise<InternRow> {
    const row = await this.actable(caller, id);
    if (row.status === 'destroying' || row.status === 'destroy_failed')
      throw invalidTransition(row, 'update');
    const set: store.InternPatch = {};
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.description !== undefined) set.description = patch.description;
    if (patch.instructions !== undefined) set.instructions = patch.instructions;
    if (patch.model !== undefined) set.model = patch.model;
    if (Object.keys(set).length === 0) return row;
    set.updated_at = store.stamp();
    if (set.name !== undefined && set.name !== row.name) {
      const taken = await store.nameTaken(
        this.deps.db,
        row.workspace_id,
        row.creator_user_id,
        set.name,
        row.id,
      );
      if (taken || !(await store.renameIntern(this.deps.db, row.id, set))) throw nameTakenError(set.name);
    } else {
      await store.updateIntern(this.deps.db, row.id, set);
    }
    return this.visible(caller, id);
  }

  /** POST /interns/{id}/provision: queued and a loop started; already under way is fine. */
  async provision(caller: Caller, id: string): Promise<void> {
    const row = await this.actable(caller, id);
    if (row.status === 'queued' || row.status === 'provisioning') return;
    const to = nextStatus(row.status, 'provision');
    if (!to) throw invalidTransition(row, 'provision');
    await assertRuntimeRoom(this.deps, row.organization_id, row.id);
    const moved = await store.settleStatus(this.deps.db, row.id, to, [row.status]);
    if (!moved) return this.provision(caller, id); // the status changed under us: decide again
    this.loops.start(row.id);
  }

  /** POST /interns/{id}/suspend: the loop is cancelled and the runtime stopped → stopped. */
  async suspend(caller: Caller, id: string): Promise<void> {
    const row = await this.actable(caller, id);
    const allowed = Object.keys(TRANSITIONS.suspend) as InternStatus[];
    if (!allowed.includes(row.status)) throw invalidTransition(row, 'suspend');
    await this.loops.cancel(row.id);
    try {
      await this.deps.provisioner.stop(row.id);
    } catch (err) {
      this.log.error({ err, internId: row.id }, 'stopping the intern runtime failed');
      throw codedError(
        502,
        InternErrorCode.upstreamUnavailable,
        'The intern runtime could not be stopped; retry',
      );
    }
    const moved = await store.settleStatus(this.deps.db, row.id, 'stopped', allowed);
    if (!moved) {
      const now = await this.actable(caller, id);
      if (now.status !== 'stopped') throw invalidTransition(now, 'suspend');
    }
  }

  /** DELETE /interns/{id}: → destroying, the destroy itself runs in the background. */
  async delete(caller: Caller, id: string, acknowledgeWorkspaceLoss: boolean): Promise<void> {
    const row = await this.actable(caller, id);
    if (row.status === 'destroying') return;
    if (row.status === 'destroy_failed' && !acknowledgeWorkspaceLoss) {
      throw codedError(
        409,
        InternErrorCode.workspaceLossNotAcknowledged,
        'Archiving this intern’s workspace failed; delete it with acknowledge_workspace_loss: true to discard it',
      );
    }
    const to = nextStatus(row.status, 'delete');
    if (!to) throw invalidTransition(row, 'delete');
    await this.loops.cancel(row.id);
    const moved = await store.settleStatus(this.deps.db, row.id, to, [row.status]);
    if (!moved) return this.delete(caller, id, acknowledgeWorkspaceLoss);
    this.destroyInBackground(row.id, acknowledgeWorkspaceLoss);
  }

  /** A runtime exited without being asked to: a running intern becomes failed with the message. */
  async runtimeExited(internId: string, message: string): Promise<void> {
    const to = nextStatus('running', 'fail');
    if (!to) return;
    await store.updateIntern(
      this.deps.db,
      internId,
      { status: to, last_failure_message: message, updated_at: store.stamp() },
      ['running'],
    );
  }

  /** Boot: reconciles statuses with this node's runtimes (GATEHOUSE_INTERNS_RUNTIMES=on). */
  async start(): Promise<void> {
    const rows = await store.internsWithStatus(this.deps.db, [
      'running',
      'queued',
      'provisioning',
      'destroying',
    ]);
    for (const row of rows) {
      if (row.status === 'destroying') {
        // The acknowledgement of a delete is not stored: archive unless the archive already failed once.
        this.destroyInBackground(row.id, row.archive_failed === 1);
      } else {
        this.loops.start(row.id);
      }
    }
    if (rows.length > 0) this.log.info({ interns: rows.length }, 'interns reconciled at boot');
  }

  /** Shutdown: stops provisioning loops and the runtimes of this node. */
  async close(): Promise<void> {
    await this.loops.close();
    // Destroys under way get a moment to finish; one still running stays `destroying` and is
    // finished by the next boot's reconcile.
    await settledWithin(Promise.all([...this.destroys.values()]), CLOSE_DESTROY_WAIT_MS);
    await this.deps.provisioner.close();
  }

  private destroyInBackground(internId: string, discard: boolean): void {
    if (this.destroys.has(internId)) return;
    const done = this.destroy(internId, discard)
      .catch((err) => this.log.error({ err, internId }, 'intern destroy failed'))
      .finally(() => this.destroys.delete(internId));
    this.destroys.set(internId, done);
  }

  private async destroy(internId: string, discard: boolean): Promise<void> {
    const { db, provisioner, vault } = this.deps;
    try {
      await provisioner.destroy(internId, { discard });
    } catch (err) {
      const archive = err instanceof ProvisionError;
      if (!archive) this.log.error({ err, internId }, 'destroying the intern runtime failed');
      await store.updateIntern(
        db,
        internId,
        {
          status: 'destroy_failed',
          archive_failed: archive ? 1 : 0,
          last_failure_message: archive ? `workspace_archive_failed: ${err.message}` : DESTROY_FAILURE,
          updated_at: store.stamp(),
        },
        ['destroying'],
      );
      return;
    }
    const row = await store.findIntern(db, internId);
    if (row?.status !== 'destroying') return;
    await vault.deleteInternVault(internId);
    await store.removeIntern(db, internId, row.vault_id);
  }
}

/** `status=a,b` (or repeated) → the distinct known statuses; unknown values are a 400. */
function parseStatuses(raw: string | string[] | undefined): InternStatus[] | null {
  if (raw === undefined) return null;
  const parts = (Array.isArray(raw) ? raw : [raw])
    .flatMap((s) => s.split(','))
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (parts.length === 0) return null;
  const known = new Set<string>(INTERN_STATUSES);
  const unknown = parts.filter((p) => !known.has(p));
  if (unknown.length > 0) {
    throw invalid(`Unknown status ${JSON.stringify(unknown[0])}; known: ${INTERN_STATUSES.join(', ')}`);
  }
  const distinct = [...new Set(parts)] as InternStatus[];
  if (distinct.length > 8) throw invalid('status lists at most 8 values');
  return distinct;
}
