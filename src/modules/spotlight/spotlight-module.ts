import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { createConnectionLimits } from '../../http/connection-limits.js';
import type { EventHub } from '../../lib/event-hub.js';
import { createFairOutboundDispatcher } from '../../lib/outbound.js';
import type { ProcessDeps } from '../../process-deps.js';
import { providersRepo } from '../providers/providers-repo.js';
import type { ProvidersService } from '../providers/providers-service.js';
import { budgetsRepo } from './budgets-repo.js';
import { budgetsRoutes } from './budgets-routes.js';
import { createBudgetsService } from './budgets-service.js';
import { createResponseCache } from './response-cache.js';
import { routesRepo } from './routes-repo.js';
import { routesRoutes } from './routes-routes.js';
import { createRoutesService } from './routes-service.js';
import { loadPriceTable } from './spotlight-prices.js';
import { createSpotlightQueries } from './spotlight-queries.js';
import { spotlightRepo } from './spotlight-repo.js';
import { proxyRoutes } from './spotlight-routes.js';
import { createSpotlightService } from './spotlight-service.js';
import type { CallObserver } from './spotlight-telemetry.js';
import { usageRoutes } from './spotlight-usage-routes.js';

/**
 * Wires the model proxy ("spotlight"): forwarding through provider credentials, call records,
 * and usage (housekeeping deletes records past their retention). `observers` hear of every recorded call (the telemetry store's
 * GenAI span joins here, see spotlight-telemetry.ts).
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
  const budgets = createBudgetsService({ db: runtime.db, repo: budgetsRepo, clock: runtime.clock });
  deps.events?.on('agent:deleted', ({ trx, agentUuid }) =>
    budgetsRepo.deleteAgentBudget(trx, agentUuid).then(() => undefined),
  );
  const outbound = { allowPrivate: config.allowPrivateUrls, lookup: runtime.lookup };
  // The proxy and the openai runtime (which calls upstream through this service) share one pool in
  // which each workspace has its own lane, as the http and a2a runtimes and callbacks do.
  const dispatcher = createFairOutboundDispatcher({
    ...outbound,
    timeoutMs: config.proxyTimeoutMs,
    perAccount: config.outboundPerAccount,
  });
  const db = runtime.db;
  const service = createSpotlightService({
    db,
    repo: spotlightRepo,
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
  });
  const routesService = createRoutesService({
    db: runtime.db,
    repo: routesRepo,
    providers: providersRepo,
    clock: runtime.clock,
  });
  const queries = createSpotlightQueries({ db: runtime.db, repo: spotlightRepo, clock: runtime.clock });

  async function routes(app: FastifyInstance) {
    const slots = createConnectionLimits({ proxy: config.proxyMaxInFlightPerAccount });
    await app.register(proxyRoutes(service, { maxBodyBytes: config.proxyMaxBodyBytes, slots }), {
      prefix: '/spotlight/v1',
    });
    await app.register(usageRoutes(queries));
    await app.register(budgetsRoutes(budgets));
    await app.register(routesRoutes(routesService));
    app.addHook('onClose', async () => dispatcher.close());
  }

  /** Closes the upstream connections (the routes' onClose does it for the app). */
  const close = () => dispatcher.close();

  return { service, routesService, queries, budgets, routes, close };
}
