/**
 * SQL of the video jobs (migration 0030), in the gateway's database so that every process of the
 * media service reads the same jobs and a restart keeps them. Imports only types of the database
 * layer: the composition root hands it a connection.
 */

import type { Db } from '../../db/connection.js';
import type { MediaVideoJobsTable } from '../../db/schema.js';

export type VideoJobStatus = MediaVideoJobsTable['status'];

export interface VideoJobOutput {
  key: string;
  url: string;
  contentType: string;
}

export interface VideoJob {
  id: string;
  model: string;
  status: VideoJobStatus;
  outputs: VideoJobOutput[];
  costUsd: number | null;
  error: string | null;
  createdAt: number;
  completedAt: number | null;
  /** Where the job's end is POSTed (`callback_url`), or null. */
  callbackUrl: string | null;
  pollingUrl: string | null;
  /** The workspace the job belongs to (its webhook settings sign the job's event). */
  workspaceId: string;
}

type Row = MediaVideoJobsTable;

export interface JobScope {
  organizationId: string;
  workspaceId: string;
}

/** How often the process running a job refreshes its heartbeat. */
export const HEARTBEAT_MS = 10_000;
/** A running job whose heartbeat is older than this (six missed beats) is taken as abandoned. */
export const STALE_MS = 6 * HEARTBEAT_MS;

/** What a poll of a job whose process stopped reads. */
export const ABANDONED =
  'The media service process generating this video stopped before it finished. Submit it again.';

export class VideoJobStore {
  constructor(
    private readonly db: Db,
    private readonly staleMs = STALE_MS,
  ) {}

  async create(
    job: {
      id: string;
      model: string;
      owner: string;
      scope: JobScope;
      callbackUrl?: string | null;
      pollingUrl?: string | null;
    },
    now: number,
    retentionMs: number,
  ): Promise<void> {
    await this.db
      .insertInto('media_video_jobs')
      .values({
        id: job.id,
        organization_id: job.scope.organizationId,
        workspace_id: job.scope.workspaceId,
        model: job.model,
        status: 'pending',
        owner: job.owner,
        heartbeat_at: now,
        outputs_json: null,
        cost_usd: null,
        error: null,
        created_at: now,
        completed_at: null,
        expires_at: now + retentionMs,
        callback_url: job.callbackUrl ?? null,
        polling_url: job.pollingUrl ?? null,
      })
      .execute();
  }

  /**
   * The scope's job `id`, or null (another workspace's job is not found). A running job whose owner
   * stopped beating is failed first, so a caller never polls it forever (`abandonedNow`: by this
   * read, whose caller then tells the job's callback).
   */
  async find(
    id: string,
    scope: JobScope,
    now: number,
  ): Promise<(VideoJob & { abandonedNow: boolean }) | null> {
    const read = () =>
      this.db
        .selectFrom('media_video_jobs')
        .selectAll()
        .where('id', '=', id)
        .where('organization_id', '=', scope.organizationId)
        .where('workspace_id', '=', scope.workspaceId)
        .where('expires_at', '>', now)
        .executeTakeFirst();
    let row = await read();
    if (!row) return null;
    const abandonedNow = this.isStale(row, now) && (await this.abandon(row, now));
    if (abandonedNow) row = await read();
    return row ? { ...jobOf(row), abandonedNow } : null;
  }

  /** Job `id` whatever its scope (the process ending it tells its callback), or null. */
  async get(id: string): Promise<VideoJob | null> {
    const row = await this.db
      .selectFrom('media_video_jobs')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? jobOf(row) : null;
  }

  /**
   * Fails every running job whose owner stopped beating (any process's sweep finds them, so a
   * job with a callback ends even if nobody polls it); the ids this call failed.
   */
  async abandonStale(now: number, limit = 100): Promise<string[]> {
    const rows = await this.db
      .selectFrom('media_video_jobs')
      .selectAll()
      .where('status', 'in', ['pending', 'in_progress'])
      .where('heartbeat_at', '<', now - this.staleMs)
      .limit(limit)
      .execute();
    const failed: string[] = [];
    for (const row of rows) if (await this.abandon(row, now)) failed.push(row.id);
    return failed;
  }

  private isStale(row: Row, now: number): boolean {
    return (
      (row.status === 'pending' || row.status === 'in_progress') && row.heartbeat_at < now - this.staleMs
    );
  }

  /** Fails a stale job, conditional on the heartbeat read (an owner that beat meanwhile keeps it). */
  private async abandon(row: Row, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('media_video_jobs')
      .set({ status: 'failed', error: ABANDONED, completed_at: now })
      .where('id', '=', row.id)
      .where('status', 'in', ['pending', 'in_progress'])
      .where('heartbeat_at', '=', row.heartbeat_at)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Marks the owner's job as running (its generation started). */
  async start(id: string, owner: string, now: number): Promise<void> {
    await this.db
      .updateTable('media_video_jobs')
      .set({ status: 'in_progress', heartbeat_at: now })
      .where('id', '=', id)
      .where('owner', '=', owner)
      .where('status', '=', 'pending')
      .execute();
  }

  /** Refreshes the heartbeat of the owner's running jobs among `ids`. */
  async beat(owner: string, ids: readonly string[], now: number): Promise<void> {
    if (ids.length === 0) return;
    await this.db
      .updateTable('media_video_jobs')
      .set({ heartbeat_at: now })
      .where('id', 'in', [...ids])
      .where('owner', '=', owner)
      .where('status', 'in', ['pending', 'in_progress'])
      .execute();
  }

  /**
   * Ends the owner's job; false when it had already ended. A job failed as abandoned (its process
   * stalled past `staleMs`, so a poll gave up on it) that completes after all is recorded completed:
   * its video exists and was charged, and the record says so. A late failure leaves it as it is.
   */
  async finish(
    id: string,
    owner: string,
    end:
      | { status: 'completed'; outputs: VideoJobOutput[]; costUsd: number }
      | { status: 'failed'; error: string },
    now: number,
  ): Promise<boolean> {
    const res = await this.db
      .updateTable('media_video_jobs')
      .set(
        end.status === 'completed'
          ? {
              status: 'completed',
              outputs_json: JSON.stringify(end.outputs),
              cost_usd: end.costUsd,
              error: null,
              completed_at: now,
            }
          : { status: 'failed', error: end.error, completed_at: now },
      )
      .where('id', '=', id)
      .where('owner', '=', owner)
      .where((w) =>
        end.status === 'completed'
          ? w.or([
              w('status', 'in', ['pending', 'in_progress']),
              w.and([w('status', '=', 'failed'), w('error', '=', ABANDONED)]),
            ])
          : w('status', 'in', ['pending', 'in_progress']),
      )
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Removes expired jobs (their records only: the stored videos stay where the object store keeps them). */
  async purge(now: number): Promise<number> {
    const res = await this.db
      .deleteFrom('media_video_jobs')
      .where('expires_at', '<=', now)
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}

function jobOf(row: Row): VideoJob {
  return {
    id: row.id,
    model: row.model,
    status: row.status,
    outputs: row.outputs_json ? (JSON.parse(row.outputs_json) as VideoJobOutput[]) : [],
    costUsd: row.cost_usd === null ? null : Number(row.cost_usd),
    error: row.error,
    createdAt: Number(row.created_at),
    completedAt: row.completed_at === null ? null : Number(row.completed_at),
    callbackUrl: row.callback_url,
    pollingUrl: row.polling_url,
    workspaceId: row.workspace_id,
  };
}
