/**
 * Stored responses: what makes `store`, `previous_response_id`, `conversation` and
 * `item_reference` work on `POST /responses` whichever provider serves the call.
 *
 * Before a call, `expand` turns a body that names stored state into a plain body carrying the whole
 * conversation (it then translates to any provider) and describes the turn; after the call, `save`
 * (a built response) or `tap` (a stream of events) stores the response with that turn's input.
 * Each response row keeps its own turn's input, its output and the ids of the responses it
 * continues, so a conversation is rebuilt from its rows — and deleting one of them really removes
 * its content (a later turn that needs it is then a 404, not a silent gap).
 */
import type { Db } from '../db/connection.js';
import { ApiError } from '../lib/errors.js';
import type { ConversationsService } from './conversations.js';
import {
  expandBody,
  type Item,
  inputList,
  type Obj,
  referencesOf,
  sendable,
  wantsStore,
} from './expansion.js';
import {
  type HeldItem,
  type InputItemsPage,
  type InputItemsQuery,
  inputItemsPage,
  listedItem,
} from './input-items.js';
import {
  deleteResponse,
  findItems,
  findResponses,
  insertResponse,
  purgeExpired,
  type Scope,
  type StoredResponseRow,
} from './store.js';

export type { Scope } from './store.js';

/** Where failures that do not fail the call are reported (the request's logger). */
export interface Log {
  warn(obj: object, msg: string): void;
}

/** Who calls: the key's scope; management keys get no stored state (the endpoint refuses them). */
export type CallerScope = Scope & { isManagement?: boolean };

/** One `/responses` call as far as storage is concerned (from `expand`, for `save` / `tap`). */
export interface Turn<B = unknown> {
  /** The body to parse: plain (no stored references). */
  body: B | Obj;
  scope: Scope;
  /** Whether the response is to be stored (`store` not false, and storage on). */
  store: boolean;
  previousResponseId: string | null;
  /** The conversation the turn belongs to: its input and output are added to it after the call. */
  conversationId: string | null;
  /** This turn's own input items, references resolved. */
  input: unknown[];
  /** The stored responses this turn continues, oldest first. */
  chain: string[];
  log: Log;
}

/** The fields of a Responses `Response` that storage reads and sets (the rest is kept as is). */
export interface StorableResponse {
  id: string;
  status?: string;
  output: unknown[];
  store: boolean;
  previous_response_id: string | null;
  conversation?: { id: string } | null;
}

/**
 * Lists a response's input items at the provider that stored it too (OpenAI's Responses API, on a
 * pass-through lane): its own ids and `include[]` fields. null when that provider cannot be asked
 * or does not hold it (then Gatehouse's copy is listed).
 */
export type UpstreamInputItems = (
  provider: string,
  responseId: string,
  query: InputItemsQuery,
) => Promise<unknown | null>;

export interface StoredResponsesDeps {
  db: Db;
  /** Conversations (`conversation` on `/responses`); without them the field is a 404. */
  conversations?: ConversationsService;
  upstreamInputItems?: UpstreamInputItems;
  /** How long a stored response is served, ms; 0 stores nothing. */
  retentionMs: number;
  /** How often expired rows are purged (checked on each write), ms. */
  purgeEveryMs?: number;
  now?: () => number;
}

const PURGE_BATCH = 500;

const notFound = (id: string) => new ApiError(404, `No stored response with id '${id}' in this workspace`);

export class StoredResponsesService {
  private readonly now: () => number;
  private lastPurge = 0;

  constructor(private readonly deps: StoredResponsesDeps) {
    this.now = deps.now ?? Date.now;
  }

