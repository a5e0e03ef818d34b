import { describe, expect, it } from 'vitest';
import { hostBetas, ungatedFields } from './betas.js';

// Claude Code's default flags on Anthropic's API (2.1.332).
const CLAUDE_CODE = [
  'claude-code-20250219',
  'interleaved-thinking-2025-05-14',
  'context-management-2025-06-27',
  'per-turn-control-2026-07-01',
  'mid-conversation-tool-changes-2026-07-01',
  'thinking-token-count-2026-05-13',
  'advanced-tool-use-2025-11-20',
  'effort-2025-11-24',
];

describe('the beta flags of the clouds serving Claude', () => {
  it('Vertex: the flags it has, tool search renamed; the others dropped as the caller named them', () => {
    expect(hostBetas(CLAUDE_CODE, 'vertex')).toEqual({
      kept: [
        'claude-code-20250219',
        'interleaved-thinking-2025-05-14',
        'thinking-token-count-2026-05-13',
        'tool-search-tool-2025-10-19',
        'effort-2025-11-24',
      ],
      dropped: [
        'context-management-2025-06-27',
        'per-turn-control-2026-07-01',
        'mid-conversation-tool-changes-2026-07-01',
      ],
    });
    // Named twice (both names of tool search): sent once.
    expect(hostBetas(['tool-search-tool-2025-10-19', 'advanced-tool-use-2025-11-20'], 'vertex').kept).toEqual(
      ['tool-search-tool-2025-10-19'],
    );
  });

  it('a body field goes out with its beta: only where the host has none for it', () => {
    const body = { messages: [], context_management: { edits: [] } };
    expect(ungatedFields(body, 'vertex')).toEqual(['context_management']);
    expect(ungatedFields(body, 'bedrock-invoke')).toEqual([]);
    expect(ungatedFields({ messages: [] }, 'vertex')).toEqual([]);
  });
});
