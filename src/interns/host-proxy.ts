import type { Router } from '../server/router.js';
import type { Services } from '../services.js';

/** Proxies requests whose Host is an intern's hostname to that intern's runtime. */
export function installInternHostProxy(_app: Router, _services: Services): void {}
