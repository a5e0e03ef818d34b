#!/usr/bin/env -S node --max-semi-space-size=32
// A young generation of 32 MB semi-spaces: under load the objects of the calls in flight outlive
// the default semi-space and get promoted (then collected by full GCs). 64 MB measured up to 1.2×
// throughput at concurrency 64–256 on one VM but a 200 MB batch upload then peaked at 330 MB of RSS,
// above its 300 MB bound (bench/NOTES.md §8). `npm start` passes it too.
import cluster from 'node:cluster';
import { parseArgs } from 'node:util';
import { loadConfig } from './config.js';
import { createLog } from './lib/log.js';
import type { MediaHandle } from './media/server.js';
import type { Catalog } from './routing/catalog.js';
import type { buildServices } from './services.js';

const usage = `Usage: gatehouse <command>

  serve [--workers N|auto]           run the gateway (default), batch worker and media service included;
                                     --workers: N processes share the port (auto: one per core)
  media                              run only the media service (GATEHOUSE_MEDIA=off on the gateways)
  worker                             run only the batch worker (GATEHOUSE_WORKER=off on the gateways)
  migrate                            bring the database schema up to date and exit
  bootstrap                          create the default organization and keys (written to the data dir) and exit
  org create --name NAME             create an organization with its default workspace
  org list                           list organizations, oldest first
  user create --email E --org ID --role owner|admin|member [--interns]
  key create --name N (--user ID | --org ID) [--workspace ID] [--management]
  credits add --org ID --amount USD [--note TEXT]
  analytics rebuild [--org ID]       rebuild the hourly analytics rollup from the generations and exit

Configuration comes from the environment; see the README.`;

/**
 * Tells the operator where the generated bootstrap keys were written — never the keys — on standard
 * error: standard output carries the JSON log (serve) or the command's result (bootstrap).
 */
function announceKeysFile(keysFile: string | null) {
  if (!keysFile) return;
  process.stderr.write(
    `\n  Gatehouse created a default organization. Its management and API keys were written to\n    ${keysFile}\n  (readable only by this user). They are shown nowhere else.\n\n`,
  );
}

const isOff = (v: string | undefined) => ['off', 'false', '0'].includes((v ?? '').toLowerCase());

interface ReloadLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * SIGHUP reloads the model catalog (model data, GATEHOUSE_CONFIG, OpenAI-compatible servers) and
 * rebuilds the provider adapters with it — on `serve` and on a separate `worker` alike, which
 * would otherwise keep running batches on the providers it started with (and Node's default for
 * SIGHUP is to exit). A refused reload keeps the catalog in use.
 */
async function reloadOnSighup(catalog: Catalog, env: Record<string, string | undefined>, log: ReloadLog) {
  const { reloadInBackground } = await import('./catalog/refresh.js');
  process.on('SIGHUP', () => reloadInBackground({ catalog, env, log }));
}

/**
 * The gateway's modules (database drivers, services, the HTTP app), imported on demand: `gatehouse
 * media` alone does not need them (they cost ~50 MB of RSS).
 */
async function loadGatewayModules() {
  const [{ openDatabase }, { migrateToLatest }, { startGateway }, { buildServices }] = await Promise.all([
    import('./db/connection.js'),
    import('./db/migrate.js'),
    import('./gateway.js'),
    import('./services.js'),
  ]);
  return { openDatabase, migrateToLatest, startGateway, buildServices };
}

