/**
 * Anthropic message threads held by Gatehouse: what makes `thread` on `POST /messages` work on
 * every provider, not only on Anthropic's own API (which holds threads itself, and gets them passed
 * through).
 *
 * A thread is created with `thread: {type: 'create'}` and the whole conversation; each later turn
 * sends `thread: {type: 'continue', previous_message_id}` with only its new messages. Before such a
 * call `begin` turns the body into a plain one carrying the whole conversation (the thread's
 * `system` and `tools`, every earlier turn's messages and reply, then the new messages), which then
 * goes to any provider; after it, `save` stores the turn under its reply's id. Each reply can be
 * continued once, as on Anthropic's API, and the rejections use Anthropic's error codes, on which
 * the official client replays the conversation under a new thread.
 */

import type { Db } from '../db/connection.js';
import { isObj, type Obj } from '../formats/validate.js';
import { ApiError } from '../lib/errors.js';
import {
  claimTurn,
  findTurns,
  insertTurn,
  purgeExpired,
  refreshClaim,
  releaseTurn,
  type Scope,
} from './store.js';

/** Where failures that do not fail the call are reported (the request's logger). */
export interface Log {
  warn(obj: object, msg: string): void;
}

/** The fields a thread keeps from the turn that created it; a later turn may not change them. */
const THREAD_FIELDS = ['system', 'tools'] as const;

/** One threaded call, from `begin` to `save` or `release`. */
export interface ThreadTurn {
  /** The body to send: the whole conversation, no `thread`. */
  body: Obj;
  scope: Scope;
  /** The turns this one continues, oldest first (empty on the turn that creates the thread). */
  chain: string[];
  /** `system` and `tools` as created (the first turn only). */
  fields: Obj | null;
  /** This turn's own messages, as sent. */
  messages: unknown[];
  /** The continued reply this call holds, and its last refresh (given back when nothing is stored). */
  claim: { id: string; at: number } | null;
  saved: boolean;
  log: Log;
  /** Refreshes the claim while the call runs; stopped when the turn is saved or released. */
  keeper?: NodeJS.Timeout;
  /** A refresh under way: `release` waits for it, so that it gives back the claim as last written. */
  refreshing?: Promise<void>;
}

export interface MessageThreadsDeps {
  db: Db;
  /** How long a thread is kept after its last turn, ms; 0 holds none. */
  retentionMs: number;
  /**
   * How long a continue's claim lasts without a refresh before another may take its place (its
   * process died), ms; a running continue refreshes it every `beatMs` (a third of it; 0: never).
   */
  inFlightMs?: number;
  beatMs?: number;
  /** How often expired rows are purged (checked on each write), ms. */
  purgeEveryMs?: number;
  now?: () => number;
}

const PURGE_BATCH = 500;

/** A thread rejection in Anthropic's shape: `error.details.error_code` names it. */
const threadError = (status: number, code: string, message: string) =>
  new ApiError(status, message, { details: { error_code: code } });

export class MessageThreadsService {
  private readonly now: () => number;
  private lastPurge = 0;

