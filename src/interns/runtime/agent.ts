import { randomBytes } from 'node:crypto';
import type {
  InteractionArguments,
  RuntimeEvent,
  RunUsage,
  TurnRefusal,
  TurnRequest,
} from '../runtime-protocol.js';
import type { RuntimeConfig } from './config.js';
import type { Workspace } from './files.js';
import { addUsage, ModelCallError, type ModelClient } from './model-client.js';
import {
  emptyUsage,
  type ModelToolCall,
  type PendingInteraction,
  type Session,
  type SessionStore,
  type TranscriptMessage,
} from './sessions.js';
import { ASK_USER, describeCall, runTool, toolDefinitions, toolGuide } from './tools.js';

export type Emit = (event: RuntimeEvent) => void;

/** What a turn request leads to: a refusal, a steered message, or a run to stream. */
export type TurnOutcome =
  | { kind: 'refused'; status: number; refusal: TurnRefusal }
  | { kind: 'steered' }
  | { kind: 'run'; run: (emit: Emit, signal: AbortSignal) => Promise<void> };

export interface AgentDeps {
  config: RuntimeConfig;
  sessions: SessionStore;
  workspace: Workspace;
  model: Pick<ModelClient, 'complete'>;
  log?: (line: string) => void;
}

/** A run streaming right now on a session. */
interface ActiveRun {
  controller: AbortController;
  /** The run grant its model calls carry (the caller that started or resumed it is billed). */
  grant: string;
  /** User messages steered into the run; they join it before its next model step. */
  steer: string[];
}

type Decision = 'allow_once' | 'allow_always' | 'reject';

const refuse = (status: number, reason: TurnRefusal['reason'], message: string): TurnOutcome => ({
  kind: 'refused',
  status,
  refusal: { reason, message },
});

/** A permission answer: `allow`, `allow_once`, `allow_always`, `reject`, `deny` (any case), or JSON naming one. */
export function parseDecision(answer: string): Decision | null {
  let text = answer.trim();
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'string') text = parsed;
    else if (parsed && typeof parsed === 'object') {
      const o = parsed as Record<string, unknown>;
      const v = o.decision ?? o.option ?? o.answer ?? o.choice ?? o.kind ?? o.value;
      if (typeof v === 'string') text = v;
    }
  } catch {}
  const word = text
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
  if (['allow', 'allow_once', 'once', 'yes', 'approve'].includes(word)) return 'allow_once';
  if (['allow_always', 'always'].includes(word)) return 'allow_always';
  if (['reject', 'deny', 'no', 'refuse'].includes(word)) return 'reject';
  return null;
}

function elicitationFields(raw: unknown): { name: string; type: 'string'; description?: string }[] {
  if (!Array.isArray(raw)) return [];
  const out: { name: string; type: 'string'; description?: string }[] = [];
  for (const f of raw) {
    if (typeof f === 'string' && f) out.push({ name: f, type: 'string' });
    else if (f && typeof f === 'object' && typeof (f as { name?: unknown }).name === 'string') {
      const { name, description } = f as { name: string; description?: unknown };
      out.push({ name, type: 'string', ...(typeof description === 'string' ? { description } : {}) });
    }
  }
  return out;
}

