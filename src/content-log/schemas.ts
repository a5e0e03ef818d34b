import { Type } from '@sinclair/typebox';
import { Nullable } from '../server/schemas.js';

const ToolCall = Type.Object({
  id: Nullable(Type.String()),
  type: Type.Literal('function'),
  function: Type.Object({ name: Type.String(), arguments: Type.String() }),
});

/** OpenRouter's GenerationContentData, plus the answer's tool calls. */
export const GenerationContent = Type.Object(
  {
    input: Type.Union(
      [
        Type.Object({ prompt: Type.String() }),
        Type.Object({
          messages: Type.Array(Type.Unknown(), {
            description:
              "The messages in the caller's own format, as sent to the provider (redactions applied)",
          }),
        }),
      ],
      { description: 'The input: a prompt string, or the messages' },
    ),
    output: Type.Object({
      completion: Nullable(Type.String({ description: 'The answer text as the caller received it' })),
      reasoning: Nullable(Type.String()),
      tool_calls: Nullable(Type.Array(ToolCall)),
    }),
    error: Nullable(
      Type.Object(
        {
          message: Nullable(Type.String()),
          status: Nullable(Type.Integer()),
          provider_name: Nullable(Type.String()),
          raw: Nullable(Type.String()),
          previous_errors: Type.Array(Type.Unknown()),
        },
        { description: 'How a stream that failed after it started ended; null otherwise' },
      ),
    ),
  },
  { $id: 'GenerationContent', title: 'GenerationContent' },
);