  /**
   * Resolves the stored state `body` names (404 naming an unknown id) into a plain body, and
   * describes the turn for `save` / `tap`. A body that names nothing is returned as it is (no
   * database read).
   */
  async expand<B>(body: B, caller: CallerScope, log: Log): Promise<Turn<B>> {
    const scope = { organizationId: caller.organizationId, workspaceId: caller.workspaceId };
    const refs = referencesOf(body);
    const turn: Turn<B> = {
      body,
      scope,
      store: this.deps.retentionMs > 0 && wantsStore(body) && !caller.isManagement,
      previousResponseId: refs.previousResponseId,
      conversationId: refs.conversationId,
      input: inputList((body as Obj | null)?.input) ?? [],
      chain: [],
      log,
    };
    // The inference endpoint refuses management keys; no lookup on their behalf before that.
    if (
      caller.isManagement ||
      (refs.previousResponseId === null && refs.conversationId === null && refs.itemIds.length === 0)
    )
      return turn;

    const now = this.now();
    let history: unknown[] = [];
    if (refs.conversationId !== null) {
      if (!this.deps.conversations)
        throw new ApiError(
          404,
          `conversation: no conversation with id '${refs.conversationId}' in this workspace`,
        );
      history = await this.deps.conversations.history(scope, refs.conversationId);
    }
    if (refs.previousResponseId !== null) {
      const [previous] = await findResponses(this.deps.db, scope, [refs.previousResponseId], now);
      if (previous) {
        turn.chain = [...(JSON.parse(previous.chain_json) as string[]), previous.id];
        history = await this.conversation(scope, turn.chain, now);
      } else {
        throw new ApiError(
          404,
          `previous_response_id: no stored response with id '${refs.previousResponseId}' in this workspace (it may have expired or been deleted)`,
        );
      }
    }
    const items = new Map<string, Item | null>();
    if (refs.itemIds.length) {
      for (const row of await findItems(this.deps.db, scope, refs.itemIds, now)) {
        const item = JSON.parse(row.item_json) as Item;
        items.set(row.id, sendable(item, row.upstream_stored) ? item : null);
      }
    }
    const expanded = expandBody(body as Obj, history, items);
    turn.body = expanded.body;
    turn.input = expanded.input;
    return turn;
  }

  /**
   * Stores a built response when the turn asks for it, and returns it with `store` and
   * `previous_response_id` set. A failed write does not fail the call: it is logged and the
   * response says `store: false`. `upstreamStored`: the provider stored it natively as well.
   */
  async save<R extends StorableResponse>(
    turn: Turn,
    response: R,
    provider: string,
    opts: { upstreamStored?: boolean } = {},
  ): Promise<R> {
    this.annotate(turn, response);
    const upstreamStored = opts.upstreamStored === true;
    if (turn.store && !(await this.write(turn, response, provider, upstreamStored))) response.store = false;
    await this.addToConversation(turn, response, upstreamStored);
    return response;
  }

  /**
   * Passes Responses stream events through unchanged but for `store` / `previous_response_id` on the
   * response snapshots, and stores the final response (`response.completed` or
   * `response.incomplete`) once it has been passed on: no frame waits for the database, but the
   * stream ends only after the write, so a client that starts its next turn when the stream ends
   * finds this one stored.
   */
  async *tap<E extends { event: string; data: unknown }>(
    turn: Turn,
    events: AsyncIterable<E>,
    provider: string,
    opts: { upstreamStored?: boolean } = {},
  ): AsyncGenerator<E> {
    let final: StorableResponse | null = null;
    for await (const e of events) {
      const response = (e.data as { response?: StorableResponse }).response;
      if (response) this.annotate(turn, response);
      yield e;
      if (response && (e.event === 'response.completed' || e.event === 'response.incomplete'))
        final = response;
    }
    if (!final) return;
    if (turn.store) await this.write(turn, final, provider, opts.upstreamStored === true);
    await this.addToConversation(turn, final, opts.upstreamStored === true);
  }

  /** `GET /responses/{id}`: the response as it was returned. */
  async get(scope: Scope, id: string): Promise<StorableResponse & { object: 'response' }> {
    const [row] = await findResponses(this.deps.db, scope, [id], this.now());
    if (!row) throw notFound(id);
    return JSON.parse(row.response_json);
  }

  /**
   * `GET /responses/{id}/input_items`: the items the response was generated from, as OpenAI lists
   * them — the earlier turns of its conversation (`previous_response_id`: their input and output)
   * then its own input. A response OpenAI stored too (a lane) is listed by OpenAI, with its ids.
   */
  async inputItems(scope: Scope, id: string, query: InputItemsQuery): Promise<InputItemsPage> {
    const now = this.now();
    const [row] = await findResponses(this.deps.db, scope, [id], now);
    if (!row) throw notFound(id);
    if (row.upstream_stored === 1 && this.deps.upstreamInputItems) {
      const upstream = await this.deps.upstreamInputItems(row.provider, id, query);
      // OpenAI's own page, relayed as it came (the same shape).
      if (upstream !== null) return upstream as InputItemsPage;
    }
    const chain = JSON.parse(row.chain_json) as string[];
    const held = await this.held(scope, chain, now);
    held.push(
      ...(JSON.parse(row.input_json) as unknown[]).map((item, i) => ({ item, owner: id, place: `in${i}` })),
    );
    return inputItemsPage(held.map(listedItem), query);
  }

  /** `DELETE /responses/{id}`: the response and its items, at once. */
  async delete(scope: Scope, id: string): Promise<{ id: string; object: 'response'; deleted: true }> {
    if (!(await deleteResponse(this.deps.db, scope, id, this.now()))) throw notFound(id);
    return { id, object: 'response', deleted: true };
  }

