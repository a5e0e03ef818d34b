import type { FastifyRequest } from 'fastify';
import type { Router } from '../server/router.js';
import { errors } from '../server/schemas.js';
import type { Services } from '../services.js';
import { FeedbackAnswer, FeedbackBody, FeedbackBodyDocumented } from './schemas.js';

export async function feedbackRoutes(app: Router, { feedback }: Pick<Services, 'feedback'>) {
  app.post(
    '/generation/feedback',
    {
      config: { auth: 'key', openapi: { body: FeedbackBodyDocumented } },
      schema: {
        tags: ['Inference'],
        summary: 'Submit feedback on a generation',
        description:
          "OpenRouter's submitFeedback. An API key sends feedback on its own workspace's generations, a management key on its organization's; any other id is a 404. " +
          'Each submission is one entry; GET /generation shows the newest 20. A generation takes at most 100 entries: past that, 429 (it does not clear with time).',
        body: FeedbackBody,
        response: { 200: FeedbackAnswer, ...errors(400, 401, 404, 429, 500) },
      },
    },
    async (req: FastifyRequest<{ Body: FeedbackBody }>) => {
      await feedback.submit(req.caller, req.body);
      return { data: { success: true as const } };
    },
  );
}
