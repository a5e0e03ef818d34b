/**
 * The `anthropic-beta` flags Bedrock takes for Claude. Bedrock answers a whole request 400
 * "invalid beta flag" when one flag is not among its own, and Claude Code sends several only
 * Anthropic's API has: a flag Bedrock offers under another name is renamed, any other is left out
 * (the request then goes on without that beta, as Claude Code's own Bedrock mode sends it).
 *
 * The list is AWS's (the Anthropic Claude Messages API parameters page) plus `claude-code-20250219`,
 * which Bedrock accepts.
 */
const BEDROCK_BETAS = new Set([
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
]);

/** Anthropic's name → Bedrock's, for the same feature. */
const BEDROCK_NAMES: Record<string, string> = {
  // Tool search (`defer_loading` tools): Bedrock's InvokeModel knows it by its earlier name.
  'advanced-tool-use-2025-11-20': 'tool-search-tool-2025-10-19',
};

/** Tool search is InvokeModel's only: Converse refuses the flag (and has no deferred tools). */
const INVOKE_ONLY = new Set(['tool-search-tool-2025-10-19']);

/**
 * `betas` as Bedrock takes them for `operation`: renamed, deduplicated, and the ones it has no
 * flag for in `dropped`.
 */
export function bedrockBetas(
  betas: readonly string[],
  operation: 'invoke' | 'converse',
): { kept: string[]; dropped: string[] } {
  const kept = new Set<string>();
  const dropped: string[] = [];
  for (const beta of betas) {
    const name = BEDROCK_NAMES[beta] ?? beta;
    if (BEDROCK_BETAS.has(name) && !(operation === 'converse' && INVOKE_ONLY.has(name))) kept.add(name);
    else dropped.push(beta);
  }
  return { kept: [...kept], dropped };
}

/** An `anthropic-beta` header's flags. */
export const betaList = (header: string | undefined): string[] =>
  (header ?? '')
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
