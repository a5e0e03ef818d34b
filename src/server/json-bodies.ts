import { keepBytes } from '../lib/raw-json.js';
import type { Router } from './router.js';

/**
 * JSON request bodies parsed by Fastify's default parser (the same errors, the same
 * prototype-poisoning checks) from the Buffer of the whole body, which a large body keeps: a
 * pass-through lane forwards its unchanged members from those bytes (lib/raw-json.ts).
 */
export function installJsonBodies(scope: Router): void {
  const json = scope.getDefaultJsonParser('error', 'error');
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, bytes, done) => {
    // Typed for text, the default parser takes a Buffer as well (secure-json-parse decodes it once).
    json(req, bytes as unknown as string, (err, body) => {
      if (!err) keepBytes(body, bytes as Buffer);
      done(err, body);
    });
  });
}
