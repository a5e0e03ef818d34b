import type { InternStatus } from '../db/schema.js';

/**
 * Interns: statuses, the lifecycle transitions between them, and the error codes of the interns
 * API. The README's "Interns" section shows the same table; keep them in step.
 */
export type { InternStatus };

export const INTERN_STATUSES: readonly InternStatus[] = [
  'awaiting_slack_install',
  'queued',
  'provisioning',
  'running',
  'failed',
  'stopped',
  'destroying',
  'destroy_failed',
];

/** What a caller (or the provisioner) can do to an intern. */
export type LifecycleAction =
  | 'provision' // POST /interns/{id}/provision (or create with provision: true)
  | 'begin' // the provisioner starts working on a queued intern
  | 'ready' // every provisioning step succeeded and the runtime is healthy
  | 'fail' // a provisioning step failed, or a running runtime exited unasked
  | 'suspend' // POST /interns/{id}/suspend
  | 'delete' // DELETE /interns/{id}
  | 'destroyed' // destroy finished (the row is removed)
  | 'destroy_failed'; // destroy could not archive the working directory

/**
 * The transition table. A new intern starts `stopped` (never booted: hostname null) or, created
 * with `provision: true`, `queued`. `awaiting_slack_install` is entered only where a Slack
 * integration is configured; Gatehouse has none yet, so no transition leads to it (it can only be
 * left, like `stopped`). Anything not listed is refused with 409 `invalid_transition`.
 */
export const TRANSITIONS: Readonly<Record<LifecycleAction, Partial<Record<InternStatus, InternStatus>>>> = {
  provision: { stopped: 'queued', failed: 'queued', awaiting_slack_install: 'queued' },
  begin: { queued: 'provisioning', running: 'provisioning' },
  ready: { provisioning: 'running' },
  fail: { provisioning: 'failed', running: 'failed', queued: 'failed' },
  suspend: {
    running: 'stopped',
    queued: 'stopped',
    provisioning: 'stopped',
    failed: 'stopped',
    stopped: 'stopped',
    awaiting_slack_install: 'stopped',
  },
  delete: {
    awaiting_slack_install: 'destroying',
    queued: 'destroying',
    provisioning: 'destroying',
    running: 'destroying',
    failed: 'destroying',
    stopped: 'destroying',
    destroy_failed: 'destroying',
  },
  destroyed: { destroying: 'destroying' },
  destroy_failed: { destroying: 'destroy_failed' },
};

/** The status `action` leads to from `from`, or null when the transition is not allowed. */
export function nextStatus(from: InternStatus, action: LifecycleAction): InternStatus | null {
  return TRANSITIONS[action][from] ?? null;
}

/**
 * String codes of the interns API beyond the seed's (`invalid_body`, `no_acting_user`, `not_found`,
 * `idempotency_key_reused`, `name_taken`, `payload_too_large`, `internal_error`,
 * `upstream_unavailable`). The seed leaves the two 409s of create unnamed; these are ours.
 */
export const InternErrorCode = {
  invalidBody: 'invalid_body',
  noActingUser: 'no_acting_user',
  notFound: 'not_found',
  regionRefused: 'region_not_allowed',
  idempotencyKeyReused: 'idempotency_key_reused',
  nameTaken: 'name_taken',
  /** The member already owns GATEHOUSE_INTERNS_PER_MEMBER interns (all workspaces together). */
  internLimitReached: 'intern_limit_reached',
  /** Starting a runtime would pass GATEHOUSE_INTERNS_RUNTIMES_PER_ORGANIZATION or GATEHOUSE_INTERNS_RUNTIMES_MAX. */
  runtimeLimitReached: 'runtime_limit_reached',
  /** `vault_id` names no vault owned by another intern of this workspace, or one being destroyed. */
  vaultNotAttachable: 'vault_not_attachable',
  /** The action is not allowed in the intern's current status (README transition table). */
  invalidTransition: 'invalid_transition',
  /** DELETE of a `destroy_failed` intern (its archive failed) without `acknowledge_workspace_loss: true`. */
  workspaceLossNotAcknowledged: 'workspace_loss_not_acknowledged',
  payloadTooLarge: 'payload_too_large',
  unsupportedMediaType: 'unsupported_media_type',
  internalError: 'internal_error',
  upstreamUnavailable: 'upstream_unavailable',
} as const;

/** The intern as the API shows it (digest §6.1): every key present. */
export interface InternView {
  id: string;
  name: string;
  description: string | null;
  instructions: string | null;
  model: string | null;
  status: InternStatus;
  last_failure_message: string | null;
  progress: { step_label: string; step_number: number; total_steps: number } | null;
  hostname: string | null;
  workspace_id: string;
  vault_id: string | null;
  attached_vault_id: string | null;
  created_at: string;
  updated_at: string;
}

/** `<name>-<first 8 hex of the id>.<domain>`: unique because the id is. */
export const internHostname = (name: string, id: string, domain: string): string =>
  `${name}-${id.replace(/-/g, '').slice(0, 8)}.${domain}`;
