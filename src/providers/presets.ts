/**
 * Vendor presets: OpenAI-compatible vendors configured by `kind` and a key alone
 * (`{ slug: groq, kind: groq, api_key_env: GROQ_API_KEY }`, or just `GROQ_API_KEY`). A preset
 * provider is an `openai-compatible` one (same adapter, same pass-through lane) with the vendor's
 * base URL, auth, model listing and the request fields the vendor refuses filled in.
 *
 * `rejects` lists what the vendor answers with a 4xx: those fields are taken out of the body before
 * it goes upstream and reported in `x-gatehouse-dropped-fields`. Each quirk cites the vendor's page.
 */

/** A field a vendor refuses (a Chat Completions name, as reported to the caller). */
export interface Quirk {
  /** `logprobs`, or `messages[].name` for a field of every message. */
  field: string;
  /** Values the vendor does take (`n: 1`); any other value is dropped. Absent: every value is. */
  accepts?: readonly unknown[];
  /** Only for upstream model ids matching this (DeepSeek's reasoner, xAI's reasoning models). */
  models?: RegExp;
}

/**
 * OpenRouter's reasoning on the assistant messages of a conversation sent back (`reasoning`,
 * `reasoning_details`): Gatehouse's translations read them, but on a Chat Completions lane they
 * would reach a provider as sent — where only one that speaks OpenRouter's format takes them;
 * others refuse the whole call (Mistral, DeepSeek and MiniMax answer such a message with a 400)
 * or could not use another model's reasoning. Left out there and reported as dropped.
 */
export const OPENROUTER_HISTORY: readonly Quirk[] = [
  { field: 'messages[].reasoning' },
  { field: 'messages[].reasoning_details' },
];

export interface Preset {
  /** The vendor's API root (overridden by `base_url`). */
  baseUrl: string;
  /** Prefix of the environment variables that configure it alone: `<ENV>_API_KEY`, `<ENV>_BASE_URL`. */
  env: string;
  /** `bearer`: a key is needed (sent as `Authorization: Bearer`); `none`: a local server, keyless. */
  auth: 'bearer' | 'none';
  /** Whether the vendor lists its models at `GET {base_url}/models` (model discovery on by default). */
  discover: boolean;
  /** The model data's vendor id that lists and prices its models. */
  modelData?: string;
  /** Whose per-vendor guardrail ZDR flag applies (default `other`). */
  vendor?: 'xai';
  rejects: readonly Quirk[];
  /** The vendor's own rerank API, when it is not Jina's `POST {base_url}/rerank` (providers/rerank.ts). */
  rerank?: 'cohere';
}

/** xAI's reasoning models (not the `-non-reasoning` variants). */
const GROK_REASONING = /^grok-(?:3-mini|4|code)(?!.*non-reasoning)/;

