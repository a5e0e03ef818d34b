import type { Router } from '../server/router.js';
import type { Services } from '../services.js';

export async function internChatRoutes(_app: Router, _services: Services): Promise<void> {}
