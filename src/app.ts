import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { Config } from './config.js';
import { listenForChanges } from './db/change-cache.js';
import { type ConnectionLimits, createConnectionLimits } from './http/connection-limits.js';
import { registerCors } from './http/cors.js';
import { errorBody, handleError } from './http/error-handler.js';
import { registerGracefulClose } from './http/graceful-close.js';
import { answerFrameworkError, registerGuard } from './http/guard.js';
import { registerJsonBodyParser } from './http/json-body.js';
import { registerOpenApi } from './http/openapi.js';
import { createRateLimiter } from './http/rate-limit.js';
import { genRequestId } from './http/request-ids.js';
import { lazyChildLogger } from './http/request-logger.js';
import { registerValidators } from './http/validation.js';
import { createSecretBox } from './lib/crypto.js';
import { createEventHub } from './lib/event-hub.js';
import { createNotifier } from './lib/notifier.js';
import { createA2aServerModule } from './modules/a2a-server/a2a-server-module.js';
import { createAccountsModule } from './modules/accounts/accounts-module.js';
import { createAgentsModule } from './modules/agents/agents-module.js';
import { agentsRepo } from './modules/agents/agents-repo.js';
import { createAuditModule } from './modules/audit/audit-module.js';
import { createCallbacksModule } from './modules/callbacks/callbacks-module.js';
import { dashboardRoutes } from './modules/dashboard/dashboard-module.js';
import { createHealthModule } from './modules/health/health-module.js';
import { createHousekeepingModule, type HousekeepingResult } from './modules/housekeeping/housekeeping-module.js';
import { createMcpModule } from './modules/mcp/mcp-module.js';
import {
  createMcpAccessTokens,
  createMcpOAuthModule,
  mcpOAuthIdentifiers,
} from './modules/mcp-oauth/mcp-oauth-module.js';
import { createMetricsModule } from './modules/metrics/metrics-module.js';
import { createOAuthModule } from './modules/oauth/oauth-module.js';
import { createProvidersModule } from './modules/providers/providers-module.js';
import { createRuntimeCheck, registeredRuntimeSchemas } from './modules/runtimes/adapters.js';
import { createRuntimesModule } from './modules/runtimes/runtimes-module.js';
import { createSchedulesModule } from './modules/schedules/schedules-module.js';
import { createSpotlightModule, spotlightLookups } from './modules/spotlight/spotlight-module.js';
import { genAiServiceSpan } from './modules/spotlight/usage/call-spans.js';
import { createTasksModule } from './modules/tasks/tasks-module.js';
import { createTelemetryModule } from './modules/telemetry/telemetry-module.js';
import { createTriggersModule } from './modules/triggers/triggers-module.js';
import { createWorkspacesModule } from './modules/workspaces/workspaces-module.js';
import { workspacesRepo } from './modules/workspaces/workspaces-repo.js';
import type { ProcessDeps } from './process-deps.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Runs one pass of background work now: the task sweeper, the callback sender, housekeeping. */
    background: {
      sweep(): Promise<unknown[]>;
      deliverCallbacks(): Promise<number>;
      housekeep(): Promise<HousekeepingResult>;
      /** One pass of the schedules' clock; resolves to the number of occurrences decided. */
      schedule(): Promise<number>;
      /** Hands queued tasks of push-runtime agents to their runtime and waits for those runs. */
      dispatch(): Promise<number>;
    };
    /** Per-user counts of open event streams and waiting requests on this instance (docs/api.md §2.6). */
    connections: ConnectionLimits;
  }
}

/**
 * Builds the HTTP application: every Fastify option lives here. It never listens; server.ts
 * and the tests call it the same way.
 */
