import type { SpendEvent } from '../credits/spend.js';
import type { ClusterEvent } from './bus.js';

/**
 * What another node's event does to this node's caches. Each method drops or updates local state
 * only: it must not publish again (the `invalidate`-style methods that do are for local writes).
 */
export interface NodeCaches {
  keys: { forget(hash?: string): void };
  policy: { invalidate(): void };
  byok: { forget(organizationId?: string): void };
  spend: {
    record(e: SpendEvent): void;
    creditsChanged(organizationId: string): void;
    refreshAll(): void;
  };
  /** Reloads the model catalog from this node's own configuration (in the background). */
  catalog: { reload(): void };
}

export function applyClusterEvent(caches: NodeCaches, e: ClusterEvent): void {
  switch (e.kind) {
    case 'key':
      caches.keys.forget(e.hash ?? undefined);
      return;
    case 'policy':
      caches.policy.invalidate();
      return;
    case 'byok':
      caches.byok.forget(e.organizationId);
      return;
    case 'credits':
      caches.spend.creditsChanged(e.organizationId);
      return;
    case 'spend':
      caches.spend.record(e.event);
      return;
    case 'catalog':
      caches.catalog.reload();
      return;
    case 'resync':
      caches.keys.forget();
      caches.policy.invalidate();
      caches.byok.forget();
      caches.spend.refreshAll();
      return;
  }
}