  constructor(private readonly deps: MessageThreadsDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Whether Gatehouse holds threads at all (a retention of 0 keeps none). */
  get enabled(): boolean {
    return this.deps.retentionMs > 0;
  }

  /**
   * The plain body of a threaded call and its turn; null when the body names no thread. A continue
   * claims the reply it continues: a second continue of it is `thread_already_continued` (or
   * `thread_continue_in_flight` while the first runs), an unknown, expired or other workspace's id
   * is `thread_not_found`, a `system` or `tools` other than the thread's is
   * `thread_fingerprint_mismatch`. `sent`: the body as the caller sent it, when `body` has been
   * completed since (a preset's system prompt is not the caller changing the thread's).
   */
  async begin(body: unknown, scope: Scope, log: Log, sent: unknown = body): Promise<ThreadTurn | null> {
    if (!isObj(body) || !isObj(body.thread)) return null;
    const { thread, ...rest } = body;
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const turn: ThreadTurn = {
      body: rest,
      scope,
      chain: [],
      fields: null,
      messages,
      claim: null,
      saved: false,
      log,
    };
    if (thread.type === 'create') {
      turn.fields = Object.fromEntries(
        THREAD_FIELDS.filter((f) => body[f] !== undefined).map((f) => [f, body[f]]),
      );
      return turn;
    }
    if (thread.type !== 'continue') throw new ApiError(400, "thread.type: expected 'create' or 'continue'");
    const previous = thread.previous_message_id;
    if (typeof previous !== 'string' || previous === '')
      throw new ApiError(400, 'thread.previous_message_id: a message id is required to continue a thread');

    const now = this.now();
    const claimed = await claimTurn(this.deps.db, scope, previous, now, now - this.inFlightMs);
    if (claimed !== 'claimed') throw this.unclaimable(claimed, previous);
    turn.claim = { id: previous, at: now };
    this.keep(turn);
    try {
      await this.expand(turn, body, isObj(sent) ? sent : body, previous, now);
    } catch (err) {
      await this.release(turn);
      throw err;
    }
    return turn;
  }

  private get inFlightMs(): number {
    return this.deps.inFlightMs ?? 600_000;
  }

  /**
   * Keeps a running continue's claim fresh, so that a turn longer than the in-flight time (a long
   * stream) is not taken over while it runs; only a process that stopped lets its claims go stale.
   */
  private keep(turn: ThreadTurn): void {
    const every = this.deps.beatMs ?? Math.floor(this.inFlightMs / 3);
    if (every <= 0) return;
    turn.keeper = setInterval(() => {
      const claim = turn.claim;
      if (!claim || turn.refreshing) return;
      const at = this.now();
      turn.refreshing = refreshClaim(this.deps.db, claim.id, claim.at, at)
        .then((kept) => {
          if (kept) claim.at = at;
        })
        .catch((err) => turn.log.warn({ err, messageId: claim.id }, 'refreshing the thread claim failed'))
        .finally(() => {
          turn.refreshing = undefined;
        });
    }, every);
    turn.keeper.unref();
  }

  private stopKeeping(turn: ThreadTurn): Promise<void> | undefined {
    clearInterval(turn.keeper);
    turn.keeper = undefined;
    return turn.refreshing;
  }

  /**
   * Stores the turn under its reply's id once the reply is whole (a Message; not for a stream cut
   * short). A failed write does not fail the call: it is logged, and a later continue of the reply
   * is `thread_not_found`, on which the client replays the conversation.
   */
  async save(turn: ThreadTurn, message: unknown): Promise<void> {
    if (!isObj(message) || message.type !== 'message' || typeof message.id !== 'string') return;
    await this.stopKeeping(turn);
    const now = this.now();
    try {
      await insertTurn(
        this.deps.db,
        {
          id: message.id,
          organization_id: turn.scope.organizationId,
          workspace_id: turn.scope.workspaceId,
          chain_json: JSON.stringify(turn.chain),
          fields_json: turn.fields ? JSON.stringify(turn.fields) : null,
          messages_json: JSON.stringify(turn.messages),
          reply_json: JSON.stringify({ role: 'assistant', content: message.content ?? [] }),
          continued: null,
          continued_at: null,
          created_at: now,
          expires_at: now + this.deps.retentionMs,
        },
        turn.chain,
      );
      turn.saved = true;
    } catch (err) {
      turn.log.warn({ err, messageId: message.id }, 'storing the thread turn failed; it cannot be continued');
    }
    this.purgeNowAndThen(turn.log, now);
  }

  /** Ends a turn that stored nothing: the reply it continued may be continued again. */
  async release(turn: ThreadTurn): Promise<void> {
    await this.stopKeeping(turn);
    if (!turn.claim || turn.saved) return;
    const { id, at } = turn.claim;
    turn.claim = null;
    await releaseTurn(this.deps.db, id, at).catch((err) =>
      turn.log.warn({ err, messageId: id }, 'releasing the continued thread turn failed'),
    );
  }

  /** Deletes every expired turn (in batches); returns how many. */
  async purgeExpired(): Promise<number> {
    const now = this.now();
    let total = 0;
    for (;;) {
      const n = await purgeExpired(this.deps.db, now, PURGE_BATCH);
      total += n;
      if (n < PURGE_BATCH) return total;
    }
  }

  /** The conversation `previous` ends, with the new messages after it, as `turn.body`. */
  private async expand(turn: ThreadTurn, body: Obj, sent: Obj, previous: string, now: number): Promise<void> {
    const [last] = await findTurns(this.deps.db, turn.scope, [previous], now);
    if (!last) throw this.unclaimable('missing', previous);
    turn.chain = [...(JSON.parse(last.chain_json) as string[]), last.id];
    const rows = new Map(
      (await findTurns(this.deps.db, turn.scope, turn.chain, now)).map((r) => [r.id, r] as const),
    );
    const history: unknown[] = [];
    let fields: Obj = {};
    for (const [i, id] of turn.chain.entries()) {
      const row = rows.get(id);
      // An earlier turn gone (expired): the thread cannot be rebuilt whole.
      if (!row) throw this.unclaimable('missing', previous);
      if (i === 0 && row.fields_json) fields = JSON.parse(row.fields_json) as Obj;
      history.push(...(JSON.parse(row.messages_json) as unknown[]), JSON.parse(row.reply_json));
    }
    const changed = THREAD_FIELDS.filter(
      (f) => sent[f] !== undefined && JSON.stringify(sent[f]) !== JSON.stringify(fields[f]),
    );
    if (changed.length)
      throw threadError(
        400,
        'thread_fingerprint_mismatch',
        `${changed.join(', ')}: differs from the value this thread was created with; send the stored value, or the whole conversation with thread: {"type": "create"} to change it`,
      );
    const { thread: _, ...rest } = body;
    // Cache breakpoints are the caller's for the request that first sent them: the earlier turns'
    // go, so the replayed conversation stays within the four a request may set.
    turn.body = { ...rest, ...fields, messages: [...history.map(withoutCacheControl), ...turn.messages] };
  }

  private unclaimable(state: 'in_flight' | 'done' | 'missing', id: string): ApiError {
    if (state === 'done')
      return threadError(
        400,
        'thread_already_continued',
        `thread.previous_message_id: '${id}' has already been continued; continue from the thread's most recent message`,
      );
    if (state === 'in_flight')
      return threadError(
        400,
        'thread_continue_in_flight',
        `thread.previous_message_id: another request is continuing '${id}'; wait for its answer and continue from it`,
      );
    return threadError(
      404,
      'thread_not_found',
      `thread.previous_message_id: no thread holds '${id}' in this workspace (it may have expired); send the whole conversation with thread: {"type": "create"}`,
    );
  }

  /** Expired rows go on the first write after each `purgeEveryMs` (no timer to start or stop). */
  private purgeNowAndThen(log: Log, now: number): void {
    if (now - this.lastPurge < (this.deps.purgeEveryMs ?? 10 * 60_000)) return;
    this.lastPurge = now;
    this.purgeExpired().catch((err) => log.warn({ err }, 'purging expired message threads failed'));
  }
}

/** A message or block without its `cache_control`, nor that of the blocks in it. */
function withoutCacheControl(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutCacheControl);
  if (!isObj(value)) return value;
  const { cache_control: _, ...copy } = value;
  for (const key of ['content', 'source'])
    if (copy[key] !== undefined && typeof copy[key] === 'object') copy[key] = withoutCacheControl(copy[key]);
  return copy;
}