export async function buildApp(
  config: Config,
  runtime: ProcessDeps,
  opts: { closeRuntime?: boolean } = {},
): Promise<FastifyInstance> {
  const rateLimit = createRateLimiter({
    limit: config.rateLimit,
    store: runtime.rateLimitStore,
    clock: runtime.clock,
    storeTimeoutMs: config.rateLimitStoreTimeoutMs,
    onStoreError: (err) => runtime.logger.warn({ err }, 'rate-limit store unavailable; request not counted'),
  });
  const app = Fastify({
    // A path parameter is checked by its route's schema (ids are UUIDs), whatever its length; the
    // URL as a whole is bounded by Node's header size limit.
    routerOptions: { maxParamLength: 16_384 },
    // Refusals before routing (a URL that does not decode): the documented envelope and headers.
    frameworkErrors: answerFrameworkError(rateLimit),
    loggerInstance: runtime.logger as FastifyBaseLogger,
    bodyLimit: config.maxBodyBytes,
    // Slow clients: headers and the whole request must arrive in time (Node answers 408 and closes);
    // the check runs often enough that the limits hold to within a quarter of the header limit.
    requestTimeout: Math.max(config.requestTimeoutMs, config.headersTimeoutMs),
    http: {
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, Math.ceil(config.headersTimeoutMs / 4)),
    },
    keepAliveTimeout: 72_000,
    // A plugin that starts at all starts in well under a second; on a machine loaded to a dozen
    // runnable processes per core, Fastify's default of 10 s failed starts that were only slow.
    pluginTimeout: 60_000,
    trustProxy: trustProxyOption(config.trustProxy),
    requestIdHeader: false,
    genReqId: (req) => genRequestId(req.headers),
    childLoggerFactory: lazyChildLogger,
    logController: new LogController({
      disableRequestLogging: config.logLevel !== 'debug' && config.logLevel !== 'trace',
    }),
    return503OnClosing: true,
  });
  // Fastify runs onClose hooks last-registered first: registered before any module's, this one
  // runs after all of them (the modules' final writes, e.g. the trace spans, still have a database).
  if (opts.closeRuntime) app.addHook('onClose', async () => runtime.close());

  registerValidators(app);
  registerJsonBodyParser(app);
  registerGracefulClose(app);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send(errorBody(request, 'NOT_FOUND', `Route ${request.method} ${request.url.split('?')[0]} not found`)),
  );

  await registerOpenApi(app, config.publicUrl);

  const box = createSecretBox(runtime.secrets.encryptionKey, runtime.secrets.previousEncryptionKeys);
  // OAuth access tokens of the MCP authorization server, accepted on /mcp only.
  const accounts = createAccountsModule({ config, runtime, box, mcpTokens: createMcpAccessTokens(config, runtime) });
  await registerCors(app, config.corsOrigins);
  registerGuard(app, { authenticate: accounts.authenticate, resolveWorkspace: accounts.resolveWorkspace, rateLimit });
  // Built in dependency order; each capability subscribes on the event hub to what it reacts to,
  // inside its own module: tasks and triggers to agent:deleted, callbacks and runtimes to
  // task:statusChanged, telemetry's task tracer, metrics and the push dispatcher to task:changed.
  const routeLookups = spotlightLookups(runtime.db);
  const credentialUsers = { routesNaming: routeLookups.routesNaming, agentsUsing: agentsRepo.namesUsingCredential };
  const providers = createProvidersModule({ config, runtime, box, ...credentialUsers });
  const outboundPolicy = { allowPrivate: config.allowPrivateUrls, lookup: runtime.lookup };
  // The one hub where rooms announce task and agent changes and hear each other's.
  const events = createEventHub();
  const agents = createAgentsModule({
    runtime,
    events,
    box,
    runtimeSchemas: registeredRuntimeSchemas(),
    checkRuntime: createRuntimeCheck({
      policy: outboundPolicy,
      providers: providers.service,
      routeExists: routeLookups.routeExists,
    }),
    cacheMs: config.agentCacheMs,
  });
  const connections = createConnectionLimits();
  app.decorate('connections', connections);
  // Wake-ups after commits (claims, streams, push runs, MCP cancels), across instances on PostgreSQL.
  const notifier = createNotifier({ db: runtime.db, log: runtime.logger });
  app.addHook('onClose', () => notifier.close());
  const tasks = createTasksModule({
    config,
    runtime,
    agents,
    events,
    connections,
    credentials: accounts.credentials,
    notifier,
    rateLimit,
  });
  const telemetry = createTelemetryModule({
    config,
    runtime,
    agentName: (workspaceUuid, agentUuid) => agents.service.get(workspaceUuid, agentUuid).then((agent) => agent.name),
    events,
  });
  const metrics = createMetricsModule({ config, runtime, events });
  const callbacks = createCallbacksModule({
    config,
    runtime,
    accounts: accounts.service,
    tasks,
    events,
    box,
    traceSpans: telemetry.tracer.enqueue,
    onAttempt: (outcome) => metrics.metrics.callbackAttempts.inc({ outcome }),
  });
  const triggers = createTriggersModule({
    config,
    runtime,
    box,
    agents,
    events,
    tasks: tasks.submitter,
    traceSpans: telemetry.tracer.enqueue,
    onUnloggedRefusal: () => metrics.metrics.webhookRefusalsUnlogged.inc(),
  });
  const health = createHealthModule({ db: runtime.db, clock: runtime.clock, intervalMs: config.healthIntervalMs });
  const housekeeping = createHousekeepingModule({ config, runtime });

  await app.register(metrics.routes);
  await app.register(health.routes);
  await app.register(housekeeping.routes);
  await app.register(accounts.routes);
  await app.register(agents.routes);
  await app.register(tasks.routes);
  await app.register(triggers.routes);
  const schedules = createSchedulesModule({ config, runtime, agents, events, tasks: tasks.submitter });
  await app.register(schedules.routes);
  await app.register(callbacks.routes);
  const workspaces = createWorkspacesModule({
    db: runtime.db,
    clock: runtime.clock,
    box,
    mailer: accounts.mailer,
    publicUrl: config.publicUrl,
    invitationTtlMs: config.invitationTtlSeconds * 1000,
    maxOwnedWorkspaces: config.maxWorkspacesPerUser,
    agents: agents.service,
    dropPendingCallbacks: callbacks.dropPendingOfWorkspace,
    credentialsChanged: accounts.credentialsChanged,
    events,
  });
  await app.register(workspaces.routes);
  await app.register(createAuditModule({ config, runtime }).routes);
  // Every agent as an A2A agent, over the tasks service. Its blocking sends and streams each take a
  // slot of the workspace's caps on waits and streams (`acquireConnection`).
  const a2aServer = createA2aServerModule({
    config,
    runtime,
    agents,
    tasks,
    notifier,
    acquireConnection: connections.acquire,
    credentials: accounts.credentials,
    // Push notifications: configs sealed with the box, notifications queued in the callbacks outbox.
    box,
    events,
    pushOutbox: callbacks.service,
  });
  await app.register(a2aServer.routes);
  // The MCP server at /mcp: every agent a tool, its calls normal tasks (waits capped as above).
  const mcp = createMcpModule({
    config,
    runtime,
    tasks,
    notifier,
    acquireConnection: connections.acquire,
    credentials: accounts.credentials,
    traceSpans: telemetry.tracer.enqueue,
    resourceMetadata: config.mcpOauth ? mcpOAuthIdentifiers(config).resourceMetadata : undefined,
  });
  await app.register(mcp.routes);

  const mcpOAuth = createMcpOAuthModule({
    config,
    runtime,
    workspaceNames: workspacesRepo.namesOf,
    credentialsChanged: accounts.credentialsChanged,
    events,
  });
  await app.register(mcpOAuth.routes);

  const oauth = createOAuthModule({ config, runtime, accounts: accounts.service });
  app.addHook('onClose', oauth.close);
  await app.register(oauth.routes);

  await app.register(telemetry.routes);
  app.decorate('telemetry', telemetry);

  await app.register(providers.routes);
  const spotlight = createSpotlightModule({
    config,
    runtime,
    providers: providers.service,
    // Each model call also becomes a GenAI span in the telemetry store.
    observers: [(call) => telemetry.tracer.enqueue(call.workspaceUuid, [genAiServiceSpan(call)])],
    events,
  });
  await app.register(spotlight.routes);
  // One listener for every cache of announced changes; the caches serve only while it is up.
  const changeFeeds = [accounts.changeFeed, agents.changeFeed, triggers.changeFeed, spotlight.changeFeed].filter(
    (feed) => feed !== null,
  );
  const listening = listenForChanges(runtime.db, changeFeeds, runtime.logger);
  app.addHook('onClose', async () => listening?.close());
  const runtimes = createRuntimesModule({
    config,
    runtime,
    box,
    tasks,
    notifier,
    events,
    accounts: accounts.service,
    spotlight: spotlight.service,
    admission: spotlight.admission,
  });
  await app.register(runtimes.routes);
  metrics.metrics.watchOutbound('callbacks', callbacks.outbound.stats);
  for (const [feature, lanes] of Object.entries(runtimes.outbound)) {
    metrics.metrics.watchOutbound(`${feature}_runtime`, lanes.stats);
  }
  metrics.metrics.watchPushRuns(runtimes.dispatcher.stats);
  metrics.metrics.watchSubmits(tasks.submitStats);

  // Background work on demand, so tests need not wait for its timers.
  app.decorate('background', {
    sweep: tasks.sweeper.sweep,
    deliverCallbacks: callbacks.sender.runOnce,
    housekeep: housekeeping.runOnce,
    dispatch: runtimes.dispatcher.runOnce,
    schedule: schedules.scheduler.runOnce,
  });

  // The dashboard: static files at /dashboard/ with their own security headers (TASKHOOK_DASHBOARD=false: 404).
  if (config.dashboard) await app.register(dashboardRoutes());
  return app;
}

/**
 * Fastify's `trustProxy` from the setting. A hop count trusts that many proxies in front of the
 * server (the classic semantics; the Fastify release in use would otherwise trust none for a
 * number). It cannot check who the nearest peer is, so an address list is the safer choice.
 */
function trustProxyOption(value: Config['trustProxy']) {
  if (typeof value !== 'number') return value;
  return (_address: string, hop: number) => hop < value;
}
