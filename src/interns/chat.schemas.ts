import { type Static, Type } from '@sinclair/typebox';

/** `Content` of an intern chat message: a string or text parts (digest §6.3). */
const Content = Type.Union([
  Type.String(),
  Type.Array(Type.Object({ type: Type.Literal('text'), text: Type.String() }), { maxItems: 1000 }),
  Type.Null(),
]);

const Message = Type.Union([
  Type.Object({
    role: Type.Union([Type.Literal('user'), Type.Literal('system'), Type.Literal('developer')]),
    content: Content,
  }),
  Type.Object({
    role: Type.Literal('tool'),
    content: Content,
    tool_call_id: Type.String({ minLength: 1, maxLength: 255 }),
  }),
  Type.Object({
    role: Type.Literal('assistant'),
    content: Type.Optional(Content),
    tool_calls: Type.Optional(
      Type.Array(
        Type.Object({
          id: Type.String(),
          type: Type.Optional(Type.String()),
          function: Type.Object({ name: Type.String(), arguments: Type.String() }),
        }),
      ),
    ),
  }),
]);

/**
 * InternChatCompletionRequest. `stream` is checked by the handler (a missing or false value is a
 * 400 with reason bad_request, not a schema message); other OpenAI fields are accepted and ignored.
 */
export const InternChatBody = Type.Object(
  {
    stream: Type.Optional(Type.Unknown()),
    messages: Type.Array(Message, { minItems: 1, maxItems: 10_000 }),
    session_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_.:-]+$' })),
    approval_mode: Type.Optional(Type.Union([Type.Literal('manual'), Type.Literal('self-drive')])),
    model: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);
export type InternChatBody = Static<typeof InternChatBody>;

export const SteeredResponse = Type.Object({ session_id: Type.String(), status: Type.Literal('steered') });