export const PRESETS = {
  groq: {
    baseUrl: 'https://api.groq.com/openai/v1',
    env: 'GROQ',
    auth: 'bearer',
    discover: true,
    modelData: 'groq',
    // https://console.groq.com/docs/openai ("Currently Unsupported OpenAI Features": 400 if supplied)
    rejects: [
      { field: 'logprobs' },
      { field: 'top_logprobs' },
      { field: 'logit_bias' },
      { field: 'messages[].name' },
      { field: 'n', accepts: [1] },
    ],
  },
  together: {
    baseUrl: 'https://api.together.xyz/v1',
    env: 'TOGETHER',
    auth: 'bearer',
    discover: true,
    modelData: 'together',
    // https://docs.together.ai/docs/openai-api-compatibility: no refused Chat Completions field.
    rejects: [],
  },
  fireworks: {
    baseUrl: 'https://api.fireworks.ai/inference/v1',
    env: 'FIREWORKS',
    auth: 'bearer',
    discover: true,
    modelData: 'fireworks',
    // https://docs.fireworks.ai/tools-sdks/openai-compatibility: no refused Chat Completions field.
    rejects: [],
  },
  deepseek: {
    baseUrl: 'https://api.deepseek.com',
    env: 'DEEPSEEK',
    auth: 'bearer',
    discover: true,
    modelData: 'deepseek',
    // https://api-docs.deepseek.com/guides/reasoning_model: on deepseek-reasoner, logprobs and
    // top_logprobs "will trigger an error" (temperature, top_p and penalties are accepted, ignored).
    rejects: [
      { field: 'logprobs', models: /^deepseek-reasoner/ },
      { field: 'top_logprobs', models: /^deepseek-reasoner/ },
    ],
  },
  xai: {
    baseUrl: 'https://api.x.ai/v1',
    env: 'XAI',
    auth: 'bearer',
    discover: true,
    modelData: 'x-ai',
    vendor: 'xai',
    // https://docs.x.ai/docs/guides/reasoning: reasoning models answer an error to presence_penalty,
    // frequency_penalty and stop; reasoning_effort is taken by grok-3-mini only.
    rejects: [
      { field: 'presence_penalty', models: GROK_REASONING },
      { field: 'frequency_penalty', models: GROK_REASONING },
      { field: 'stop', models: GROK_REASONING },
      { field: 'reasoning_effort', models: /^grok-(?:4|code)/ },
    ],
  },
  mistral: {
    baseUrl: 'https://api.mistral.ai/v1',
    env: 'MISTRAL',
    auth: 'bearer',
    discover: true,
    modelData: 'mistral',
    // https://docs.mistral.ai/api/#tag/chat/operation/chat_completion_v1_chat_completions_post:
    // the request schema forbids fields it does not define (422 "Extra inputs are not permitted").
    rejects: [{ field: 'user' }, { field: 'logit_bias' }, { field: 'logprobs' }, { field: 'top_logprobs' }],
  },
  cerebras: {
    baseUrl: 'https://api.cerebras.ai/v1',
    env: 'CEREBRAS',
    auth: 'bearer',
    discover: true,
    modelData: 'cerebras',
    // https://inference-docs.cerebras.ai/resources/openai ("Currently Unsupported OpenAI Features":
    // a 400 if supplied)
    rejects: [
      { field: 'frequency_penalty' },
      { field: 'presence_penalty' },
      { field: 'logit_bias' },
      { field: 'parallel_tool_calls' },
      { field: 'service_tier' },
    ],
  },
  perplexity: {
    baseUrl: 'https://api.perplexity.ai',
    env: 'PERPLEXITY',
    auth: 'bearer',
    // No model listing endpoint: the model data lists Sonar's models.
    discover: false,
    modelData: 'perplexity',
    // https://docs.perplexity.ai/api-reference/chat-completions-post: no tools, no log probabilities.
    rejects: [
      { field: 'tools' },
      { field: 'tool_choice' },
      { field: 'parallel_tool_calls' },
      { field: 'logprobs' },
      { field: 'top_logprobs' },
      { field: 'logit_bias' },
    ],
  },
  openrouter: {
    baseUrl: 'https://openrouter.ai/api/v1',
    env: 'OPENROUTER',
    auth: 'bearer',
    discover: true,
    modelData: 'openrouter',
    // https://openrouter.ai/docs/api-reference/parameters: unsupported parameters are ignored, not refused.
    rejects: [],
  },
  ollama: {
    baseUrl: 'http://127.0.0.1:11434/v1',
    env: 'OLLAMA',
    auth: 'none',
    discover: true,
    // https://docs.ollama.com/api/openai-compatibility: unsupported fields are ignored.
    rejects: [],
  },
  vllm: {
    baseUrl: 'http://127.0.0.1:8000/v1',
    env: 'VLLM',
    auth: 'none',
    discover: true,
    // https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html: OpenAI's parameters accepted.
    rejects: [],
  },
  cohere: {
    // Cohere's OpenAI-compatible API (chat, embeddings); reranking is its own `POST /v2/rerank`.
    baseUrl: 'https://api.cohere.ai/compatibility/v1',
    env: 'COHERE',
    auth: 'bearer',
    discover: false,
    // https://docs.cohere.com/docs/compatibility-api names parameters it does not support, not which
    // it refuses: none is taken out.
    rejects: [],
    rerank: 'cohere',
  },
  lmstudio: {
    baseUrl: 'http://127.0.0.1:1234/v1',
    env: 'LMSTUDIO',
    auth: 'none',
    discover: true,
    // https://lmstudio.ai/docs/app/api/endpoints/openai: unsupported fields are ignored.
    rejects: [],
  },
} as const satisfies Record<string, Preset>;

export type PresetKind = keyof typeof PRESETS;

export const PRESET_KINDS = Object.keys(PRESETS) as PresetKind[];

export const isPresetKind = (kind: unknown): kind is PresetKind =>
  typeof kind === 'string' && Object.hasOwn(PRESETS, kind);

export const presetOf = (kind: PresetKind): Preset => PRESETS[kind];
