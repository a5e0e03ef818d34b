import { join } from 'node:path';
import { Registry } from 'prom-client';
import { AdminService } from './accounts/admin.service.js';
import { KeysService } from './accounts/keys.service.js';
import { OidcSignIn } from './accounts/oidc.service.js';
import { OrganizationsService } from './accounts/organizations.service.js';
import { Roles } from './accounts/roles.js';
import { WorkspaceWebhooks } from './accounts/workspace-webhooks.js';
import { WorkspacesService } from './accounts/workspaces.service.js';
import { ActivityService } from './activity/service.js';
import { AuditLog } from './audit/service.js';
import { MessageBatchesService } from './batches/anthropic-service.js';
import { BatchFilesService } from './batches/openai-files.js';
import { BatchesService } from './batches/service.js';
import { BatchWorker } from './batches/worker.js';
import { ByokService } from './byok/service.js';
import { reloadInBackground } from './catalog/refresh.js';
import { ClusterBus } from './cluster/bus.js';
import { applyClusterEvent } from './cluster/caches.js';
import { clusterLink, IpcLimitStore, IpcReservations, IpcWindows } from './cluster/ipc.js';
import { CompactionService } from './compaction/service.js';
import type { Config } from './config.js';
import { ContentLog } from './content-log/service.js';
import { BudgetsService } from './credits/budgets.service.js';
import { mediaBilling } from './credits/media-billing.js';
import { MemoryReservations, RedisReservations } from './credits/reservations.js';
import { CreditsService } from './credits/service.js';
import { type SpendEvent, SpendTracker } from './credits/spend.js';
import { SpendAdmission } from './credits/spend-admission.js';
import { UsageService } from './credits/usage.service.js';
import type { DbHandle } from './db/connection.js';
import { FeedbackService } from './feedback/service.js';
import { InputFiles } from './files/input-files.js';
import { assertTranslatable } from './formats/capabilities.js';
import { GuardrailAssignmentsService } from './guardrails/assignments.service.js';
import { EffectivePolicyService } from './guardrails/effective.service.js';
import { PolicyService } from './guardrails/policy.js';
import { GuardrailsService } from './guardrails/service.js';
import { InternAccess } from './interns/access.js';
import { LocalProvisioner } from './interns/local-provisioner.js';
import { Programme } from './interns/programme.js';
import { InternsService } from './interns/service.js';
import type { Log } from './lib/log.js';
import { MemoryLimitStore, RedisLimitStore } from './limits/store.js';
import { UsageLimits } from './limits/usage-limits.js';
import type { MediaLink } from './media/forward.routes.js';
import { VideoJobStore } from './media/jobs/store.js';
import { MessageThreadsService } from './message-threads/service.js';
import { DEFAULT_DISPATCH, ExportDispatcher } from './observability/dispatcher.js';
import { DestinationsService } from './observability/service.js';
import { PresetsService } from './presets/service.js';
import { closeUpstreamHttp, coverUpstreamDeadlines } from './providers/http.js';
import { ProviderRegistry } from './providers/registry.js';
import { createRemoteMedia } from './providers/remote-media.js';
import type { Provider } from './providers/types.js';
import { Accountant } from './routing/accounting.js';
import { loadCatalog } from './routing/catalog.js';
import { CredentialRouter } from './routing/credentials/service.js';
import { Engine, newGenerationId } from './routing/engine.js';
import { startGenerationWriter } from './routing/generation-writer.js';
import { GenerationsService } from './routing/generations.js';
import { PolicyGuard } from './routing/guard.js';
import { routingMetrics } from './routing/metrics.js';
import { RateLimiter } from './routing/rate-limit.js';
import { UsageJournal } from './routing/usage-journal.js';
import { ConversationsService } from './stored-responses/conversations.js';
import { StoredResponsesService } from './stored-responses/service.js';
import { upstreamInputItems } from './stored-responses/upstream.js';
import { VaultService } from './vault/service.js';

