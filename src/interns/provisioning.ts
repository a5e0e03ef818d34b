import type { InternsConfig } from '../config.js';
import type { Db } from '../db/connection.js';
import type { InternStatus } from '../db/schema.js';
import { internHostname, nextStatus } from './model.js';
import { ProvisionError, type Provisioner } from './provisioner.js';
import * as store from './store.js';

export interface LoopLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** The message shown when a step failed with something other than a ProvisionError. */
export const GENERIC_FAILURE = 'Provisioning failed because of an internal error; provision again to retry';

class Aborted extends Error {}

/** Resolves after `ms`, or rejects with Aborted as soon as `signal` aborts. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Aborted());
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Aborted());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** `work`, or Aborted as soon as `signal` aborts (a step that ignores its signal cannot hold a loop). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.reject(new Aborted());
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Aborted());
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * The provisioning loops: at most one per intern on this node, each abortable. A loop moves the
 * intern to `provisioning` (resolving its model and hostname), runs every provisioner step with
 * its progress written before it, and settles `running` or `failed`. Every write is conditional on
 * the status the loop expects, so a suspend or delete that moved the intern on always wins.
 */
export class ProvisioningLoops {
  private readonly loops = new Map<string, { controller: AbortController; done: Promise<void> }>();

  constructor(
    private readonly deps: {
      db: Db;
      config: InternsConfig;
      provisioner: Provisioner;
      /** The workspace's default_text_model, or null. */
      workspaceModel: (organizationId: string, workspaceId: string) => Promise<string | null>;
      log: () => LoopLog;
    },
  ) {}

  /** Starts the loop of `internId` unless one already runs on this node. */
  start(internId: string): void {
    if (this.loops.has(internId)) return;
    const controller = new AbortController();
    const entry = {
      controller,
      done: this.run(internId, controller.signal)
        .catch((err) => this.deps.log().error({ err, internId }, 'intern provisioning loop failed'))
        .finally(() => {
          if (this.loops.get(internId) === entry) this.loops.delete(internId);
        }),
    };
    this.loops.set(internId, entry);
  }

  /** Aborts the loop of `internId` (if any) and waits until it has stopped writing. */
  async cancel(internId: string): Promise<void> {
    const entry = this.loops.get(internId);
    if (!entry) return;
    entry.controller.abort();
    await entry.done;
  }

  active(internId: string): boolean {
    return this.loops.has(internId);
  }

  /** Aborts every loop and waits for them (shutdown). */
  async close(): Promise<void> {
    const entries = [...this.loops.values()];
    for (const e of entries) e.controller.abort();
    await Promise.all(entries.map((e) => e.done));
  }

  private async run(id: string, signal: AbortSignal): Promise<void> {
    const { db, config, provisioner } = this.deps;
    const row = await store.findIntern(db, id);
    if (!row || signal.aborted) return;
    // begin: queued → provisioning, running → provisioning (reprovision); a provisioning intern
    // (interrupted by a restart) starts again from its first step.
    const from: InternStatus[] = ['queued', 'running', 'provisioning'];
    if (!from.includes(row.status)) return;
    if (row.status !== 'provisioning' && nextStatus(row.status, 'begin') !== 'provisioning') return;

    const model =
      row.model ??
      (await this.deps.workspaceModel(row.organization_id, row.workspace_id).catch(() => null)) ??
      config.defaultModel;
    const hostname = row.hostname ?? internHostname(row.name, row.id, config.domain);
    const total = provisioner.steps.length;
    const began = await store.updateIntern(
      db,
      id,
      {
        status: 'provisioning',
        provisioned_model: model,
        hostname,
        progress_step: null,
        progress_total: null,
        progress_label: null,
        updated_at: store.stamp(),
      },
      from,
    );
    if (!began || signal.aborted) return;
    const target = {
      id,
      name: row.name,
      workspaceId: row.workspace_id,
      hostname,
      model,
      instructions: row.instructions,
    };

    try {
      for (let i = 0; i < total; i++) {
        const moved = await store.updateIntern(
          db,
          id,
          {
            progress_step: i + 1,
            progress_total: total,
            progress_label: provisioner.steps[i] ?? `Step ${i + 1}`,
            updated_at: store.stamp(),
          },
          ['provisioning'],
        );
        if (!moved || signal.aborted) return;
        if (config.stepDelayMs > 0) await delay(config.stepDelayMs, signal);
        await untilAborted(provisioner.runStep(target, i, signal), signal);
        if (signal.aborted) return;
      }
    } catch (err) {
      if (err instanceof Aborted || signal.aborted) return;
      const message = err instanceof ProvisionError ? err.message : GENERIC_FAILURE;
      if (!(err instanceof ProvisionError))
        this.deps.log().error({ err, internId: id }, 'provisioning step failed');
      // A half-booted runtime is not left behind (best effort; the status says failed either way).
      await provisioner.stop(id).catch((e) => this.deps.log().warn({ err: e, internId: id }, 'stop failed'));
      await store.updateIntern(
        db,
        id,
        {
          status: 'failed',
          last_failure_message: message,
          progress_step: null,
          progress_total: null,
          progress_label: null,
          updated_at: store.stamp(),
        },
        ['provisioning'],
      );
      return;
    }
    await store.updateIntern(
      db,
      id,
      {
        status: 'running',
        last_failure_message: null,
        progress_step: null,
        progress_total: null,
        progress_label: null,
        updated_at: store.stamp(),
      },
      ['provisioning'],
    );
  }
}
