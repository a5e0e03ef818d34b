import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ApprovalMode, InteractionArguments, RunUsage } from '../runtime-protocol.js';

/** A chat message as the runtime keeps it and sends it to the model (OpenAI chat format). */
export interface TranscriptMessage {
  role: 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: ModelToolCall[];
  reasoning?: string;
  /** The provider's reasoning entries (signatures included), returned to it with this turn. */
  reasoning_details?: unknown[];
  tool_call_id?: string;
}

export interface ModelToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A run paused on an interaction: what it waits for and what it does once answered. */
export interface PendingInteraction {
  id: string;
  arguments: InteractionArguments;
  /** The model's tool call that paused (ask_user, or the tool awaiting permission). */
  call: ModelToolCall;
  /** Tool calls of the same assistant message not run yet. */
  remaining: ModelToolCall[];
  /** Epoch ms after which the run is cancelled. */
  deadline: number;
}

/** What happened to each interaction the session issued. */
export type InteractionState = 'pending' | 'answered' | 'expired' | 'superseded';

/** The state of the session's current (or last) run. */
export interface RunState {
  approval_mode: ApprovalMode;
  usage: RunUsage;
  /** Model calls made by the run. */
  steps: number;
  /** Whether any model call succeeded (usage is null otherwise). */
  billed: boolean;
}

export interface Session {
  id: string;
  /** The caller (an opaque id of their key) who started the session; only they continue it. */
  owner?: string;
  created_at: string;
  updated_at: string;
  messages: TranscriptMessage[];
  /** Tools the user allowed for the rest of the session (`allow_always`). */
  allowed_always: string[];
  interactions: Record<string, InteractionState>;
  pending: PendingInteraction | null;
  /** User messages steered into a run that then paused: they join it before its next model step. */
  queued: string[];
  /** The paused run was cancelled (its interaction deadline passed). */
  ended: boolean;
  run: RunState;
}

export const emptyUsage = (): RunUsage => ({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });

/** A file name for any session id (ids the client chose may hold any character). */
function fileNameOf(id: string): string {
  if (/^[A-Za-z0-9_-]{1,100}$/.test(id)) return `${id}.json`;
  return `h_${createHash('sha256').update(id).digest('hex')}.json`;
}

/**
 * Sessions on disk, one JSON file each under `<workdir>/.sessions/`, written atomically (a temp file
 * renamed over the old one) on every change, so a paused session survives a restart. Reads and
 * writes are synchronous: one intern's runtime has few sessions, and no two requests can interleave
 * between reading a session and claiming it.
 */
export class SessionStore {
  private readonly cache = new Map<string, Session>();
  readonly dir: string;

  constructor(workdir: string, dirName: string) {
    this.dir = join(workdir, dirName);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }

  get(id: string): Session | null {
    const cached = this.cache.get(id);
    if (cached) return cached;
    try {
      const s = JSON.parse(readFileSync(join(this.dir, fileNameOf(id)), 'utf8')) as Session;
      if (s.id !== id) return null;
      s.queued ??= [];
      this.cache.set(id, s);
      return s;
    } catch {
      return null;
    }
  }

  create(id: string, mode: ApprovalMode, owner: string): Session {
    const now = new Date().toISOString();
    const s: Session = {
      id,
      owner,
      created_at: now,
      updated_at: now,
      messages: [],
      allowed_always: [],
      interactions: {},
      pending: null,
      queued: [],
      ended: false,
      run: { approval_mode: mode, usage: emptyUsage(), steps: 0, billed: false },
    };
    this.cache.set(id, s);
    this.save(s);
    return s;
  }

  save(s: Session): void {
    s.updated_at = new Date().toISOString();
    const file = join(this.dir, fileNameOf(s.id));
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(s), { mode: 0o600 });
    renameSync(tmp, file);
  }

  /** Every session with a pending interaction (to re-arm deadlines after a restart). */
  paused(): Session[] {
    const out: Session[] = [];
    for (const name of readdirSync(this.dir)) {
      if (!name.endsWith('.json')) continue;
      try {
        const s = JSON.parse(readFileSync(join(this.dir, name), 'utf8')) as Session;
        if (!s.pending) continue;
        s.queued ??= [];
        const live = this.cache.get(s.id) ?? s;
        this.cache.set(s.id, live);
        out.push(live);
      } catch {
        // A torn or foreign file: not a session.
      }
    }
    return out;
  }
}
