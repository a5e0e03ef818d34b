import type { FastifyReply, FastifyRequest } from 'fastify';
import type { InternsConfig } from '../config.js';
import { namedHosts } from '../lib/request-hosts.js';
import { sendError } from '../server/errors.js';
import type { Router } from '../server/router.js';
import type { Programme } from './programme.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Aborts when the route deadline (GATEHOUSE_INTERNS_DEADLINE_MS) passes; see installInternsGuards. */
    deadline: AbortSignal;
  }
}

interface Pending {
  timer: NodeJS.Timeout;
  controller: AbortController;
}
const pending = new WeakMap<FastifyRequest, Pending>();

/**
 * The rules every /interns and /vault route shares, as hooks on the plugin that holds them (after
 * authentication, which runs first):
 * - a request naming a configured regional hostname (Host or X-Forwarded-Host) → 403;
 * - a caller outside the interns programme → 404 `not_found` (`named` codes) or 404;
 * - the route deadline: a reply not sent within `deadlineMs` is answered 408 (code 408) and
 *   `request.deadline` aborts, so the handler can stop its work. A streaming route calls
 *   `clearDeadline(request)` once its stream is open.
 */
export function installInternsGuards(
  app: Router,
  deps: { config: InternsConfig; programme: Programme },
  opts: { codes: 'named' | 'status' },
): void {
  const named = (code: string) => (opts.codes === 'named' ? code : undefined);
  if (!app.hasRequestDecorator('deadline')) app.decorateRequest('deadline', null as unknown as AbortSignal);
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    // Host, and X-Forwarded-Host from a proxy: either naming a regional hostname refuses.
    const host = namedHosts(request.headers).find((h) => deps.config.regionalHosts.includes(h));
    if (host !== undefined) {
      return sendError(
        reply,
        403,
        `Requests on ${host} are refused: use the main hostname`,
        undefined,
        named('region_not_allowed'),
      );
    }
    if (request.caller && !(await deps.programme.includes(request.caller))) {
      return sendError(reply, 404, 'Not found', undefined, named('not_found'));
    }
    const controller = new AbortController();
    request.deadline = controller.signal;
    const timer = setTimeout(() => {
      controller.abort(new Error('route deadline exceeded'));
      if (!reply.sent && !reply.raw.headersSent) {
        sendError(reply, 408, `Request exceeded its deadline of ${deps.config.deadlineMs} ms`);
      }
    }, deps.config.deadlineMs);
    pending.set(request, { timer, controller });
  });
  app.addHook('onResponse', async (request) => clearDeadline(request));
}

/** Stops the route deadline of `request` (a stream that has opened runs as long as it needs). */
export function clearDeadline(request: FastifyRequest): void {
  const p = pending.get(request);
  if (p) {
    clearTimeout(p.timer);
    pending.delete(request);
  }
}
