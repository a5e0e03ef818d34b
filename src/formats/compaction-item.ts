/**
 * A compaction item Gatehouse minted (`POST /responses/compact` on a provider without OpenAI's
 * compact endpoint): how it is recognised, and the message its summary becomes on a later call.
 */
import type { Obj } from './validate.js';

/** The `encrypted_content` of a compaction item Gatehouse minted starts with this. */
export const GATEHOUSE_COMPACTION_PREFIX = 'gatehouse.cp1.';

/** Whether `v` is an `encrypted_content` Gatehouse minted (not whether it opens). */
export const isGatehouseCompaction = (v: unknown): v is string =>
  typeof v === 'string' && v.startsWith(GATEHOUSE_COMPACTION_PREFIX);

/**
 * A summary as the message that stands in for the compacted conversation on a later call. A user
 * message: every provider takes one at any place in the conversation (a system message mid-way is
 * not portable: Anthropic's system prompt is separate), and it is the conversation's content, so it
 * does not gain the authority of the caller's instructions.
 */
export const summaryMessage = (summary: string): Obj => ({
  type: 'message',
  role: 'user',
  content: [{ type: 'input_text', text: `Summary of the earlier conversation:\n\n${summary}` }],
});
