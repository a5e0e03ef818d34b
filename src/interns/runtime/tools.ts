import type { EgressRequest } from '../runtime-protocol.js';
import { RUNTIME_CONFIG_FILE, type RuntimeConfig, SESSIONS_DIR } from './config.js';
import { sendThroughGateway } from './egress-client.js';
import { FileRefusal, type Workspace } from './files.js';
import type { ToolDefinition } from './model-client.js';
import { SANDBOX_WORKDIR } from './sandbox.js';
import { runShell } from './shell.js';

/** The tool that pauses the run with a question to the user (never needs permission). */
export const ASK_USER = 'ask_user';

const SHELL_TIMEOUT_MS = 30_000;
const SHELL_CAP = 16 * 1024;
/** Longest tool result kept in the transcript (and sent back to the model). */
const RESULT_CAP = 32 * 1024;

const fn = (name: string, description: string, properties: Record<string, unknown>, required: string[]) =>
  ({
    type: 'function',
    function: {
      name,
      description,
      parameters: { type: 'object', properties, required, additionalProperties: false },
    },
  }) satisfies ToolDefinition;

/** The tools offered to the model (`shell` only when the operator enabled it). */
export function toolDefinitions(shell: boolean): ToolDefinition[] {
  const tools: ToolDefinition[] = [
    fn(
      'http_request',
      'Send an HTTP request. Write secrets as {{vault:NAME}} in the URL path/query or a header value; ' +
        'the gateway fills them in only for the hosts each secret is bound to, over https:// unless the secret allows http.',
      {
        method: { type: 'string', description: 'GET, POST, PUT, PATCH, DELETE, HEAD' },
        url: { type: 'string', description: 'Absolute http(s) URL' },
        headers: { type: 'object', additionalProperties: { type: 'string' } },
        body: { type: 'string' },
      },
      ['method', 'url'],
    ),
    fn(
      'read_file',
      'Read a text file of your working directory.',
      { path: { type: 'string', description: 'Path relative to the working directory' } },
      ['path'],
    ),
    fn(
      'write_file',
      'Create or replace a text file in your working directory (parent folders are created).',
      { path: { type: 'string' }, content: { type: 'string' } },
      ['path', 'content'],
    ),
    fn(
      'list_files',
      'List the entries of a folder of your working directory (folders end with /).',
      { path: { type: 'string', description: 'Folder, default the working directory' } },
      [],
    ),
    fn(
      ASK_USER,
      'Ask the user a question and wait for the answer (the answer is this tool’s result).',
      {
        message: { type: 'string' },
        fields: {
          type: 'array',
          items: {
            type: 'object',
            properties: { name: { type: 'string' }, description: { type: 'string' } },
            required: ['name'],
          },
        },
      },
      ['message'],
    ),
  ];
  if (shell) {
    tools.push(
      fn(
        'shell',
        'Run a bash command in your working directory (30 s limit, output capped).',
        { command: { type: 'string' } },
        ['command'],
      ),
    );
  }
  return tools;
}

/** A short guide appended to the intern's instructions in the system prompt. */
export function toolGuide(shell: boolean): string {
  return [
    'You work through tools. Files: read_file, write_file, list_files (paths relative to your working directory).',
    'Web: http_request; secrets from your vault are written as {{vault:NAME}} and only reach the hosts they are bound to.',
    shell
      ? 'Commands: shell runs bash in your working directory, in a sandbox: no network (use http_request), and only your working directory and /tmp are writable.'
      : 'There is no shell tool.',
    'When you need a decision or information from the user, call ask_user and wait for the answer.',
  ].join('\n');
}

export interface ToolContext {
  config: RuntimeConfig;
  workspace: Workspace;
  signal: AbortSignal;
}

