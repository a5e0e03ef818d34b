import type { ReasoningConfig } from '../formats/chat.js';

/**
 * Thinking-token budgets for providers that take a budget (Anthropic `thinking.budget_tokens`,
 * Gemini `thinkingConfig.thinkingBudget`) when the caller gave only an effort.
 */
export const REASONING_EFFORT_BUDGETS: Record<NonNullable<ReasoningConfig['effort']>, number> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 32768,
  // OpenAI's and Anthropic's effort above xhigh. A larger budget would push max_tokens past what
  // many models accept (64000 for Claude Sonnet, 32768 for Gemini's budget): the most asked is xhigh's.
  max: 32768,
};

/**
 * The budget for a reasoning config: `max_tokens` if given, else the effort's table entry. A
 * reasoning object without either (e.g. `{}` or `{exclude: true}`) still enables reasoning, at
 * `medium` (OpenRouter semantics). Undefined when there is no reasoning config.
 */
export function reasoningBudget(r: ReasoningConfig | undefined): number | undefined {
  if (!r) return undefined;
  if (r.max_tokens !== undefined) return r.max_tokens;
  return REASONING_EFFORT_BUDGETS[r.effort ?? 'medium'];
}
