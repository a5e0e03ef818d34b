/**
 * OpenAI Chat Completions (`POST /chat/completions`) at the edge: validates a caller body into a
 * canonical request. The canonical format IS Chat Completions, so this is a whitelist with checks:
 * only canonical fields are copied, each validated, so a malformed body is a precise 400 here rather
 * than an upstream error later.
 *
 * Normalised: `max_completion_tokens` ≡ `max_tokens` (both given and different → refused; the
 * result is in `max_tokens`); `reasoning_effort` → `reasoning.effort` (`none`: no reasoning);
 * legacy `functions` / `function_call` → `tools` / `tool_choice`; legacy assistant `function_call` → a tool call with a
 * synthesized id (`call_legacy_<message index>`) and `function` role messages → `tool` messages
 * answering the latest such call of that name; assistant `refusal` parts → text parts.
 * Assistant `reasoning_details` (the provider's reasoning state, signatures included, as Gatehouse
 * returned it) are kept: objects with a string `type`, known types checked, unknown types dropped
 * (`reasoning-details.ts`); each provider sends back only the entries of its own `format`.
 *
 * Documents: `file` parts (`file_data` as a data: URL or an http(s) URL, or `file_id`) — each
 * provider's wire carries them as its own kind of document. A `tool` message takes the parts a
 * user message takes (a tool result's screenshot, a PDF it read).
 *
 * Dropped and reported in `dropped`: `prediction` (predicted outputs only speed an answer up).
 *
 * Audio input: `input_audio` parts, for the providers that hear audio (OpenAI, Gemini). Video
 * input: OpenRouter's `video_url` parts (and their older name, `input_video`), for Gemini and the
 * OpenAI-format providers that take them as sent.
 *
 * An `allowed_tools` tool choice → only the tools it lists, with its mode as the tool choice.
 *
 * Web search: `web_search_options` and OpenRouter's `openrouter:web_search` tool become the
 * canonical `web_search` (web-search.ts); the provider runs its own search.
 *
 * Refused: `n` > 1, audio output (`audio`, `modalities` with audio), a non-empty `logit_bias`,
 * custom (non-function) tools, `reasoning.enabled: false` (the canonical request cannot switch
 * reasoning off), both `tools` and `functions`.
 *
 * Hints (carried; each provider maps what it can, see HINT_RULES in capabilities.ts):
 * OpenRouter-style `cache_control` breakpoints on content parts (or OpenAI's
 * `prompt_cache_breakpoint`, read as one), on tools and at the top level;
 * `prompt_cache_key`, `prompt_cache_retention`, `prompt_cache_options`, `service_tier`, `verbosity`,
 * `store`, `metadata`, `safety_identifier`, a tool's `eager_input_streaming` (Anthropic's).
 * `top_k` is carried too (refused by OpenAI, which has none).
 *
 * Ignored: Gatehouse-level fields the router reads from the raw body (`provider`, `models`,
 * `route`, `transforms`, `usage`, `debug`, …), unknown fields.
 */
import { chatAllowedTools, isAllowedToolsChoice, restrictTools } from './allowed-tools.js';
import {
  type ChatMessage,
  type ChatRequest,
  type ContentPart,
  IMAGE_DETAILS,
  type ReasoningConfig,
  type ResponseFormat,
  type ToolCall,
  type ToolChoice,
  type ToolDefinition,
  TranslationError,
} from './chat.js';
import { filePart } from './files.js';
import {
  cachedTextParts,
  openAiHints,
  optCacheControl,
  withCacheControl,
  withPartBreakpoint,
} from './hints.js';
import { parseReasoningDetails } from './reasoning-details.js';
import {
  arr,
  compact,
  fail,
  given,
  isObj,
  nonEmptyStr,
  type Obj,
  obj,
  oneOf,
  optBool,
  optNum,
  optStr,
  str,
  strArray,
} from './validate.js';
import { chatWebSearchOptions, mergeWebSearch, openRouterWebSearch, WEB_SEARCH_TOOL } from './web-search.js';

const EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;

const textParts = (v: unknown, path: string) => cachedTextParts(v, path, 'parts');

function userParts(v: unknown, path: string): ContentPart[] {
  return arr(v, path).map((raw, i): ContentPart => {
    const p = `${path}[${i}]`;
    const part = obj(raw, p);
    return withPartBreakpoint(userPart(part, p), part, p);
  });
}

