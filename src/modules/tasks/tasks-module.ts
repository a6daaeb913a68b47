import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { invalid } from '../../http/errors.js';
import type { Runtime } from '../../runtime.js';
import { agentsRepo } from '../agents/agents-repo.js';
import type { AgentDeleteCascade, AgentsService } from '../agents/agents-service.js';
import { createEstimator } from './estimator.js';
import { eventsRoutes } from './events-routes.js';
import { idempotencyRepo } from './idempotency-repo.js';
import { createNotifier } from './notifier.js';
import { type TaskRecord, tasksRepo } from './tasks-repo.js';
import { tasksRoutes } from './tasks-routes.js';
import type { SubmitInput } from './tasks-schemas.js';
import { createTasksService } from './tasks-service.js';
import { createSweeper } from './tasks-sweeper.js';
import { createTaskWriter, type StatusChangeHook } from './tasks-writer.js';
import { workerRoutes } from './worker-routes.js';
import { createWorkerService } from './worker-service.js';

/** The default check of a callback URL: absolute http(s). */
async function checkCallbackUrl(input: SubmitInput) {
  if (!input.webhook_url) return;
  let url: URL;
  try {
    url = new URL(input.webhook_url);
  } catch {
    throw invalid('webhook_url', 'must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('webhook_url', 'must use http or https');
}

/**
 * Wires tasks: the user API, the worker protocol, the event stream, the sweeper, and the
 * wake-up notifier. `hooks` run in the transaction of every status change.
 */
export function createTasksModule(deps: {
  config: Config;
  runtime: Runtime;
  agents: AgentsService;
  hooks?: StatusChangeHook[];
  committed?: Array<(task: TaskRecord) => void>;
  validateSubmit?: (input: SubmitInput) => Promise<void>;
}) {
  const { runtime, config } = deps;
  const db = runtime.db;
  const notifier = createNotifier({ databaseUrl: config.databaseUrl, log: runtime.logger });
  const writer = createTaskWriter({
    db,
    repo: tasksRepo,
    notifier,
    hooks: deps.hooks ?? [],
    committed: deps.committed ?? [],
  });
  const service = createTasksService({
    db,
    repo: tasksRepo,
    idempotency: idempotencyRepo,
    agents: deps.agents,
    writer,
    estimator: createEstimator({ db, repo: tasksRepo }),
    clock: runtime.clock,
    publicUrl: config.publicUrl,
    validateSubmit: deps.validateSubmit ?? checkCallbackUrl,
  });
  const worker = createWorkerService({
    db,
    repo: tasksRepo,
    agentsRepo,
    agents: deps.agents,
    writer,
    notifier,
    clock: runtime.clock,
  });
  const sweeper = createSweeper({
    db,
    repo: tasksRepo,
    idempotency: idempotencyRepo,
    writer,
    clock: runtime.clock,
    intervalMs: config.sweepIntervalMs,
    log: runtime.logger,
  });

  /** What deleting an agent does to its tasks: every open one is cancelled. */
  const cascade: AgentDeleteCascade = async (trx, agentUuid, now) => {
    for (const task of await service.cancelAllOfAgent(trx, agentUuid, now)) writer.announce(task);
  };

  async function routes(app: FastifyInstance) {
    app.addHook('onReady', async () => sweeper.start());
    app.addHook('preClose', async () => {
      worker.close();
      await sweeper.stop();
      await notifier.close();
    });
    await app.register(tasksRoutes(service));
    await app.register(workerRoutes(worker));
    await app.register(eventsRoutes({ service, notifier }));
  }

  return { service, worker, sweeper, notifier, cascade, routes };
}
