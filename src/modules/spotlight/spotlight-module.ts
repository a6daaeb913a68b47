import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { changeChannel, createChangeCache } from '../../db/change-cache.js';
import type { Db, Executor } from '../../db/connect.js';
import { createConnectionLimits } from '../../http/connection-limits.js';
import type { EventHub } from '../../lib/event-hub.js';
import { createFairOutboundDispatcher } from '../../lib/outbound.js';
import type { ProcessDeps } from '../../process-deps.js';
import { credentialsRepo } from '../accounts/credentials-repo.js';
import { agentsRepo } from '../agents/agents-repo.js';
import { providersRepo } from '../providers/providers-repo.js';
import type { ProvidersService } from '../providers/providers-service.js';
import { taskQueries } from '../tasks/task-queries.js';
import { workspacesRepo } from '../workspaces/workspaces-repo.js';
import { budgetsRepo } from './budgets/budgets-repo.js';
import { budgetsRoutes } from './budgets/budgets-routes.js';
import { type BudgetOwners, createBudgetsService } from './budgets/budgets-service.js';
import { createResponseCache } from './cache/cache-store.js';
import { createAdmission } from './limits/limits-admission.js';
import type { Limits } from './limits/limits-fns.js';
import { limitsRepo } from './limits/limits-repo.js';
import { limitsRoutes } from './limits/limits-routes.js';
import { createLimitsService } from './limits/limits-service.js';
import { proxyRoutes } from './proxy/proxy-routes.js';
import { createProxyService } from './proxy/proxy-service.js';
import { routesRepo } from './routes/routes-repo.js';
import { routesRoutes } from './routes/routes-routes.js';
import { createRoutesService } from './routes/routes-service.js';
import type { CallObserver } from './usage/call-spans.js';
import { callsRepo } from './usage/calls-repo.js';
import { loadPriceTable } from './usage/prices.js';
import { createUsageQueries } from './usage/usage-queries.js';
import { usageRoutes } from './usage/usage-routes.js';

/**
 * What rooms built before the model proxy ask of its routes (app.ts hands these in): whether a
 * route is the workspace's (an agent's `openai` runtime may name one), and which routes name a
 * credential (the providers room refuses to delete it then).
 */
export function spotlightLookups(db: Db) {
  return {
    routeExists: async (workspaceUuid: string, routeUuid: string) =>
      Boolean(await routesRepo.findOwned(db.kysely, workspaceUuid, routeUuid)),
    routesNaming: (ex: Executor, workspaceUuid: string, credentialUuid: string) =>
      routesRepo.namingCredential(ex, workspaceUuid, credentialUuid),
  };
}

/** Every change to a workspace's RPM/TPM limits, by workspace uuid. */
export const rateLimitChanges = changeChannel('taskhook_spotlight_rate_limits');

/** What budgets ask of the rooms that own tasks, agents and keys. */
function budgetOwners(db: Db): BudgetOwners {
  return {
    task: (workspaceUuid, taskUuid) => taskQueries.ownedBy(db.kysely, workspaceUuid, taskUuid),
    agentExists: async (workspaceUuid, agentUuid) =>
      (await agentsRepo.findOwned(db.kysely, workspaceUuid, agentUuid)) !== undefined,
    liveAgents: async (workspaceUuid) => new Set(await agentsRepo.liveUuidsOf(db.kysely, workspaceUuid)),
    keyExists: (workspaceUuid, keyUuid) => credentialsRepo.keyInWorkspace(db.kysely, workspaceUuid, keyUuid),
  };
}

/**
 * Wires the model proxy ("spotlight"), one sub-folder per part: `proxy/` (forwarding through
 * provider credentials), `routes/` (fallback routes), `budgets/` (limits and spend), `cache/`
 * (the response cache) and `usage/` (call records, prices, usage; housekeeping deletes records
 * past their retention). `observers` hear of every recorded call (the telemetry store's GenAI
 * span joins here, see usage/call-spans.ts).
 * @throws ConfigError when TASKHOOK_MODEL_PRICES_FILE is unreadable or malformed.
 */