function userPart(part: Obj, p: string): ContentPart {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: str(part.text, `${p}.text`) };
    case 'image_url': {
      const img = obj(part.image_url, `${p}.image_url`);
      const url = nonEmptyStr(img.url, `${p}.image_url.url`);
      if (!given(img.detail)) return { type: 'image_url', image_url: { url } };
      return {
        type: 'image_url',
        image_url: {
          url,
          detail: oneOf(img.detail, `${p}.image_url.detail`, IMAGE_DETAILS),
        },
      };
    }
    case 'input_audio': {
      const audio = obj(part.input_audio, `${p}.input_audio`);
      return {
        type: 'input_audio',
        input_audio: {
          data: nonEmptyStr(audio.data, `${p}.input_audio.data`),
          format: nonEmptyStr(audio.format, `${p}.input_audio.format`),
        },
      };
    }
    case 'file': {
      return filePart(obj(part.file, `${p}.file`), `${p}.file`);
    }
    case 'video_url':
    case 'input_video': {
      const video = obj(part.video_url, `${p}.video_url`);
      return { type: 'video_url', video_url: { url: nonEmptyStr(video.url, `${p}.video_url.url`) } };
    }
    default:
      return fail(`${p}.type`, `'${String(part.type)}' parts are not supported`);
  }
}

function toolCall(raw: unknown, path: string): ToolCall {
  const tc = obj(raw, path);
  if (given(tc.type) && tc.type !== 'function')
    fail(`${path}.type`, "only 'function' tool calls are supported");
  const fn = obj(tc.function, `${path}.function`);
  return {
    id: nonEmptyStr(tc.id, `${path}.id`),
    type: 'function',
    function: {
      name: nonEmptyStr(fn.name, `${path}.function.name`),
      arguments: str(fn.arguments, `${path}.function.arguments`),
    },
  };
}

function messages(v: unknown): ChatMessage[] {
  const input = arr(v, 'messages');
  if (input.length === 0) fail('messages', 'must not be empty');
  const legacyCalls: { id: string; name: string; answered: boolean }[] = [];
  return input.map((raw, i): ChatMessage => {
    const p = `messages[${i}]`;
    const m = obj(raw, p);
    const role = oneOf(m.role, `${p}.role`, [
      'system',
      'developer',
      'user',
      'assistant',
      'tool',
      'function',
    ] as const);
    const name = optStr(m.name, `${p}.name`);
    const withName = (msg: ChatMessage): ChatMessage =>
      name !== undefined && role !== 'function' ? { ...msg, name } : msg;
    switch (role) {
      case 'system':
      case 'developer':
        return withName({
          role,
          content: typeof m.content === 'string' ? m.content : textParts(m.content, `${p}.content`),
        });
      case 'user':
        return withName({
          role,
          content: typeof m.content === 'string' ? m.content : userParts(m.content, `${p}.content`),
        });
      case 'assistant': {
        if (given(m.audio)) fail(`${p}.audio`, 'audio responses are not supported');
        let content: ChatMessage['content'] = null;
        if (typeof m.content === 'string') content = m.content;
        else if (given(m.content)) {
          content = arr(m.content, `${p}.content`).map((rawPart, j): ContentPart => {
            const pp = `${p}.content[${j}]`;
            const part = obj(rawPart, pp);
            const text =
              part.type === 'text'
                ? str(part.text, `${pp}.text`)
                : part.type === 'refusal'
                  ? str(part.refusal, `${pp}.refusal`)
                  : fail(`${pp}.type`, "only 'text' and 'refusal' parts are allowed in assistant messages");
            return withPartBreakpoint({ type: 'text', text }, part, pp);
          });
        }
        const refusal = optStr(m.refusal, `${p}.refusal`);
        if (refusal && content === null) content = refusal;
        const msg: ChatMessage = { role, content };
        const calls: ToolCall[] = given(m.tool_calls)
          ? arr(m.tool_calls, `${p}.tool_calls`).map((tc, j) => toolCall(tc, `${p}.tool_calls[${j}]`))
          : [];
        if (given(m.function_call)) {
          const fc = obj(m.function_call, `${p}.function_call`);
          const id = `call_legacy_${i}`;
          const fnName = nonEmptyStr(fc.name, `${p}.function_call.name`);
          calls.push({
            id,
            type: 'function',
            function: { name: fnName, arguments: str(fc.arguments, `${p}.function_call.arguments`) },
          });
          legacyCalls.push({ id, name: fnName, answered: false });
        }
        if (calls.length) msg.tool_calls = calls;
        const reasoning = optStr(m.reasoning, `${p}.reasoning`);
        if (reasoning) msg.reasoning = reasoning;
        if (given(m.reasoning_details)) {
          const details = parseReasoningDetails(m.reasoning_details, `${p}.reasoning_details`);
          if (details.length) msg.reasoning_details = details;
        }
        return withName(msg);
      }
      case 'tool':
        // A tool result may hold images and documents (a screenshot, a PDF), as a user message may.
        return {
          role,
          tool_call_id: nonEmptyStr(m.tool_call_id, `${p}.tool_call_id`),
          content: typeof m.content === 'string' ? m.content : userParts(m.content, `${p}.content`),
        };
      case 'function': {
        const fnName = nonEmptyStr(m.name, `${p}.name`);
        const call = [...legacyCalls].reverse().find((c) => !c.answered && c.name === fnName);
        if (!call) fail(p, `function message '${fnName}' answers no preceding assistant function_call`);
        call.answered = true;
        return {
          role: 'tool',
          tool_call_id: call.id,
          content: given(m.content) ? str(m.content, `${p}.content`) : '',
        };
      }
      default:
        return fail(`${p}.role`, 'is not supported');
    }
  });
}

