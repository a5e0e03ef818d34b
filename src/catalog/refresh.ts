import { request } from 'undici';
import { type Catalog, type ProviderEntry, reloadCatalog } from '../routing/catalog.js';
import { providerData } from '../routing/catalog-vendors.js';
import { refreshModelData } from '../routing/model-data.js';

/** What the refresh logs through (pino's shape). */
export interface CatalogLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface RefreshDeps {
  catalog: Catalog;
  /** The environment GATEHOUSE_CONFIG and the provider variables are read from. */
  env: Record<string, string | undefined>;
  log: CatalogLog;
  /** Deadline of one server's `GET /models`, ms. */
  timeoutMs?: number;
}

/**
 * The OpenAI-compatible servers whose own model lists join the catalog: by default those of no
 * vendor the model data knows (local servers: Ollama, vLLM …); `discover_models` decides otherwise.
 */
export const discoverable = (catalog: Catalog): ProviderEntry[] =>
  [...catalog.providers.values()].filter(
    (p) => p.config.kind === 'openai-compatible' && (p.discoverModels ?? !providerData(p)),
  );

/**
 * The model ids a server lists at `GET {base_url}/models`: OpenAI's shape `{ data: [...] }` (Ollama,
 * vLLM, llama.cpp, LM Studio, Groq …) or a bare list of the same entries (Together).
 */
export async function listServerModels(p: ProviderEntry, timeoutMs = 5_000): Promise<string[]> {
  const res = await request(`${p.config.baseUrl}/models`, {
    method: 'GET',
    headers: {
      accept: 'application/json',
      ...p.config.headers,
      ...(p.config.apiKey ? { authorization: `Bearer ${p.config.apiKey}` } : {}),
    },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`GET /models answered ${res.statusCode}`);
  }
  const body = (await res.body.json()) as { data?: unknown } | unknown[] | null;
  const list = Array.isArray(body) ? body : body?.data;
  if (!Array.isArray(list)) throw new Error('GET /models answered no data list');
  return list
    .map((m) => (m && typeof m === 'object' ? (m as { id?: unknown }).id : undefined))
    .filter((id): id is string => typeof id === 'string' && id.length > 0 && id.length <= 200);
}

export interface ServerOutcome {
  provider: string;
  /** Models the server listed; null when it could not be asked (its previous list is kept). */
  models: number | null;
  error?: string;
}

/**
 * Asks every discoverable server for its models and keeps the answers in `catalog.discovered`
 * (a server that fails keeps its previous list). Does not rebuild the catalog.
 */
export async function discoverModels(deps: RefreshDeps): Promise<ServerOutcome[]> {
  const { catalog, log } = deps;
  catalog.discovered ??= new Map();
  const discovered = catalog.discovered;
  return Promise.all(
    discoverable(catalog).map(async (p): Promise<ServerOutcome> => {
      const provider = p.config.slug;
      try {
        const ids = await listServerModels(p, deps.timeoutMs);
        discovered.set(provider, ids);
        return { provider, models: ids.length };
      } catch (err) {
        // The message only: an error object may carry the request's headers (the server's key).
        const error = (err as Error).message;
        log.warn({ provider, error }, 'model discovery failed; retrying later');
        return { provider, models: null, error };
      }
    }),
  );
}

const running = new WeakMap<Catalog, Promise<RefreshResult>>();

export interface RefreshResult {
  models: number;
  modelDataChanged: boolean;
  servers: ServerOutcome[];
}

/**
 * Reloads the catalog without a restart: the model data (when a newer package is installed),
 * GATEHOUSE_CONFIG, and the model lists of the OpenAI-compatible servers, then swaps the catalog's
 * contents in place. Concurrent calls share one refresh. A GATEHOUSE_CONFIG that does not load
 * throws and leaves the catalog as it was.
 */
export function refreshCatalog(deps: RefreshDeps): Promise<RefreshResult> {
  const inFlight = running.get(deps.catalog);
  if (inFlight) return inFlight;
  const run = (async () => {
    const modelDataChanged = await refreshModelData();
    // Providers added or changed in GATEHOUSE_CONFIG are known before their servers are asked.
    reloadCatalog(deps.catalog, deps.env);
    const servers = await discoverModels(deps);
    const models = reloadCatalog(deps.catalog, deps.env);
    deps.log.info({ models, model_data_changed: modelDataChanged }, 'model catalog reloaded');
    return { models, modelDataChanged, servers };
  })().finally(() => running.delete(deps.catalog));
  running.set(deps.catalog, run);
  return run;
}

/**
 * A reload nobody awaits (SIGHUP, another node's reload through the API): a refusal is logged as
 * an error and the catalog in use stays.
 */
export function reloadInBackground(
  deps: RefreshDeps & { log: CatalogLog & { error(obj: object, msg: string): void } },
): void {
  refreshCatalog(deps).catch((err) =>
    deps.log.error(
      { error: (err as Error).message },
      'model catalog not reloaded; the previous one stays in use',
    ),
  );
}

/**
 * Keeps the OpenAI-compatible servers' models current: asks them at start and every `intervalMs`
 * (0: at start only); a server that failed is asked again after `retryMs` until it answers.
 */
export class DiscoveryLoop {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly deps: RefreshDeps,
    private readonly intervalMs: number,
    private readonly retryMs = 30_000,
  ) {}

  /** Starts in the background: the gateway serves while servers are asked (or are down). */
  start(): void {
    void this.tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private async tick(): Promise<void> {
    let failed = false;
    try {
      const before = JSON.stringify([...(this.deps.catalog.discovered ?? [])]);
      const servers = await discoverModels(this.deps);
      failed = servers.some((s) => s.models === null);
      // Rebuilt only when a server's list changed (a rebuild also re-reads GATEHOUSE_CONFIG).
      if (JSON.stringify([...(this.deps.catalog.discovered ?? [])]) !== before)
        reloadCatalog(this.deps.catalog, this.deps.env);
    } catch (err) {
      failed = true;
      this.deps.log.warn({ error: (err as Error).message }, 'model catalog refresh failed');
    }
    if (this.stopped) return;
    const next = failed ? Math.min(this.retryMs, this.intervalMs || this.retryMs) : this.intervalMs;
    if (next > 0) {
      this.timer = setTimeout(() => void this.tick(), next);
      this.timer.unref();
    }
  }
}
