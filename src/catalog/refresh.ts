import { request } from 'undici';
import { type Catalog, type ProviderEntry, reloadCatalog } from '../routing/catalog.js';
import { providerData } from '../routing/catalog-vendors.js';
import { refreshModelData } from '../routing/model-data.js';
import { limitsAskable, listAnthropicLimits } from './anthropic-limits.js';

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

/** Asks one provider, keeping what it answered under its slug; a failure keeps its previous answer. */
async function ask<T extends unknown[]>(
  p: ProviderEntry,
  into: Map<string, T>,
  list: () => Promise<T>,
  log: CatalogLog,
): Promise<ServerOutcome> {
  const provider = p.config.slug;
  try {
    const answer = await list();
    into.set(provider, answer);
    return { provider, models: answer.length };
  } catch (err) {
    // The message only: an error object may carry the request's headers (the server's key).
    const error = (err as Error).message;
    log.warn({ provider, error }, 'model discovery failed; retrying later');
    return { provider, models: null, error };
  }
}

/**
 * Asks every discoverable server for its models and keeps the answers in `catalog.discovered`,
 * and every Anthropic provider for its models' limits, kept in `catalog.limits` (a provider that
 * fails keeps its previous answer). Does not rebuild the catalog.
 */
export async function discoverModels(deps: RefreshDeps): Promise<ServerOutcome[]> {
  const { catalog, log } = deps;
  catalog.discovered ??= new Map();
  catalog.limits ??= new Map();
  const { discovered, limits } = catalog;
  return Promise.all([
    ...discoverable(catalog).map((p) => ask(p, discovered, () => listServerModels(p, deps.timeoutMs), log)),
    ...limitsAskable(catalog.providers.values()).map((p) =>
      ask(p, limits, () => listAnthropicLimits(p, deps.timeoutMs), log),
    ),
  ]);
}

const running = new WeakMap<Catalog, Promise<RefreshResult>>();

export interface RefreshResult {
  models: number;
  modelDataChanged: boolean;
  servers: ServerOutcome[];
}

/**
 * Reloads the catalog without a restart: the model data (when a newer package is installed),
 * GATEHOUSE_CONFIG, the model lists of the OpenAI-compatible servers and the Anthropic providers'
 * model limits, then swaps the catalog's
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

/** What the providers answered, to tell whether the catalog needs a rebuild. */
const answers = (c: Catalog): string => JSON.stringify([[...(c.discovered ?? [])], [...(c.limits ?? [])]]);

/**
 * Keeps the OpenAI-compatible servers' models and the Anthropic providers' model limits current:
 * asks them at start and every `intervalMs`
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
      const before = answers(this.deps.catalog);
      const servers = await discoverModels(this.deps);
      failed = servers.some((s) => s.models === null);
      // Rebuilt only when an answer changed (a rebuild also re-reads GATEHOUSE_CONFIG).
      if (answers(this.deps.catalog) !== before) reloadCatalog(this.deps.catalog, this.deps.env);
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