function functionDef(raw: unknown, path: string): ToolDefinition['function'] {
  const f = obj(raw, path);
  const fn: ToolDefinition['function'] = { name: nonEmptyStr(f.name, `${path}.name`) };
  const description = optStr(f.description, `${path}.description`);
  if (description !== undefined) fn.description = description;
  if (given(f.parameters)) fn.parameters = obj(f.parameters, `${path}.parameters`);
  const strict = optBool(f.strict, `${path}.strict`);
  if (strict !== undefined) fn.strict = strict;
  return fn;
}

/** The function tools; OpenRouter's `openrouter:web_search` becomes the request's `web_search`. */
function tools(b: Obj, req: ChatRequest, dropped: string[]): ToolDefinition[] | undefined {
  if (given(b.tools) && given(b.functions)) fail('functions', 'cannot be combined with tools');
  if (given(b.functions)) {
    return arr(b.functions, 'functions').map((f, i) => ({
      type: 'function',
      function: functionDef(f, `functions[${i}]`),
    }));
  }
  if (!given(b.tools)) return undefined;
  const out = arr(b.tools, 'tools').flatMap((raw, i): ToolDefinition[] => {
    const t = obj(raw, `tools[${i}]`);
    if (t.type === WEB_SEARCH_TOOL) {
      req.web_search = mergeWebSearch(req.web_search, openRouterWebSearch(t, `tools[${i}]`, dropped));
      return [];
    }
    if (t.type !== 'function')
      fail(`tools[${i}].type`, `'${String(t.type)}' tools are not supported (only function tools)`);
    const def = withCacheControl<ToolDefinition>(
      { type: 'function', function: functionDef(t.function, `tools[${i}].function`) },
      t.cache_control,
      `tools[${i}].cache_control`,
    );
    if (optBool(t.eager_input_streaming, `tools[${i}].eager_input_streaming`))
      def.eager_input_streaming = true;
    return [def];
  });
  return out.length ? out : undefined;
}

function toolChoice(b: Obj): ToolChoice | undefined {
  if (given(b.tool_choice) && given(b.function_call))
    fail('function_call', 'cannot be combined with tool_choice');
  if (given(b.function_call)) {
    const fc = b.function_call;
    if (typeof fc === 'string') return oneOf(fc, 'function_call', ['none', 'auto'] as const);
    return {
      type: 'function',
      function: { name: nonEmptyStr(obj(fc, 'function_call').name, 'function_call.name') },
    };
  }
  if (!given(b.tool_choice)) return undefined;
  const tc = b.tool_choice;
  if (typeof tc === 'string') return oneOf(tc, 'tool_choice', ['none', 'auto', 'required'] as const);
  const o = obj(tc, 'tool_choice');
  if (o.type !== 'function')
    fail('tool_choice.type', `'${String(o.type)}' is not supported (only 'function')`);
  return {
    type: 'function',
    function: {
      name: nonEmptyStr(obj(o.function, 'tool_choice.function').name, 'tool_choice.function.name'),
    },
  };
}

function responseFormat(v: unknown): ResponseFormat {
  const rf = obj(v, 'response_format');
  switch (rf.type) {
    case 'text':
      return { type: 'text' };
    case 'json_object':
      return { type: 'json_object' };
    case 'json_schema': {
      const js = obj(rf.json_schema, 'response_format.json_schema');
      const out: Extract<ResponseFormat, { type: 'json_schema' }>['json_schema'] = {
        name: nonEmptyStr(js.name, 'response_format.json_schema.name'),
      };
      const description = optStr(js.description, 'response_format.json_schema.description');
      if (description !== undefined) out.description = description;
      if (given(js.schema)) out.schema = obj(js.schema, 'response_format.json_schema.schema');
      const strict = optBool(js.strict, 'response_format.json_schema.strict');
      if (strict !== undefined) out.strict = strict;
      return { type: 'json_schema', json_schema: out };
    }
    default:
      return fail('response_format.type', "must be one of 'text', 'json_object', 'json_schema'");
  }
}