function parseArgs(call: ModelToolCall): Record<string, unknown> | null {
  try {
    const v = JSON.parse(call.function.arguments || '{}') as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The agent loop of one intern: runs turns on sessions (runtime-protocol.ts), pauses on
 * interactions (ask_user; permission in manual mode) and cancels paused runs whose deadline passed.
 */
export class Agent {
  private readonly active = new Map<string, ActiveRun>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Set by close(): runs aborted from now on end as run_ended for their still-connected callers. */
  private closing = false;
  private readonly systemPrompt: string;

  constructor(private readonly deps: AgentDeps) {
    const { config } = deps;
    const instructions = config.instructions?.trim()
      ? config.instructions.trim()
      : `You are ${config.name}, a helpful intern.`;
    this.systemPrompt = `${instructions}\n\n${toolGuide(config.shell)}`;
  }

  private log(line: string) {
    this.deps.log?.(line);
  }

  /** Re-arms the deadlines of the sessions paused on disk (after a restart). */
  restore(): void {
    for (const s of this.deps.sessions.paused()) this.arm(s);
  }

  /** Cancels the running runs and the deadline timers (shutdown). Paused sessions stay on disk. */
  close(): void {
    this.closing = true;
    for (const run of this.active.values()) run.controller.abort(new Error('runtime shutting down'));
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  /** Whether a run streams on the session now. */
  isRunning(sessionId: string): boolean {
    return this.active.has(sessionId);
  }

  /**
   * Decides what a turn does, synchronously: a run claims its session before this returns, so a
   * concurrent turn on the same session sees it (busy, or steering).
   */
  turn(req: TurnRequest): TurnOutcome {
    const { sessions } = this.deps;
    const id = req.session_id;
    const running = this.active.get(id);
    const mode = req.approval_mode === 'manual' ? 'manual' : 'self-drive';
    // A session is its starter's: to anyone else it does not exist (no steering, answering or reading).
    const existing = sessions.get(id);
    if (existing?.owner !== undefined && existing.owner !== req.owner)
      return refuse(404, 'not_found', `No session ${id}`);

    if (req.message.role === 'user') {
      const text = req.message.content;
      if (running) {
        running.steer.push(text);
        this.log(`session ${id}: message steered into the running run`);
        return { kind: 'steered' };
      }
      const s = existing ?? sessions.create(id, mode, req.owner);
      s.owner ??= req.owner; // a session written before sessions had owners: its next caller keeps it
      if (s.pending) this.closePending(s, 'superseded', 'The user sent a new message instead of answering.');
      s.ended = false;
      s.run = { approval_mode: mode, usage: emptyUsage(), steps: 0, billed: false };
      s.messages.push({ role: 'user', content: text });
      sessions.save(s);
      const run = this.claim(id, req.grant);
      return { kind: 'run', run: (emit, signal) => this.drive(s, run, null, emit, signal) };
    }

    const interactionId = req.message.tool_call_id;
    if (running)
      return refuse(409, 'busy', 'A run is streaming on this session; wait for it to pause or end');
    const s = sessions.get(id);
    const state = s?.interactions[interactionId];
    if (!s || !state)
      return refuse(409, 'interaction_unknown', `No interaction ${interactionId} on this session`);
    if (state === 'expired' || state === 'superseded' || (state === 'pending' && this.overdue(s)))
      return refuse(410, 'run_ended', 'The run waiting for this answer has ended');
    const pending = s.pending;
    if (state !== 'pending' || !pending || pending.id !== interactionId)
      return refuse(409, 'interaction_not_pending', `Interaction ${interactionId} was already answered`);

    this.disarm(id);
    s.interactions[interactionId] = 'answered';
    s.pending = null;
    sessions.save(s);
    const run = this.claim(id, req.grant);
    const answer = { pending, text: req.message.content };
    return { kind: 'run', run: (emit, signal) => this.drive(s, run, answer, emit, signal) };
  }

  /** A paused session whose deadline passed (its timer may not have fired yet): cancel it now. */
  private overdue(s: Session): boolean {
    if (!s.pending || Date.now() < s.pending.deadline) return false;
    this.expire(s.id);
    return true;
  }

  private claim(id: string, grant: string): ActiveRun {
    const run: ActiveRun = { controller: new AbortController(), steer: [], grant };
    this.active.set(id, run);
    return run;
  }

  private async drive(
    s: Session,
    run: ActiveRun,
    answer: { pending: PendingInteraction; text: string } | null,
    emit: Emit,
    signal: AbortSignal,
  ): Promise<void> {
    const onAbort = () => run.controller.abort(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const ctl = run.controller.signal;
    emit({ type: 'model', model: this.deps.config.model });
    try {
      if (answer && (await this.answer(s, run, answer.pending, answer.text, emit, ctl))) return;
      await this.loop(s, run, emit, ctl);
    } catch (err) {
      if (ctl.aborted) {
        this.cancelled(s, run);
        this.log(`session ${s.id}: run cancelled`);
        // The intern ends the run itself (suspended, or the gateway stopping): the caller, still
        // connected, hears it as run_ended rather than a severed stream.
        if (this.closing && !signal.aborted) {
          emit({
            type: 'end',
            finish_reason: 'error',
            usage: this.usage(s),
            error: {
              code: 410,
              message: 'The intern stopped while this run was going; the run ended',
              reason: 'run_ended',
              retryable: false,
            },
          });
        }
        return;
      }
      const known = err instanceof ModelCallError;
      const code = known ? err.status : 500;
      this.finishWithError(s, run, emit, {
        code,
        message: known ? err.message : `The run failed: ${(err as Error).message}`,
        reason: 'turn_failed',
        retryable: code === 429 || code >= 500,
      });
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.active.delete(s.id);
      this.deps.sessions.save(s);
    }
  }

  /** Model steps until the run stops, pauses or fails. */
  private async loop(s: Session, run: ActiveRun, emit: Emit, signal: AbortSignal): Promise<void> {
    const { config, sessions, model } = this.deps;
    const tools = toolDefinitions(config.shell);
    for (;;) {
      for (const text of [...s.queued.splice(0), ...run.steer.splice(0)])
        s.messages.push({ role: 'user', content: text });
      if (s.run.steps >= config.maxSteps) {
        this.finishWithError(s, run, emit, {
          code: 500,
          message: `The run stopped after ${config.maxSteps} model steps without finishing`,
          reason: 'turn_failed',
          retryable: false,
        });
        return;
      }
      s.run.steps++;
      sessions.save(s);
      const reply = await model.complete(
        [{ role: 'system', content: this.systemPrompt }, ...s.messages],
        tools,
        signal,
        run.grant,
      );
      if (reply.usage) addUsage(s.run.usage, reply.usage);
      s.run.billed = true;
      const msg: TranscriptMessage = { role: 'assistant', content: reply.content };
      if (reply.toolCalls.length) msg.tool_calls = reply.toolCalls;
      if (reply.reasoning) msg.reasoning = reply.reasoning;
      if (reply.reasoningDetails) msg.reasoning_details = reply.reasoningDetails;
      s.messages.push(msg);
      sessions.save(s);
      if (reply.reasoning) emit({ type: 'reasoning', text: reply.reasoning });
      if (reply.content) emit({ type: 'content', text: reply.content });
      if (reply.toolCalls.length === 0) {
        if (run.steer.length) continue;
        emit({ type: 'end', finish_reason: 'stop', usage: this.usage(s) });
        return;
      }
      if (await this.runCalls(s, run, reply.toolCalls, emit, signal)) return;
    }
  }

  private usage(s: Session): RunUsage | null {
    return s.run.billed ? { ...s.run.usage } : null;
  }

  /** Runs tool calls in order; true when one paused the run (the rest wait in the pending interaction). */
  private async runCalls(
    s: Session,
    run: ActiveRun,
    calls: ModelToolCall[],
    emit: Emit,
    signal: AbortSignal,
  ): Promise<boolean> {
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i] as ModelToolCall;
      const name = call.function.name;
      const args = parseArgs(call);
      if (!args) {
        this.toolResult(s, call, 'Error: the arguments are not a JSON object');
        emit({ type: 'reasoning', text: `${describeCall(name, {})} → error: invalid arguments\n` });
        continue;
      }
      const remaining = calls.slice(i + 1);
      if (name === ASK_USER) {
        const message = typeof args.message === 'string' ? args.message : '';
        this.pause(s, run, call, remaining, emit, {
          kind: 'elicitation',
          message,
          fields: elicitationFields(args.fields),
        });
        return true;
      }
      if (s.run.approval_mode === 'manual' && !s.allowed_always.includes(name)) {
        this.pause(s, run, call, remaining, emit, {
          kind: 'permission',
          operation: name,
          options: ['allow_once', 'allow_always', 'reject'],
        });
        return true;
      }
      await this.execute(s, call, args, emit, signal);
    }
    return false;
  }

  private async execute(
    s: Session,
    call: ModelToolCall,
    args: Record<string, unknown>,
    emit: Emit,
    signal: AbortSignal,
  ): Promise<void> {
    const { config, workspace } = this.deps;
    const out = await runTool(call.function.name, args, { config, workspace, signal });
    this.toolResult(s, call, out.result);
    emit({ type: 'reasoning', text: `${describeCall(call.function.name, args)} → ${out.outcome}\n` });
    for (const note of out.notes) emit({ type: 'reasoning', text: `${note}\n` });
  }

  private toolResult(s: Session, call: ModelToolCall, content: string): void {
    s.messages.push({ role: 'tool', tool_call_id: call.id, content });
    this.deps.sessions.save(s);
  }

  /** Resumes a paused run with the user's answer; true when it paused again. */
  private async answer(
    s: Session,
    run: ActiveRun,
    p: PendingInteraction,
    text: string,
    emit: Emit,
    signal: AbortSignal,
  ): Promise<boolean> {
    const name = p.call.function.name;
    const args = parseArgs(p.call) ?? {};
    if (p.arguments.kind === 'elicitation') {
      this.toolResult(s, p.call, text);
      emit({ type: 'reasoning', text: `${describeCall(name, args)} → answered\n` });
    } else {
      const decision = parseDecision(text);
      if (decision === 'allow_always' && !s.allowed_always.includes(name)) s.allowed_always.push(name);
      if (decision === 'allow_once' || decision === 'allow_always') {
        await this.execute(s, p.call, args, emit, signal);
      } else {
        const why = decision === 'reject' ? 'refused' : `did not allow it (answer: ${text.slice(0, 80)})`;
        this.toolResult(
          s,
          p.call,
          `The user ${why}: permission to run ${name} was not given. Do not retry it.`,
        );
        emit({ type: 'reasoning', text: `${describeCall(name, args)} → refused by the user\n` });
      }
    }
    return this.runCalls(s, run, p.remaining, emit, signal);
  }

  private pause(
    s: Session,
    run: ActiveRun,
    call: ModelToolCall,
    remaining: ModelToolCall[],
    emit: Emit,
    args: InteractionArguments,
  ): void {
    const id = `int_${randomBytes(12).toString('hex')}`;
    s.pending = {
      id,
      arguments: args,
      call,
      remaining,
      deadline: Date.now() + this.deps.config.interactionTimeoutMs,
    };
    s.interactions[id] = 'pending';
    // Messages steered in meanwhile join the run when it resumes (after the pending tool results).
    s.queued.push(...run.steer.splice(0));
    this.deps.sessions.save(s);
    this.arm(s);
    this.log(`session ${s.id}: paused on ${args.kind} ${id}`);
    emit({ type: 'paused', id, arguments: args });
  }

  private arm(s: Session): void {
    if (!s.pending) return;
    this.disarm(s.id);
    const t = setTimeout(() => this.expire(s.id), Math.max(0, s.pending.deadline - Date.now()));
    t.unref();
    this.timers.set(s.id, t);
  }

  private disarm(id: string): void {
    const t = this.timers.get(id);
    if (t) clearTimeout(t);
    this.timers.delete(id);
  }

  /** The interaction deadline passed: the paused run is cancelled; a later answer gets run_ended. */
  private expire(id: string): void {
    this.disarm(id);
    const s = this.deps.sessions.get(id);
    if (!s?.pending || this.active.has(id)) return;
    this.closePending(s, 'expired', 'No answer came before the deadline; the run was cancelled.');
    s.ended = true;
    this.deps.sessions.save(s);
    this.log(`session ${id}: interaction deadline passed, run ended`);
  }

  /** Closes a pending interaction: its tool call and the ones after it get `note` as their result. */
  private closePending(s: Session, state: 'expired' | 'superseded', note: string): void {
    const p = s.pending;
    if (!p) return;
    this.disarm(s.id);
    s.interactions[p.id] = state;
    for (const call of [p.call, ...p.remaining])
      s.messages.push({ role: 'tool', tool_call_id: call.id, content: note });
    for (const text of s.queued.splice(0)) s.messages.push({ role: 'user', content: text });
    s.pending = null;
  }

  /** The client went away mid-run: tool calls left without a result get one; steered messages are kept. */
  private cancelled(s: Session, run: ActiveRun): void {
    this.completeToolResults(s, 'The run was cancelled before this tool ran.');
    for (const text of [...s.queued.splice(0), ...run.steer.splice(0)])
      s.messages.push({ role: 'user', content: text });
  }

  private completeToolResults(s: Session, note: string): void {
    const at = s.messages.findLastIndex((m) => m.role === 'assistant');
    const last = s.messages[at];
    if (!last?.tool_calls?.length) return;
    const answered = new Set(s.messages.slice(at + 1).map((m) => m.tool_call_id));
    for (const call of last.tool_calls) {
      if (!answered.has(call.id)) s.messages.push({ role: 'tool', tool_call_id: call.id, content: note });
    }
  }

  private finishWithError(
    s: Session,
    run: ActiveRun,
    emit: Emit,
    error: { code: number; message: string; reason: string; retryable: boolean },
  ): void {
    this.completeToolResults(s, 'The run failed before this tool ran.');
    for (const text of [...s.queued.splice(0), ...run.steer.splice(0)])
      s.messages.push({ role: 'user', content: text });
    this.log(`session ${s.id}: run failed (${error.code}): ${error.message}`);
    emit({ type: 'end', finish_reason: 'error', usage: this.usage(s), error });
  }
}