  /** Deletes every expired response (in batches), and every expired conversation; returns how many. */
  async purgeExpired(): Promise<number> {
    const now = this.now();
    let total = (await this.deps.conversations?.purgeExpired()) ?? 0;
    for (;;) {
      const n = await purgeExpired(this.deps.db, now, PURGE_BATCH);
      total += n;
      if (n < PURGE_BATCH) return total;
    }
  }

  /** The items of the stored responses `chain` (oldest first): each one's input, then its output. */
  private async conversation(scope: Scope, chain: string[], now: number) {
    return (await this.held(scope, chain, now, false)).map((h) => h.item);
  }

  /**
   * `conversation`'s items with where each is stored. Gaps (a response deleted or expired) are
   * skipped when `tolerateGaps`, else a 404 naming that response.
   */
  private async held(scope: Scope, chain: string[], now: number, tolerateGaps = true): Promise<HeldItem[]> {
    const rows = new Map(
      (await findResponses(this.deps.db, scope, chain, now)).map((r) => [r.id, r] as const),
    );
    const items: HeldItem[] = [];
    for (const id of chain) {
      const row = rows.get(id);
      if (!row) {
        if (tolerateGaps) continue;
        throw new ApiError(
          404,
          `previous_response_id: the conversation's earlier response '${id}' has expired or was deleted`,
        );
      }
      const input = JSON.parse(row.input_json) as unknown[];
      items.push(...input.map((item, i) => ({ item, owner: id, place: `in${i}` })));
      const output = (JSON.parse(row.response_json) as StorableResponse).output;
      output.forEach((item, i) => {
        if (sendable(item, row.upstream_stored)) items.push({ item, owner: id, place: `out${i}` });
      });
    }
    return items;
  }

  private annotate(turn: Turn, response: StorableResponse): void {
    response.store = turn.store;
    response.previous_response_id = turn.previousResponseId;
    if (turn.conversationId !== null) response.conversation = { id: turn.conversationId };
  }

  /**
   * Adds the turn's input and the response's output to its conversation (a failed response adds
   * nothing). A failed write does not fail the call: it is logged.
   */
  private async addToConversation(turn: Turn, response: StorableResponse, upstreamStored: boolean) {
    if (turn.conversationId === null || !this.deps.conversations || response.status === 'failed') return;
    try {
      const added = await this.deps.conversations.append(
        turn.scope,
        turn.conversationId,
        turn.input,
        response.output,
        upstreamStored,
      );
      if (!added)
        turn.log.warn(
          { conversationId: turn.conversationId },
          'the conversation is gone; the turn was not added',
        );
    } catch (err) {
      turn.log.warn(
        { err, conversationId: turn.conversationId },
        'adding the turn to its conversation failed',
      );
    }
    this.purgeNowAndThen(turn.log, this.now());
  }

  /** Writes the response; false (logged) when the database refused it. */
  private async write(turn: Turn, response: StorableResponse, provider: string, upstreamStored: boolean) {
    if (response.status === 'failed') return false;
    const now = this.now();
    try {
      // Inside the try: a body too deeply nested to serialize is refused here, not as a 500.
      const row: StoredResponseRow = {
        id: response.id,
        organization_id: turn.scope.organizationId,
        workspace_id: turn.scope.workspaceId,
        provider,
        upstream_stored: upstreamStored ? 1 : 0,
        previous_response_id: turn.previousResponseId,
        chain_json: JSON.stringify(turn.chain),
        input_json: JSON.stringify(turn.input),
        response_json: JSON.stringify(response),
        created_at: now,
        expires_at: now + this.deps.retentionMs,
      };
      const items = response.output.flatMap((item) => {
        const id = (item as { id?: unknown }).id;
        return typeof id === 'string' && id ? [{ id, item_json: JSON.stringify(item) }] : [];
      });
      await insertResponse(this.deps.db, row, items);
    } catch (err) {
      turn.log.warn({ err, responseId: response.id }, 'storing the response failed; it cannot be referenced');
      return false;
    }
    this.purgeNowAndThen(turn.log, now);
    return true;
  }

  /** Expired rows go on the first write after each `purgeEveryMs` (no timer to start or stop). */
  private purgeNowAndThen(log: Log, now: number): void {
    if (now - this.lastPurge < (this.deps.purgeEveryMs ?? 10 * 60_000)) return;
    this.lastPurge = now;
    this.purgeExpired().catch((err) => log.warn({ err }, 'purging expired stored responses failed'));
  }
}
