import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { createConnectionLimits } from '../../http/connection-limits.js';
import { createOutboundDispatcher } from '../../lib/outbound.js';
import { iso } from '../../lib/time.js';
import type { Runtime } from '../../runtime.js';
import type { ProvidersService } from '../providers/providers-service.js';
import { loadPriceTable } from './spotlight-prices.js';
import { createSpotlightQueries } from './spotlight-queries.js';
import { spotlightRepo } from './spotlight-repo.js';
import { proxyRoutes } from './spotlight-routes.js';
import { createSpotlightService } from './spotlight-service.js';
import type { CallObserver } from './spotlight-telemetry.js';
import { usageRoutes } from './spotlight-usage-routes.js';

const DAY_MS = 86_400_000;
const SWEEP_EVERY_MS = 3_600_000;
const SWEEP_BATCH = 1000;

/**
 * Wires the model proxy ("spotlight"): forwarding through provider credentials, call records,
 * usage, and the retention sweep. `observers` hear of every recorded call (the telemetry store's
 * GenAI span joins here, see spotlight-telemetry.ts).
 * @throws ConfigError when TASKHOOK_MODEL_PRICES_FILE is unreadable or malformed.
 */
export function createSpotlightModule(deps: {
  config: Config;
  runtime: Runtime;
  providers: ProvidersService;
  observers?: CallObserver[];
}) {
  const { config, runtime } = deps;
  const outbound = { allowPrivate: config.allowPrivateUrls, lookup: runtime.lookup };
  const dispatcher = createOutboundDispatcher({ ...outbound, timeoutMs: config.proxyTimeoutMs });
  const service = createSpotlightService({
    db: runtime.db,
    repo: spotlightRepo,
    providers: deps.providers,
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
  });
  const queries = createSpotlightQueries({ db: runtime.db, repo: spotlightRepo, clock: runtime.clock });

  /** Deletes records older than the retention, in batches so no sweep holds a long lock. */
  async function sweep() {
    const before = iso(runtime.clock.now() - config.spotlightRetentionDays * DAY_MS);
    while ((await runtime.db.transaction((trx) => spotlightRepo.sweep(trx, before, SWEEP_BATCH))) === SWEEP_BATCH);
  }

  async function routes(app: FastifyInstance) {
    const slots = createConnectionLimits({ proxy: config.proxyMaxInFlightPerAccount });
    await app.register(proxyRoutes(service, { maxBodyBytes: config.proxyMaxBodyBytes, slots }), {
      prefix: '/spotlight/v1',
    });
    await app.register(usageRoutes(queries));
    let timer: NodeJS.Timeout | undefined;
    const run = () => sweep().catch((err) => runtime.logger.warn({ err }, 'spotlight retention sweep failed'));
    app.addHook('onReady', async () => {
      void run();
      timer = setInterval(run, SWEEP_EVERY_MS);
      timer.unref();
    });
    app.addHook('onClose', async () => {
      clearInterval(timer);
      await dispatcher.close();
    });
  }

  /** Closes the upstream connections (the routes' onClose does it for the app). */
  const close = () => dispatcher.close();

  return { service, queries, sweep, routes, close };
}
