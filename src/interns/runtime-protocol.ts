/**
 * The protocol between the gateway and an intern's runtime (a child process on loopback). Both
 * directions carry the runtime's token: the gateway sends it as `x-runtime-token` to the runtime;
 * the runtime sends it as `Authorization: Bearer <token>` on its callbacks to the gateway.
 *
 * Gateway → runtime (RUNTIME_PATHS; the runtime refuses any of them without the token, 401):
 * - GET  /_runtime/health → 200 {ok: true, model}
 * - POST /_runtime/turns  TurnRequest →
 *     200 application/x-ndjson: RuntimeEvent per line, ending with exactly one `end` or `paused`
 *         (closing the request mid-stream cancels the run);
 *     202 {steered: true} when a user message arrives while a run is active on the session (the
 *         message joins that run before its next model step);
 *     409/410/400 TurnRefusal when the turn cannot start (nothing was streamed).
 *
 * Runtime → gateway callbacks (CALLBACK_PATHS, on the gateway's own port):
 * - POST /internal/runtime/chat/completions — an OpenAI chat-completions body (non-streaming) with
 *     the turn's run grant (RUN_GRANT_HEADER); run through the routing engine as the key whose chat
 *     request issued the grant, billed and guarded like any call of that key.
 * - POST /internal/runtime/egress EgressRequest → 200 EgressResponse, or 403 EgressRefusal when a
 *     secret placeholder would go to a host it is not bound to, or over plain HTTP or to a port
 *     the secret does not allow (nothing is sent), or 400/502.
 *
 * Secret placeholders: `{{vault:NAME}}` in the URL or a header value of an egress request. The
 * runtime never holds secret values; the gateway substitutes them for allowed hosts only and
 * removes them from what the destination answers.
 */

export const RUNTIME_PATHS = { health: '/_runtime/health', turns: '/_runtime/turns' } as const;
export const CALLBACK_PATHS = {
  chat: '/internal/runtime/chat/completions',
  egress: '/internal/runtime/egress',
} as const;
export const RUNTIME_TOKEN_HEADER = 'x-runtime-token';
/**
 * The run grant a runtime's model callbacks carry: the gateway issues one per chat request and
 * bills and guards the model calls made under it as the key that sent that request.
 */
export const RUN_GRANT_HEADER = 'x-gatehouse-run-grant';

export type ApprovalMode = 'manual' | 'self-drive';

/** Starts a run (user message) or answers the paused run's interaction (tool message). */
export interface TurnRequest {
  session_id: string;
  approval_mode: ApprovalMode;
  /**
   * Who is calling, as an opaque id of their key: a session belongs to the key that started it,
   * and a turn from anyone else is refused (404 not_found) as if the session did not exist.
   */
  owner: string;
  /** The run grant the run's model calls send back (RUN_GRANT_HEADER); valid while this turn streams. */
  grant: string;
  message:
    | { role: 'user'; content: string }
    | {
        role: 'tool';
        /** The interaction id the runtime sent in its `interaction` event. */
        tool_call_id: string;
        content: string;
      };
}

/** Why a turn could not start (digest §6.3 reasons). */
export interface TurnRefusal {
  reason:
    | 'busy' // 409: a run is streaming on this session and the message is a tool reply
    | 'interaction_unknown' // 409: no interaction of this session has that id
    | 'interaction_not_pending' // 409: the interaction was already answered
    | 'run_ended' // 410: the paused run was cancelled (its interaction deadline passed)
    | 'not_found' // 404: the session belongs to another caller
    | 'bad_request'; // 400: e.g. a tool message on a session with nothing paused
  message: string;
}

/** What an interaction asks (the arguments of the gateway.provide_input tool call). */
export type InteractionArguments =
  | {
      kind: 'permission';
      /** The tool the intern wants to run (`http_request`, `write_file`, `shell`, …), or null. */
      operation: string | null;
      options: ('allow_once' | 'allow_always' | 'reject')[];
    }
  | {
      kind: 'elicitation';
      message: string;
      fields: { name: string; type: 'string'; description?: string }[];
    };

export interface RunUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost?: number;
  prompt_tokens_details?: { cached_tokens: number };
}

export type RuntimeEvent =
  /** The model id the runtime runs (first event of every turn). */
  | { type: 'model'; model: string }
  | { type: 'content'; text: string }
  /** The model's reasoning, and the runtime's account of each tool it runs and its outcome. */
  | { type: 'reasoning'; text: string }
  /** The run pauses until a tool message answers `id`; the stream ends after this event. */
  | { type: 'paused'; id: string; arguments: InteractionArguments }
  /** The run finished (`stop`) or failed (`error`); usage sums every model call of the run. */
  | {
      type: 'end';
      finish_reason: 'stop' | 'error';
      usage: RunUsage | null;
      error?: { code: number; message: string; reason: string; retryable: boolean };
    };

/** An HTTP request the intern's http_request tool asks the gateway to send. */
export interface EgressRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface EgressResponse {
  status: number;
  headers: Record<string, string>;
  /** The response text (UTF-8), cut at the egress size limit; secret values replaced by `[REDACTED]`. */
  body: string;
  truncated: boolean;
}

export interface EgressRefusal {
  error: {
    code:
      | 'host_not_allowed'
      | 'secret_unknown'
      | 'address_not_allowed'
      | 'scheme_not_allowed'
      | 'port_not_allowed';
    message: string;
  };
}