function reasoning(b: Obj): ReasoningConfig | undefined {
  let r: (Omit<ReasoningConfig, 'effort'> & { effort?: (typeof EFFORTS)[number] }) | undefined;
  if (given(b.reasoning)) {
    const o = obj(b.reasoning, 'reasoning');
    if (o.enabled === false) fail('reasoning.enabled', 'false is not supported; omit reasoning instead');
    optBool(o.enabled, 'reasoning.enabled');
    r = compact({
      effort: given(o.effort) ? oneOf(o.effort, 'reasoning.effort', EFFORTS) : undefined,
      max_tokens: optNum(o.max_tokens, 'reasoning.max_tokens', { integer: true, min: 1 }),
      exclude: optBool(o.exclude, 'reasoning.exclude'),
    });
  }
  if (given(b.reasoning_effort)) {
    const effort = oneOf(b.reasoning_effort, 'reasoning_effort', EFFORTS);
    if (r?.effort !== undefined && r.effort !== effort)
      fail('reasoning_effort', 'conflicts with reasoning.effort');
    r = { ...r, effort };
  }
  // `none` is OpenAI's (and OpenRouter's) "no reasoning": the request asks for none, as a
  // /responses call with that effort does.
  if (r?.effort === 'none') return undefined;
  return r as ReasoningConfig | undefined;
}

function refuseUnsupported(b: Obj): void {
  if (given(b.n) && b.n !== 1) throw new TranslationError('n > 1 is not supported');
  if (given(b.audio)) fail('audio', 'audio output is not supported');
  if (given(b.modalities) && strArray(b.modalities, 'modalities').some((m) => m !== 'text')) {
    fail('modalities', "only 'text' is supported");
  }
  if (isObj(b.logit_bias) && Object.keys(b.logit_bias).length) fail('logit_bias', 'is not supported');
}

/** Validates an OpenAI Chat Completions body into a canonical request (unknown fields ignored). */
export function chatRequestFromBody(body: unknown): ChatRequest {
  const b = obj(body, 'body');
  refuseUnsupported(b);
  const req: ChatRequest = { model: nonEmptyStr(b.model, 'model'), messages: messages(b.messages) };

  req.stream = optBool(b.stream, 'stream');
  if (given(b.stream_options)) {
    const so = obj(b.stream_options, 'stream_options');
    const includeUsage = optBool(so.include_usage, 'stream_options.include_usage');
    req.stream_options = includeUsage === undefined ? {} : { include_usage: includeUsage };
  }
  const maxTokens = optNum(b.max_tokens, 'max_tokens', { integer: true, min: 1 });
  const maxCompletion = optNum(b.max_completion_tokens, 'max_completion_tokens', { integer: true, min: 1 });
  if (maxTokens !== undefined && maxCompletion !== undefined && maxTokens !== maxCompletion) {
    fail('max_completion_tokens', 'conflicts with max_tokens (send one of them)');
  }
  req.max_tokens = maxCompletion ?? maxTokens;
  req.temperature = optNum(b.temperature, 'temperature', { min: 0, max: 2 });
  req.top_p = optNum(b.top_p, 'top_p', { min: 0, max: 1 });
  if (given(b.stop)) req.stop = typeof b.stop === 'string' ? b.stop : strArray(b.stop, 'stop');
  req.seed = optNum(b.seed, 'seed', { integer: true });
  req.presence_penalty = optNum(b.presence_penalty, 'presence_penalty', { min: -2, max: 2 });
  req.frequency_penalty = optNum(b.frequency_penalty, 'frequency_penalty', { min: -2, max: 2 });
  const dropped: string[] = [];
  if (given(b.web_search_options)) req.web_search = chatWebSearchOptions(b.web_search_options);
  req.tools = tools(b, req, dropped);
  // OpenAI's allowed_tools: the listed tools alone, with the choice's mode.
  if (isAllowedToolsChoice(b.tool_choice))
    Object.assign(req, restrictTools(req.tools, chatAllowedTools(b.tool_choice)));
  else req.tool_choice = toolChoice(b);
  req.parallel_tool_calls = optBool(b.parallel_tool_calls, 'parallel_tool_calls');
  if (given(b.response_format)) req.response_format = responseFormat(b.response_format);
  req.logprobs = optBool(b.logprobs, 'logprobs');
  req.top_logprobs = optNum(b.top_logprobs, 'top_logprobs', { integer: true, min: 0, max: 20 });
  req.reasoning = reasoning(b);
  req.user = optStr(b.user, 'user');
  req.top_k = optNum(b.top_k, 'top_k', { integer: true, min: 0 });
  req.cache_control = optCacheControl(b.cache_control, 'cache_control');
  Object.assign(req, openAiHints(b, { value: b.verbosity, path: 'verbosity' }));
  req.store = optBool(b.store, 'store');
  // Predicted outputs only speed the answer up: another provider goes without them.
  if (given(b.prediction)) dropped.push('prediction');
  if (dropped.length) req.dropped = dropped;
  return compact(req);
}
