/**
 * The `anthropic-beta` flags each cloud that serves Claude takes. Amazon Bedrock and Google Vertex AI
 * answer a whole request 400 when one flag is not among their own ("invalid beta flag", "Unexpected
 * value(s) … for the anthropic-beta header"), and Claude Code sends several only Anthropic's API
 * has: a flag the cloud offers under another name is renamed, any other is left out (the request
 * then goes on without that beta, as Claude Code's own Bedrock and Vertex modes send it).
 */

/** Where a Claude request goes: Bedrock's InvokeModel, its Converse, or Vertex AI's rawPredict. */
export type BetaHost = 'bedrock-invoke' | 'bedrock-converse' | 'vertex';

/**
 * Bedrock's: AWS's list (the Anthropic Claude Messages API parameters page) plus
 * `claude-code-20250219`, which Bedrock accepts.
 */
const BEDROCK = [
  'claude-code-20250219',
  'computer-use-2024-10-22',
  'computer-use-2025-01-24',
  'computer-use-2025-11-24',
  'token-efficient-tools-2025-02-19',
  'interleaved-thinking-2025-05-14',
  'output-128k-2025-02-19',
  'dev-full-thinking-2025-05-14',
  'context-1m-2025-08-07',
  'context-management-2025-06-27',
  'effort-2025-11-24',
  'tool-search-tool-2025-10-19',
  'tool-examples-2025-10-29',
];

/**
 * Vertex AI's: those Claude Code (2.1.332) sends in its own Vertex mode (`CLAUDE_CODE_USE_VERTEX=1`)
 * — recorded, and read in its beta table, where `context-1m-2025-08-07` goes to Vertex for the
 * models with a 1M-token window. It sends neither `context-management-2025-06-27` nor the
 * per-turn and mid-conversation flags there (it gives them to Anthropic's API and Anthropic-run
 * clouds only), and tool search under Bedrock's name.
 */
const VERTEX = [
  'claude-code-20250219',
  'interleaved-thinking-2025-05-14',
  'context-1m-2025-08-07',
  'web-search-2025-03-05',
  'thinking-token-count-2026-05-13',
  'tool-search-tool-2025-10-19',
  'effort-2025-11-24',
];

/** Each host's flags. Tool search is InvokeModel's only on Bedrock: Converse refuses the flag (and has no deferred tools). */
const FLAGS: Record<BetaHost, ReadonlySet<string>> = {
  'bedrock-invoke': new Set(BEDROCK),
  'bedrock-converse': new Set(BEDROCK.filter((b) => b !== 'tool-search-tool-2025-10-19')),
  vertex: new Set(VERTEX),
};

/** Anthropic's name → the clouds', for the same feature. */
const CLOUD_NAMES: Record<string, string> = {
  // Tool search (`defer_loading` tools): Bedrock and Vertex know it by its earlier name.
  'advanced-tool-use-2025-11-20': 'tool-search-tool-2025-10-19',
};

/**
 * Body fields Anthropic's API takes only under a beta. A host without that beta refuses the field
 * ("Extra inputs are not permitted"), so it is left out with the flag.
 */
const GATED_FIELDS: Record<string, string> = {
  context_management: 'context-management-2025-06-27',
};

/** `betas` as `host` takes them: renamed, deduplicated, and the ones it has no flag for in `dropped`. */
export function hostBetas(betas: readonly string[], host: BetaHost): { kept: string[]; dropped: string[] } {
  const kept = new Set<string>();
  const dropped: string[] = [];
  for (const beta of betas) {
    const name = CLOUD_NAMES[beta] ?? beta;
    if (FLAGS[host].has(name)) kept.add(name);
    else dropped.push(beta);
  }
  return { kept: [...kept], dropped };
}

/** The fields of a Messages body `host` has no beta for (left out of what it is sent). */
export const ungatedFields = (body: Record<string, unknown>, host: BetaHost): string[] =>
  Object.entries(GATED_FIELDS)
    .filter(([field, beta]) => body[field] !== undefined && !FLAGS[host].has(beta))
    .map(([field]) => field);

/** An `anthropic-beta` header's flags. */
export const betaList = (header: string | undefined): string[] =>
  (header ?? '')
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
