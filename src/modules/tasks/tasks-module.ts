import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import type { ConnectionLimits } from '../../http/connection-limits.js';
import { invalid } from '../../http/errors.js';
import { createAccountLanes } from '../../lib/account-lanes.js';
import type { EventHub } from '../../lib/event-hub.js';
import { checkOutboundUrl, OutboundUrlError } from '../../lib/outbound.js';
import type { ProcessDeps } from '../../process-deps.js';
import type { CredentialCheck } from '../accounts/accounts-module.js';
import type { AgentsModule } from '../agents/agents-module.js';
import { createEstimator } from './estimator.js';
import { eventsRoutes } from './events-routes.js';
import { idempotencyRepo } from './idempotency-repo.js';
import { createLifecycle } from './lifecycle.js';
import { createNotifier } from './notifier.js';
import { tasksRepo } from './tasks-repo.js';
import { tasksRoutes } from './tasks-routes.js';
import { createTasksService } from './tasks-service.js';
import { createSweeper } from './tasks-sweeper.js';
import { createTaskWriter } from './tasks-writer.js';
import { workerRoutes } from './worker-routes.js';
import { createWorkerService } from './worker-service.js';

/**
 * Wires tasks: the user API, the worker protocol, the event stream, the sweeper, and the
 * wake-up notifier. Open tasks are cancelled when their agent is deleted. Every change of a
 * task goes through `lifecycle` (other capabilities too: push runtimes, A2A). Other capabilities
 * hear of changes on the event hub: `task:statusChanged` (e.g. callbacks) or `task:changed`.
 */
export function createTasksModule(deps: {
  config: Config;
  runtime: ProcessDeps;
  agents: Pick<AgentsModule, 'service'>;
  /** Where task changes are announced, and agent deletions heard. */
  events: EventHub;
  /** Per-user counts of open streams and waiting claims. */
  connections: ConnectionLimits;
  /** Re-checks the credential a stream was opened with. */
  credentials: CredentialCheck;
}) {
  const { runtime, config } = deps;
  const db = runtime.db;
  const notifier = createNotifier({ db, log: runtime.logger });
  const writer = createTaskWriter({ repo: tasksRepo, notifier, events: deps.events });
  const lifecycle = createLifecycle({ repo: tasksRepo, writer, clock: runtime.clock });
  const policy = { allowPrivate: config.allowPrivateUrls, lookup: runtime.lookup };
  const submitLanes = createAccountLanes(config.submitsPerAccount);
  const service = createTasksService({
    db,
    repo: tasksRepo,
    idempotency: idempotencyRepo,
    agents: deps.agents.service,
    writer,
    lifecycle,
    estimator: createEstimator({ db, repo: tasksRepo }),
    clock: runtime.clock,
    publicUrl: config.publicUrl,
    // The callback address is checked at submit time (and again by the sender at connect time).
    checkWebhookUrl: async (url) => {
      try {
        await checkOutboundUrl(url, policy);
      } catch (err) {
        if (err instanceof OutboundUrlError) throw invalid('webhook_url', err.message);
        throw err;
      }
    },
    lanes: submitLanes,
  });
  const worker = createWorkerService({
    db,
    lifecycle,
    agents: deps.agents.service,
    notifier,
    connections: deps.connections,
    clock: runtime.clock,
  });
  const sweeper = createSweeper({
    db,
    repo: tasksRepo,
    lifecycle,
    clock: runtime.clock,
    intervalMs: config.sweepIntervalMs,
    log: runtime.logger,
  });

  deps.events.on('agent:deleting', ({ agentUuid }) => service.cancelAllOfAgent(agentUuid));
  deps.events.on('agent:deleted', ({ trx, agentUuid, at }) =>
    service.cancelRestOfAgent(trx, agentUuid, Date.parse(at)),
  );

  async function routes(app: FastifyInstance) {
    app.addHook('onReady', async () => sweeper.start());
    app.addHook('preClose', async () => {
      worker.close();
      await sweeper.stop();
      await notifier.close();
    });
    await app.register(tasksRoutes(service));
    await app.register(workerRoutes(worker, { credentials: deps.credentials, timers: runtime.timers }));
    await app.register(
      eventsRoutes({
        service,
        notifier,
        connections: deps.connections,
        credentials: deps.credentials,
        timers: runtime.timers,
      }),
    );
  }

  return {
    service,
    worker,
    sweeper,
    notifier,
    writer,
    /** The one door for changing and claiming tasks (see lifecycle.ts). */
    lifecycle,
    routes,
    /** Submits in progress and waiting in their account's lane (for metrics). */
    submitStats: () => submitLanes.stats(),
    /** A task's trace context fields by id (undefined when it is gone), for spans of work done later. */
    traceFields: (taskUuid: string) => tasksRepo.traceFields(db.kysely, taskUuid),
  };
}

export type TasksModule = ReturnType<typeof createTasksModule>;