async function serve() {
  const { startGateway } = await loadGatewayModules();
  const config = loadConfig();
  // The media service's configuration is read first, so a bad one stops the start before anything listens.
  // Loaded only when it runs: the media service's modules (sharp, the S3 client) cost ~40 MB of RSS.
  const mediaModules = isOff(process.env.GATEHOUSE_MEDIA) ? null : await loadMediaModules();
  const mediaConfig = mediaModules ? mediaModules.loadMediaConfig() : null;
  const gateway = await startGateway(config);
  announceKeysFile(gateway.bootstrap.keysFile);
  let media: MediaHandle | null = null;
  try {
    // The media service shares the gateway's database: its API keys authenticate (GATEHOUSE_MEDIA_AUTH default keys).
    if (mediaModules && mediaConfig) {
      media = await mediaModules.startMedia(mediaConfig, {
        keys: gateway.services.keys,
        billing: gateway.services.mediaBilling,
        videoJobs: gateway.services.mediaVideoJobs,
        videoWebhooks: gateway.services.workspaceWebhooks,
      });
      // `/api/v1/images…` on the gateway reaches this media service unless GATEHOUSE_MEDIA_URL says otherwise.
      gateway.services.mediaLink.url ??= media.url;
    }
  } catch (err) {
    await gateway.close();
    throw err;
  }
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    gateway.app.log.info({ signal, grace_ms: config.shutdownGraceMs }, 'shutting down');
    // The last resort, should draining hang: the grace, the batch worker's drain, then writing.
    const force = setTimeout(() => process.exit(1), config.shutdownGraceMs + config.batches.drainMs + 10_000);
    force.unref();
    await Promise.all([gateway.close(), media?.close()]);
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  await reloadOnSighup(gateway.services.catalog, config.env, gateway.app.log);
  // A worker of `serve --workers N`: the primary counts the workers that serve.
  if (cluster.isWorker) (await import('./cluster/ipc.js')).clusterLink()?.ready();
}

/** `serve --workers N` (N > 1): the primary forks the workers, which run `serve` each. */
async function serveWorkers(workers: number) {
  const { runPrimary } = await import('./cluster/primary.js');
  await runPrimary({ workers, announceKeysFile });
}

/** The batch worker alone: claims and runs batch requests until SIGTERM/SIGINT. */
async function worker() {
  const { openDatabase, migrateToLatest, buildServices } = await loadGatewayModules();
  const config = loadConfig();
  const log = createLog({ level: config.logLevel, base: { process: 'worker' } });
  const { startTracing } = await import('./telemetry/sdk.js');
  const tracing = await startTracing(log);
  const handle = openDatabase(config.databaseUrl, { backgroundCheckpoints: true });
  await migrateToLatest(handle);
  const services = buildServices(handle, config, log);
  await services.cluster.ready();
  // Before the worker starts (and says so): a SIGHUP from then on reloads, never ends the process.
  await reloadOnSighup(services.catalog, config.env, log);
  const w = services.createWorker();
  w.start();
  log.info({ worker: w.id }, 'batch worker started');
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'batch worker stopping');
    const force = setTimeout(() => process.exit(1), config.batches.drainMs + 20_000);
    force.unref();
    await w.stop(config.batches.drainMs);
    await services.shutdown();
    await handle.close();
    await tracing?.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** The media service's modules, imported on demand. */
async function loadMediaModules() {
  const [{ loadMediaConfig }, { startMedia }] = await Promise.all([
    import('./media/config.js'),
    import('./media/server.js'),
  ]);
  return { loadMediaConfig, startMedia };
}

