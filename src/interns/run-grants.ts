import { createHash, randomBytes } from 'node:crypto';
import type { Caller } from '../accounts/caller.js';
import type { TraceParent } from '../telemetry/spans.js';

/** What a run grant stands for: model calls of this intern's runtime, billed to this key. */
export interface RunGrant {
  internId: string;
  keyHash: string;
  /** The run's request span: its model calls' spans are children of it (absent: not traced). */
  trace?: TraceParent;
}

/**
 * Run grants: the chat route issues one per request and hands it to the runtime with the turn;
 * the runtime's model callbacks send it back, and the gateway runs them as the key that sent the
 * chat request — its limits, guardrails, budgets and credits, its name on the generation. A grant
 * is revoked when its chat request ends (a paused run resumes under the grant of the request that
 * answers it), so a runtime holds no standing right to spend anyone's money. In memory: the
 * runtimes of a node call back to that node.
 */
export class RunGrants {
  private readonly grants = new Map<string, RunGrant>();

  issue(internId: string, caller: Caller, trace?: TraceParent): string {
    const token = randomBytes(24).toString('base64url');
    this.grants.set(token, { internId, keyHash: caller.keyHash, ...(trace ? { trace } : {}) });
    return token;
  }

  /** The grant `token` names, when it was issued for `internId` and is still valid. */
  lookup(token: string, internId: string): RunGrant | null {
    const g = this.grants.get(token);
    return g && g.internId === internId ? g : null;
  }

  revoke(token: string): void {
    this.grants.delete(token);
  }
}

/**
 * The opaque id a runtime knows a caller by (sessions are bound to it): derived from the key, so
 * the runtime, and the intern's files, never hold the key's own hash.
 */
export const sessionOwnerOf = (caller: Caller): string =>
  createHash('sha256').update(`intern-session-owner:${caller.keyHash}`).digest('hex').slice(0, 32);
