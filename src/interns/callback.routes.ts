import type { Router } from '../server/router.js';
import type { Services } from '../services.js';

/** The runtimes' callbacks (runtime-protocol.ts CALLBACK_PATHS), outside /api/v1. */
export async function runtimeCallbackRoutes(_app: Router, _services: Services): Promise<void> {}