export function createSpotlightModule(deps: {
  config: Config;
  runtime: ProcessDeps;
  providers: ProvidersService;
  observers?: CallObserver[];
  /** Where agent deletions are heard (an agent's budget goes with it). */
  events?: Pick<EventHub, 'on'>;
}) {
  const { config, runtime } = deps;
  const db = runtime.db;
  const budgets = createBudgetsService({ db, repo: budgetsRepo, owners: budgetOwners(db), clock: runtime.clock });
  deps.events?.on('agent:deleted', ({ trx, agentUuid }) =>
    budgetsRepo.deleteAgentBudget(trx, agentUuid).then(() => undefined),
  );
  deps.events?.on('agent:deleted', ({ trx, agentUuid }) => limitsRepo.deleteAgentLimits(trx, agentUuid));
  // Each workspace's RPM/TPM limits, cached as the credentials are and dropped when a change is heard.
  const limitsCache = createChangeCache<Map<string, Limits>>({
    ttlMs: config.credentialCacheMs,
    now: runtime.clock.now,
  });
  const admission = createAdmission({
    db,
    store: runtime.rateLimitStore,
    clock: runtime.clock,
    cache: limitsCache,
    storeTimeoutMs: config.rateLimitStoreTimeoutMs,
    log: (err, msg) => runtime.logger.warn({ err }, msg),
  });
  const owners = budgetOwners(db);
  const limits = createLimitsService({
    db,
    owners,
    admission,
    changes: rateLimitChanges,
    changed: (workspaceUuid) => limitsCache.invalidate(workspaceUuid),
    clock: runtime.clock,
  });
  const outbound = { allowPrivate: config.allowPrivateUrls, lookup: runtime.lookup };
  // The proxy and the openai runtime (which calls upstream through this service) share one pool in
  // which each workspace has its own lane, as the http and a2a runtimes and callbacks do.
  const dispatcher = createFairOutboundDispatcher({
    ...outbound,
    timeoutMs: config.proxyTimeoutMs,
    perAccount: config.outboundPerAccount,
  });
  const service = createProxyService({
    db,
    repo: callsRepo,
    findTask: (workspaceUuid, taskUuid) => taskQueries.ownedBy(db.kysely, workspaceUuid, taskUuid),
    providers: deps.providers,
    routes: {
      byName: (workspaceUuid, name) => routesRepo.findByName(db.kysely, workspaceUuid, name),
      byUuid: (workspaceUuid, uuid) => routesRepo.findOwned(db.kysely, workspaceUuid, uuid),
      list: (workspaceUuid) => routesRepo.list(db.kysely, workspaceUuid),
    },
    // In memory, per instance: answers are never written to disk or the database.
    cache: createResponseCache({ maxBytes: config.proxyCacheMaxBytes, now: runtime.clock.now }),
    upstream: {
      dispatcher,
      outbound,
      timeoutMs: config.proxyTimeoutMs,
      limits: {
        maxAnswerBytes: config.proxyMaxAnswerBytes,
        maxEventBytes: config.proxyMaxEventBytes,
        maxStreamBytes: config.proxyMaxStreamBytes,
      },
      now: runtime.clock.now,
    },
    clock: runtime.clock,
    prices: loadPriceTable(config.modelPricesFile),
    observers: deps.observers ?? [],
    log: (err, msg) => runtime.logger.warn({ err }, msg),
    budgets: { check: budgets.check, addSpend: budgetsRepo.addSpend },
    admission,
  });
  const routesService = createRoutesService({
    db,
    repo: routesRepo,
    providers: providersRepo,
    lockWorkspace: workspacesRepo.lock,
    liveRuntimes: agentsRepo.liveRuntimes,
    clock: runtime.clock,
  });
  const queries = createUsageQueries({ db, repo: callsRepo, clock: runtime.clock });

  async function routes(app: FastifyInstance) {
    const slots = createConnectionLimits({ proxy: config.proxyMaxInFlightPerAccount });
    await app.register(proxyRoutes(service, { maxBodyBytes: config.proxyMaxBodyBytes, slots }), {
      prefix: '/spotlight/v1',
    });
    await app.register(usageRoutes(queries));
    await app.register(budgetsRoutes(budgets));
    await app.register(limitsRoutes(limits));
    await app.register(routesRoutes(routesService));
    app.addHook('onClose', async () => dispatcher.close());
  }

  /** Closes the upstream connections (the routes' onClose does it for the app). */
  const close = () => dispatcher.close();

  /** The listener that drops cached limits when a change is announced (app.ts joins it to the others). */
  const changeFeed = config.credentialCacheMs > 0 ? { channel: rateLimitChanges, cache: limitsCache } : null;

  return { service, routesService, queries, budgets, limits, admission, routes, close, changeFeed };
}
