import { AggregatorRegistry } from 'prom-client';
import { type BootstrapResult, ensureBootstrap } from './accounts/bootstrap.js';
import { workerIndex } from './cluster/ipc.js';
import type { Config } from './config.js';
import { type DbHandle, openDatabase } from './db/connection.js';
import { migrateToLatest } from './db/migrate.js';
import { type App, type AppOptions, buildApp } from './http.js';
import { assertShellSandbox } from './interns/runtime/sandbox.js';
import { closeWithin, listenError } from './lib/http-server.js';
import { createLog, type LogOptions } from './lib/log.js';
import { sweepOrphanedTempFilesLater } from './lib/temp-files.js';
import { startMetricsListener } from './server/metrics.js';
import { buildServices, type Services } from './services.js';
import { startTracing } from './telemetry/sdk.js';

export interface Gateway {
  app: App;
  services: Services;
  bootstrap: BootstrapResult;
  /** `http://host:port` once listening. */
  url: string;
  /** `http://host:port` of the /metrics listener (GATEHOUSE_METRICS_PORT), null when off. */
  metricsUrl: string | null;
  /**
   * Stops accepting, lets in-flight requests finish for up to `config.shutdownGraceMs` (then
   * closes their connections), writes pending accounting, then closes the database.
   */
  close(): Promise<void>;
}

export interface GatewayOptions extends Omit<AppOptions, 'log'> {
  /** The logger's level and destination (default: `config.logLevel` on standard output). */
  log?: LogOptions;
  /** PostgreSQL schema (tests run each gateway in its own). */
  schema?: string;
}

/** Opens the database, migrates, bootstraps tenancy and builds the app, without listening. */
export async function prepareGateway(
  config: Config,
  opts: GatewayOptions = {},
): Promise<Omit<Gateway, 'url' | 'metricsUrl'> & { handle: DbHandle }> {
  // The interns shell runs only inside its sandbox: a node that would start runtimes with the
  // shell on refuses to start where bubblewrap cannot sandbox (never an unconfined shell).
  if (config.interns.shell && config.interns.runtimes) assertShellSandbox();
  // The logger first: every component below logs through it.
  const log = createLog(opts.log ?? { level: config.logLevel });
  // Traces when the OTEL_* variables ask for them (the SDK is not even loaded otherwise).
  const tracing = await startTracing(log);
  // A worker of `serve --workers N`: the primary migrated before forking, and one worker (the
  // first) checkpoints the SQLite WAL for all of them.
  const clusterWorker = workerIndex();
  const handle = openDatabase(config.databaseUrl, {
    schema: opts.schema,
    backgroundCheckpoints: (clusterWorker ?? 0) === 0,
  });
  try {
    if (clusterWorker === null) await migrateToLatest(handle);
    const services = buildServices(handle, config, log);
    const bootstrap = await ensureBootstrap(services);
    // Usage a killed process answered for but had not written yet (its local journal).
    const replayed = await services.accountant.replayJournal();
    const app = await buildApp(services, { ...opts, log });
    sweepOrphanedTempFilesLater(app.log);
    if (replayed > 0)
      app.log.warn(
        { replayed },
        'usage journal: wrote the calls a stopped process had answered but not recorded',
      );
    // Hear the other nodes from the first request (up to 2 s; then the TTL bounds until it connects).
    await services.cluster.ready();
    // The batch worker runs in the gateway unless GATEHOUSE_WORKER=off (then `gatehouse worker`).
    const worker = config.batches.worker ? services.createWorker() : null;
    worker?.start();
    if (worker) services.batches.onAccepted(() => worker.wake());
    app.addHook('onClose', async () => {
      await worker?.stop(config.batches.drainMs);
      await services.shutdown();
      await handle.close();
      // Last: the spans of the requests that drained above are exported before the process ends.
      await tracing?.close();
    });
    return { app, services, bootstrap, handle, close: () => closeWithin(app, config.shutdownGraceMs) };
  } catch (err) {
    await handle.close();
    await tracing?.close();
    throw err;
  }
}

export async function startGateway(config: Config, opts: GatewayOptions = {}): Promise<Gateway> {
  const g = await prepareGateway(config, opts);
  // Metrics first: a port in use stops the start before the API accepts anything. A worker of
  // `serve --workers N` answers the primary instead, which serves them all aggregated.
  if (workerIndex() !== null) {
    new AggregatorRegistry(); // installs the listener answering the primary's requests
    AggregatorRegistry.setRegistries([g.services.metrics]);
  }
  const metrics =
    config.metrics && workerIndex() === null
      ? await startMetricsListener(g.services.metrics, config.metrics).catch(async (err) => {
          await g.close();
          throw err;
        })
      : null;
  if (metrics) g.app.addHook('onClose', () => metrics.close());
  const address = await g.app.listen({ port: config.port, host: config.host }).catch(async (err) => {
    await g.close();
    throw listenError(err, 'PORT', config.host, config.port);
  });
  const url = address.replace('[::1]', '127.0.0.1');
  // Interns' runtimes call back through the gateway's own port; reconcile once it listens.
  g.services.provisioner.setGatewayUrl(`http://127.0.0.1:${new URL(url).port}`);
  if (config.interns.runtimes) await g.services.interns.start();
  return { ...g, url, metricsUrl: metrics?.url ?? null };
}
