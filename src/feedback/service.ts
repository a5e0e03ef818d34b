import type { Caller } from '../accounts/caller.js';
import { isUniqueViolation } from '../db/columns.js';
import type { Db } from '../db/connection.js';
import { ApiError, badRequest, notFound } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import type { GenerationsService } from '../routing/generations.js';
import { FEEDBACK_CATEGORIES, type FeedbackBody, type FeedbackCategory } from './schemas.js';
import { insertFeedback, nextSeq, recentFeedback } from './store.js';

/**
 * Entries kept per generation: a key cannot grow the table without bound through one generation.
 * Entries are never removed, so the limit does not clear with time.
 */
export const MAX_FEEDBACK_PER_GENERATION = 100;
/** Entries GET /generation shows, newest first. */
export const FEEDBACK_SHOWN = 20;

const isCategory = (c: string): c is FeedbackCategory =>
  (FEEDBACK_CATEGORIES as readonly string[]).includes(c);

/** Feedback on generations: written by the keys that may read them, shown with the generation. */
export class FeedbackService {
  constructor(
    private readonly db: Db,
    private readonly generations: Pick<GenerationsService, 'get'>,
  ) {}

  /**
   * Records one entry on a generation the caller may read: an API key its own workspace's, a
   * management key its organization's. Any other (or unknown) id is a 404 that says nothing of it.
   */
  async submit(caller: Caller, body: FeedbackBody): Promise<void> {
    if (!isCategory(body.category))
      throw badRequest(`Invalid body: category must be one of ${FEEDBACK_CATEGORIES.join(', ')}`);
    const generation = await this.generations.get(caller.organizationId, body.generation_id);
    if (!generation || (!caller.isManagement && generation.workspace_id !== caller.workspaceId))
      throw notFound('Generation');
    // Each entry takes the generation's next number; the unique (generation_id, seq) index refuses
    // a number taken meanwhile, and the retry takes the one after it. Every retry follows another
    // entry's insertion, so the loop ends by the cap at the latest.
    for (;;) {
      const seq = await nextSeq(this.db, generation.id);
      if (seq > MAX_FEEDBACK_PER_GENERATION)
        throw new ApiError(
          429,
          `This generation already has ${MAX_FEEDBACK_PER_GENERATION} feedback entries, the most it keeps`,
          { reason: 'feedback_limit', limit: MAX_FEEDBACK_PER_GENERATION },
        );
      try {
        await insertFeedback(this.db, {
          id: newId(),
          organization_id: caller.organizationId,
          workspace_id: generation.workspace_id,
          generation_id: generation.id,
          seq,
          category: body.category,
          comment: body.comment ?? null,
          key_hash: caller.keyHash,
          user_id: caller.userId,
          created_at: new Date().toISOString(),
        });
        return;
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
    }
  }

  /** A generation's newest entries (GET /generation's `feedback`). */
  recent(generationId: string) {
    return recentFeedback(this.db, generationId, FEEDBACK_SHOWN);
  }
}