/** The composition root: every domain service, wired once per process, all logging through `log`. */
export function buildServices(handle: DbHandle, config: Config, log: Log) {
  const { db } = handle;
  const metrics = new Registry();
  const usage = new UsageService(db);
  // Hot-path caches of the routing engine: effective policies and spend counters.
  const policy = new PolicyService(db);
  const spend = new SpendTracker(db, { credits: config.credits });
  // A worker of `serve --workers N` without Redis: the shared state is in the primary process.
  const ipc = config.redisUrl ? null : clusterLink();
  const windows = ipc ? new IpcWindows(ipc, log.child({ component: 'rate-limits' })) : null;
  // Other nodes (or workers) hear of this one's writes and spend at once through Redis, or the
  // primary process (a no-op on a single process without REDIS_URL).
  const cluster = new ClusterBus({ redisUrl: config.redisUrl, prefix: config.redisPrefix, logger: log, ipc });
  const policyWrites = {
    invalidate: () => {
      policy.invalidate();
      cluster.publish({ kind: 'policy' });
    },
  };
  const credits = new CreditsService(db, usage, {
    creditsChanged: (organizationId) => {
      spend.creditsChanged(organizationId);
      cluster.publish({ kind: 'credits', organizationId });
    },
  });
  const orgs = new OrganizationsService(db);
  const roles = new Roles(db);
  const workspaces = new WorkspacesService(db);
  const budgets = new BudgetsService(db, workspaces);
  const keys = new KeysService(db, workspaces, orgs, usage, { limitDefaults: config.keyLimitDefaults });
  const admin = new AdminService(orgs, keys, credits);
  const guardrails = new GuardrailsService(db, workspaces, policyWrites);
  const guardrailAssignments = new GuardrailAssignmentsService(db, guardrails, keys, orgs, policyWrites);
  const effectivePolicy = new EffectivePolicyService(keys, policy);
  const catalog = loadCatalog(config.env);
  // Read per call: a catalog reload changes which providers take BYOK credentials.
  const byokAllowed = (slug: string) => catalog.providers.get(slug)?.byok;
  const byok = new ByokService(db, config.masterKey, workspaces, keys, orgs, byokAllowed);
  keys.onInvalidate((hash) => cluster.publish({ kind: 'key', hash }));
  byok.onInvalidate((organizationId) => cluster.publish({ kind: 'byok', organizationId }));
  // A reload through the operator API on another node or worker reloads this one's catalog too.
  const catalogReload = { reload: () => reloadInBackground({ catalog, env: config.env, log }) };
  cluster.onEvent((e) => applyClusterEvent({ keys, policy, byok, spend, catalog: catalogReload }, e));

  // The routing engine: catalog, provider adapters, enforcement and accounting. The adapters are
  // rebuilt with the catalog on each reload (SIGHUP, POST /admin/catalog/reload).
  const adapters = new ProviderRegistry();
  catalog.prepareProviders = (entries) => adapters.prepare([...entries.values()].map((e) => e.config));
  catalog.prepareProviders(catalog.providers).install();
  const provider = (slug: string): Provider => {
    const p = adapters.get(slug);
    if (!p) throw new Error(`provider ${slug} is not configured`);
    return p;
  };
  const limiter = new RateLimiter({
    points: config.rateLimitRequests,
    durationSeconds: config.rateLimitWindowSeconds,
    redisUrl: config.redisUrl,
    keyPrefix: `${config.redisPrefix}:rl`,
    logger: log,
    shared: windows,
  });
  // Journaled on local disk until written: a killed process loses no answered call's usage.
  const journal = new UsageJournal(join(config.dataDir, 'journal'));
  const accountant = new Accountant(
    db,
    log.child({ component: 'accounting' }),
    { intervalMs: config.accountingIntervalMs, maxBatch: 500 },
    handle.sqlite ?? null,
    journal,
    handle.sqlite && !handle.sqlite.memory
      ? startGenerationWriter(handle.sqlite.name, (message) =>
          log.error(
            { component: 'accounting', message },
            'generation writer thread failed; writing on the event loop',
          ),
        )
      : null,
  );
  usage.settleWith(() => accountant.flush());
  accountant.onRecord((g) => {
    if (g.cost_usd > 0) {
      const event: SpendEvent = {
        keyHash: g.key_hash,
        userId: g.user_id,
        organizationId: g.organization_id,
        costUsd: g.cost_usd,
        isByok: g.is_byok === 1,
        at: g.created_at,
        id: g.id,
      };
      spend.record(event);
      cluster.publish({ kind: 'spend', event });
    }
  });
  // Worst-case costs of calls in flight: shared through Redis by the nodes when there is one, by
  // the primary process between the workers of `serve --workers N` otherwise.
  const reservations = config.redisUrl
    ? new RedisReservations({
        redisUrl: config.redisUrl,
        prefix: config.redisPrefix,
        logger: log.child({ component: 'spend-reservations' }),
      })
    : ipc
      ? new IpcReservations(ipc, log.child({ component: 'spend-reservations' }))
      : new MemoryReservations();
  const admission = new SpendAdmission(spend, reservations, config.spendReservations.ttlMs);
  // Usage limits of keys (rpm, tpm, calls in flight): shared through Redis by the nodes when there
  // is one, by the primary process between the workers of `serve --workers N` otherwise.
  const usageLimits = new UsageLimits(
    config.redisUrl
      ? new RedisLimitStore({
          redisUrl: config.redisUrl,
          prefix: config.redisPrefix,
          logger: log.child({ component: 'usage-limits' }),
        })
      : ipc
        ? new IpcLimitStore(ipc, log.child({ component: 'usage-limits' }))
        : new MemoryLimitStore(),
    config.spendReservations.ttlMs,
  );
  const guard = new PolicyGuard(policy, spend, keys, limiter, admission, usageLimits);
  const credentials = new CredentialRouter(catalog, config.credentials, metrics);
  coverUpstreamDeadlines(config);
  const engine = new Engine({
    catalog,
    provider,
    guard,
    byok: (caller, slug, modelId) => byok.forCall(caller, slug, modelId),
    assertTranslatable,
    remoteMedia: createRemoteMedia({ mode: config.remoteMedia }),
    record: (g) => accountant.record(g),
    metrics: routingMetrics(metrics),
    newGenerationId,
    upstreamTimeoutMs: config.upstreamTimeoutMs,
    streamIdleTimeoutMs: config.streamIdleTimeoutMs,
    maxRetryWaitMs: config.maxRetryWaitMs,
    reservedOutputTokens: config.spendReservations.outputTokens,
    credentials,
  });
  const generations = new GenerationsService(db, accountant);
  const feedback = new FeedbackService(db, generations);
  // Request and response content of the workspaces that keep it, written off the calls' path.
  // Export destinations: every accounted generation is matched and queued off the response path.
  const contentLog = new ContentLog({ db, log: log.child({ component: 'content-log' }), metrics });
  const destinations = new DestinationsService(db, config.masterKey, workspaces);
  const exports = new ExportDispatcher(
    destinations,
    log.child({ component: 'exports' }),
    metrics,
    {
      ...DEFAULT_DISPATCH,
      allowPrivate: config.exportPrivate,
      queueMax: config.exportQueueMax,
      contentMaxBytes: config.exportContentMaxBytes,
    },
    // Records carry content only while their workspace logs it, as content logging kept it (redacted).
    async (scope, generationIds) => {
      const content = new Map<string, { input: unknown; output: unknown }>();
      if (!(await contentLog.settings(scope.workspaceId)).enabled) return content;
      for (const [id, kept] of await contentLog.getMany(scope, generationIds))
        content.set(id, { input: kept.input, output: kept.output });
      return content;
    },
  );
  accountant.onRecord(exports.onRecord);
  const audit = new AuditLog({
    db,
    log: log.child({ component: 'audit' }),
    metrics,
    retentionMs: config.auditRetentionMs,
  });
  workspaces.onChange((workspaceId) => contentLog.forget(workspaceId));
  // A workspace's disabled server tools are part of its keys' effective policy.
  workspaces.onChange(() => policyWrites.invalidate());
  // Console sign-in with the operator's identity provider (null when not configured).
  const oidc = config.oidc
    ? new OidcSignIn({
        db,
        settings: config.oidc,
        masterKey: config.masterKey,
        keys,
        audit,
        log: log.child({ component: 'oidc' }),
      })
    : null;
  const activity = new ActivityService(db, handle.dialect);
  // Conversations are kept as long as stored responses (the same setting), after their last write.
  const conversations = new ConversationsService({ db, retentionMs: config.responsesRetentionMs });
  const storedResponses = new StoredResponsesService({
    db,
    conversations,
    retentionMs: config.responsesRetentionMs,
    upstreamInputItems: upstreamInputItems({ catalog, provider, timeoutMs: config.upstreamTimeoutMs }),
  });
  // Anthropic message threads Gatehouse holds are kept as long as stored responses (the same setting).
  const messageThreads = new MessageThreadsService({ db, retentionMs: config.responsesRetentionMs });
  const presets = new PresetsService(db);
  // Compaction items Gatehouse mints carry their summary sealed under the master key.
  const compaction = new CompactionService(config.masterKey);
  const batchLimiter = new RateLimiter({
    points: config.batches.rateLimit,
    durationSeconds: config.batches.rateLimitWindowSeconds,
    redisUrl: config.redisUrl,
    keyPrefix: `${config.redisPrefix}:batches`,
    logger: log,
    shared: windows,
  });
  const batchFiles = new BatchFilesService({ db, dialect: handle.dialect, config: config.batches });
  // Files models read: stored beside batch files, put into the calls that name them.
  const inputFiles = new InputFiles(db, handle.dialect);
  const batches = new BatchesService({
    files: batchFiles,
    db,
    sqlite: handle.sqlite ?? null,
    engine,
    catalog,
    spend,
    config: config.batches,
    limiter: batchLimiter,
  });
  // Anthropic's Message Batches API: a view of the /v1/messages batches above.
  const messageBatches = new MessageBatchesService({
    db,
    batches,
    maxItemBytes: config.batches.maxItemBytes,
  });

  // Interns and vaults: the programme check, secrets, the local provisioner and the lifecycle.
  const programme = new Programme(db);
  const vaultLimiter = new RateLimiter({
    points: config.interns.vaultWriteLimit,
    durationSeconds: config.interns.vaultWriteWindowSeconds,
    redisUrl: config.redisUrl,
    keyPrefix: `${config.redisPrefix}:vault`,
    logger: log,
    shared: windows,
  });
  const internAccess = new InternAccess(db);
  const vault = new VaultService({
    db,
    dialect: handle.dialect,
    masterKey: config.masterKey,
    config: config.interns,
    limiter: vaultLimiter,
    access: internAccess,
  });
  const provisioner = new LocalProvisioner(config.interns, log.child({ component: 'interns-runtime' }));
  const interns = new InternsService({
    db,
    config: config.interns,
    vault,
    provisioner,
    keys,
    workspaces,
    access: internAccess,
    log: log.child({ component: 'interns' }),
  });

  /** Charges the media service's priced routes to API-key callers (serve shares this process). */
  const media = mediaBilling({
    guard,
    record: (row) => accountant.record(row),
  });

  /** A batch worker over these services (started by the gateway, or alone by `gatehouse worker`). */
  const createWorker = () =>
    new BatchWorker({
      db,
      dialect: handle.dialect,
      engine,
      keys,
      accountant,
      catalog,
      config: config.batches,
      log: log.child({ component: 'batch-worker' }),
      sqlite: handle.sqlite ?? null,
    });

  /** Writes pending accounting and releases connections; the database closes after this. */
  const shutdown = async () => {
    // Requests cut at the end of the shutdown grace unwind first: they still write.
    await batches.drain();
    await engine.drain();
    await interns.close();
    await accountant.close();
    await contentLog.close();
    await exports.close();
    await limiter.close();
    await batchLimiter.close();
    await vaultLimiter.close();
    await cluster.close();
    await reservations.close();
    await usageLimits.close();
    await closeUpstreamHttp();
  };
  return {
    config,
    log,
    db,
    dialect: handle.dialect,
    guardrails,
    guardrailAssignments,
    effectivePolicy,
    usage,
    credits,
    orgs,
    roles,
    workspaces,
    budgets,
    keys,
    admin,
    byok,
    metrics,
    catalog,
    engine,
    credentials,
    accountant,
    programme,
    vault,
    provisioner,
    interns,
    mediaBilling: media,
    /** Where `/api/v1/images…` is forwarded; `serve` sets it to the media service it starts, unless configured. */
    mediaLink: { url: config.mediaForwardUrl } as MediaLink,
    /** The media service's video jobs, in this database (its video API needs them). */
    mediaVideoJobs: new VideoJobStore(db),
    /** Workspaces' video webhook settings: their signing secrets (routes) and what the media service signs with. */
    workspaceWebhooks: new WorkspaceWebhooks(db, config.masterKey, workspaces),
    generations,
    feedback,
    contentLog,
    destinations,
    activity,
    storedResponses,
    messageThreads,
    presets,
    compaction,
    conversations,
    audit,
    oidc,
    batches,
    batchFiles,
    inputFiles,
    messageBatches,
    createWorker,
    shutdown,
    policy,
    spend,
    cluster,
  };
}

export type Services = ReturnType<typeof buildServices>;