/** The media service alone (MEDIA_PORT, default 8081). */
async function media() {
  const { loadMediaConfig, startMedia } = await loadMediaModules();
  const config = loadMediaConfig();
  // Alone, API keys are checked only when asked for (GATEHOUSE_MEDIA_AUTH=keys), against the same
  // DATABASE_URL / GATEHOUSE_DATA_DIR as the gateway's.
  const keys =
    config.auth === 'keys'
      ? await (await import('./media/key-authenticator.js')).openKeyAuthenticator(
          config.databaseUrl,
          config.masterKey,
        )
      : null;
  let handle: MediaHandle;
  try {
    handle = await startMedia(config, {
      keys: keys?.keys ?? null,
      videoJobs: keys?.videoJobs ?? null,
      videoWebhooks: keys?.videoWebhooks ?? null,
    });
  } catch (err) {
    await keys?.close();
    throw err;
  }
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    handle.app.log.info({ signal }, 'media service stopping');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    await handle.close();
    await keys?.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** Applies pending migrations and prints their names. */
async function migrate() {
  const { openDatabase, migrateToLatest } = await loadGatewayModules();
  const handle = openDatabase(loadConfig().databaseUrl);
  try {
    print({ applied: await migrateToLatest(handle) });
  } finally {
    await handle.close();
  }
}

/**
 * Rebuilds the hourly analytics rollup from the generations (all, or one organization's): after
 * generations were deleted or written by hand, which the rollup does not see.
 */
async function rebuildAnalytics(organizationId: string | undefined) {
  const { openDatabase, migrateToLatest } = await loadGatewayModules();
  const { rebuildHours } = await import('./activity/hours.store.js');
  const handle = openDatabase(loadConfig().databaseUrl);
  try {
    await migrateToLatest(handle);
    const started = performance.now();
    await rebuildHours(handle.db, organizationId);
    print({
      rebuilt: organizationId ?? 'all',
      seconds: Math.round((performance.now() - started) / 100) / 10,
    });
  } finally {
    await handle.close();
  }
}

/** Runs `fn` against a migrated database with the services wired, then closes it. */
async function withServices<T>(fn: (s: ReturnType<typeof buildServices>) => Promise<T>): Promise<T> {
  const { openDatabase, migrateToLatest, buildServices } = await loadGatewayModules();
  const config = loadConfig();
  const handle = openDatabase(config.databaseUrl);
  try {
    await migrateToLatest(handle);
    // One-shot commands print their result on standard output: log lines go to standard error.
    const log = createLog({ level: config.logLevel, stream: process.stderr });
    const services = buildServices(handle, config, log);
    try {
      return await fn(services);
    } finally {
      // Sends the cluster bus's invalidations and closes the Redis connections (which would
      // otherwise keep a one-shot command from exiting when REDIS_URL is set).
      await services.shutdown();
    }
  } finally {
    await handle.close();
  }
}

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

async function main(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      email: { type: 'string' },
      org: { type: 'string' },
      user: { type: 'string' },
      role: { type: 'string' },
      workspace: { type: 'string' },
      amount: { type: 'string' },
      note: { type: 'string' },
      interns: { type: 'boolean' },
      management: { type: 'boolean' },
      workers: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command = 'serve', sub] = positionals;
  const need = (v: string | undefined, flag: string) => {
    if (!v) throw new Error(`--${flag} is required\n\n${usage}`);
    return v;
  };
  if (values.help) return void process.stdout.write(`${usage}\n`);

  switch (`${command}${sub ? ` ${sub}` : ''}`) {
    case 'serve': {
      // The workers are forked with the primary's arguments: they serve.
      if (cluster.isWorker) return serve();
      const { parseWorkers } = await import('./cluster/primary.js');
      const workers = parseWorkers(values.workers ?? process.env.GATEHOUSE_WORKERS);
      return workers > 1 ? serveWorkers(workers) : serve();
    }
    case 'worker':
      return worker();
    case 'media':
      return media();
    case 'migrate':
      return migrate();
    case 'bootstrap':
      return withServices(async (s) => {
        const { ensureBootstrap } = await import('./accounts/bootstrap.js');
        const r = await ensureBootstrap(s);
        print({ organization_id: r.organizationId, owner_user_id: r.ownerUserId });
        announceKeysFile(r.keysFile);
      });
    case 'analytics rebuild':
      return rebuildAnalytics(values.org);
    case 'org create':
      return withServices(async (s) =>
        print({ data: await s.admin.createOrganization(need(values.name, 'name')) }),
      );
    case 'org list':
      return withServices(async (s) => print({ data: await s.admin.listOrganizations() }));
    case 'user create':
      return withServices(async (s) =>
        print({
          data: await s.admin.createUser({
            email: need(values.email, 'email'),
            organization_id: need(values.org, 'org'),
            role: need(values.role, 'role') as 'owner' | 'admin' | 'member',
            interns_programme: values.interns ?? false,
          }),
        }),
      );
    case 'key create':
      return withServices(async (s) =>
        print(
          await s.admin.createKey({
            name: need(values.name, 'name'),
            user_id: values.user,
            organization_id: values.org,
            workspace_id: values.workspace,
            management: values.management ?? false,
          }),
        ),
      );
    case 'credits add':
      return withServices(async (s) =>
        print({
          data: await s.admin.addCredits(
            need(values.org, 'org'),
            Number(need(values.amount, 'amount')),
            values.note,
          ),
        }),
      );
    default:
      throw new Error(`Unknown command: ${positionals.join(' ')}\n\n${usage}`);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