export interface ToolOutcome {
  /** The tool message sent back to the model. */
  result: string;
  /** How it went, for the run's account (`ok`, `refused: …`, `error: …`). */
  outcome: string;
  /** Extra reasoning lines (an egress refusal, said plainly). */
  notes: string[];
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const capResult = (s: string) =>
  s.length > RESULT_CAP ? `${s.slice(0, RESULT_CAP)}\n[… truncated: ${s.length} characters in all]` : s;
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** `name(short args)` for the run's account of a tool call. */
export function describeCall(name: string, args: Record<string, unknown>): string {
  switch (name) {
    case 'http_request':
      return `http_request(${String(args.method ?? 'GET').toUpperCase()} ${clip(String(args.url ?? ''), 100)})`;
    case 'write_file':
      return `write_file(${clip(String(args.path ?? ''), 80)}, ${str(args.content)?.length ?? 0} chars)`;
    case 'read_file':
    case 'list_files':
      return `${name}(${clip(String(args.path ?? '.'), 80)})`;
    case 'shell':
      return `shell(${clip(String(args.command ?? ''), 80)})`;
    case ASK_USER:
      return `ask_user(${clip(String(args.message ?? ''), 80)})`;
    default:
      return `${clip(name, 40)}(…)`;
  }
}

const ok = (result: string, outcome = 'ok'): ToolOutcome => ({
  result: capResult(result),
  outcome,
  notes: [],
});
const failed = (message: string): ToolOutcome => ({
  result: message,
  outcome: clip(message, 200),
  notes: [],
});

/** Runs one tool call (not ask_user, which pauses). Failures become the tool's result, never throw. */
export async function runTool(
  name: string,
  args: Record<string, unknown>,
  ctx: ToolContext,
): Promise<ToolOutcome> {
  try {
    switch (name) {
      case 'read_file':
        return ok(await ctx.workspace.read(args.path));
      case 'write_file': {
        const bytes = await ctx.workspace.write(args.path, args.content);
        return ok(`Wrote ${bytes} bytes to ${String(args.path)}`, `ok (${bytes} bytes)`);
      }
      case 'list_files': {
        const entries = await ctx.workspace.list(args.path);
        return ok(entries.length ? entries.join('\n') : '(empty)', `ok (${entries.length} entries)`);
      }
      case 'shell':
        return await shell(args, ctx);
      case 'http_request':
        return await httpRequest(args, ctx);
      default:
        return failed(`Error: there is no tool named ${clip(name, 40)}`);
    }
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    if (err instanceof FileRefusal) return failed(err.message);
    return failed(`Error: ${(err as Error).message}`);
  }
}

async function shell(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  if (!ctx.config.shell) return failed('Refused: the shell tool is not enabled for this intern');
  const command = str(args.command);
  if (!command) return failed('Error: command must be a non-empty string');
  const r = await runShell(command, {
    sandbox: {
      workdir: ctx.config.workdir,
      hiddenDirs: [SESSIONS_DIR],
      hiddenFiles: [RUNTIME_CONFIG_FILE],
    },
    env: {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: SANDBOX_WORKDIR,
      TERM: 'dumb',
      LANG: 'C.UTF-8',
    },
    timeoutMs: SHELL_TIMEOUT_MS,
    capBytes: SHELL_CAP,
    signal: ctx.signal,
  });
  const status = r.timedOut ? `timed out after ${SHELL_TIMEOUT_MS / 1000} s` : `exit code ${r.code}`;
  const output = r.output + (r.truncated ? `\n[… output truncated at ${SHELL_CAP} bytes]` : '');
  return ok(`${status}\n${output}`, r.timedOut ? status : r.code === 0 ? 'ok' : status);
}

async function httpRequest(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  const url = str(args.url);
  if (!url) return failed('Error: url must be a string');
  const method = (str(args.method) ?? 'GET').toUpperCase();
  const req: EgressRequest = { method, url };
  if (args.headers !== undefined && args.headers !== null) {
    if (typeof args.headers !== 'object' || Array.isArray(args.headers))
      return failed('Error: headers must be an object of strings');
    req.headers = Object.fromEntries(Object.entries(args.headers).map(([k, v]) => [k, String(v)]));
  }
  if (args.body !== undefined && args.body !== null)
    req.body = typeof args.body === 'string' ? args.body : JSON.stringify(args.body);
  const out = await sendThroughGateway(ctx.config.gatewayUrl, ctx.config.token, req, ctx.signal);
  if (out.kind === 'refused') {
    const why = `${out.refusal.code}: ${out.refusal.message}`;
    return {
      result: `The gateway refused this request (${why}). Nothing was sent.`,
      outcome: `refused (${out.refusal.code})`,
      notes: [`The HTTP request to ${hostOf(url)} was refused by the gateway — ${why}`],
    };
  }
  if (out.kind === 'failed') return failed(`Error (${out.status}): ${out.message}`);
  const r = out.response;
  return ok(JSON.stringify(r), `HTTP ${r.status}${r.truncated ? ' (truncated)' : ''}`);
}

function hostOf(url: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(url);
  return m?.[1]?.replace(/^.*@/, '') || 'its destination';
}
