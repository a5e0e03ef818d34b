import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Nullable, StringEnum } from '../server/schemas.js';

/** OpenRouter's feedback categories (its `submitFeedback` operation). */
export const FEEDBACK_CATEGORIES = [
  'latency',
  'incoherence',
  'incorrect_response',
  'formatting',
  'billing',
  'api_error',
  'other',
] as const;
export type FeedbackCategory = (typeof FEEDBACK_CATEGORIES)[number];

/** The longest comment kept, in characters. */
export const MAX_COMMENT_CHARS = 2000;

const body = <C extends TSchema>(category: C) =>
  Type.Object({
    generation_id: Type.String({
      minLength: 1,
      description: 'The generation (its id, or the provider id a pass-through answer carried)',
    }),
    category,
    comment: Type.Optional(
      Nullable(
        Type.String({ maxLength: MAX_COMMENT_CHARS, description: 'Free text, at most 2,000 characters' }),
      ),
    ),
  });

const categoryDescription = { description: 'What the feedback is about' };

/**
 * The body as the route takes it: `category` any string, so an unknown one gets the service's 400
 * naming the allowed values (a schema enum's message would not list them). Other fields are ignored.
 */
export const FeedbackBody = body(Type.String(categoryDescription));
export type FeedbackBody = Static<typeof FeedbackBody>;

/** The body as the API reference shows it: `category` with its values. */
export const FeedbackBodyDocumented = body(StringEnum(FEEDBACK_CATEGORIES, categoryDescription));

export const FeedbackAnswer = Type.Object({
  data: Type.Object({ success: Type.Literal(true) }),
});

/** One entry as GET /generation shows it (`feedback`, newest first). */
export const FeedbackEntry = Type.Object({
  category: StringEnum(FEEDBACK_CATEGORIES),
  comment: Nullable(Type.String()),
  created_at: Type.String({ description: 'ISO 8601, UTC' }),
});
