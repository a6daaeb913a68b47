import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import type { ConnectionLimits } from '../../http/connection-limits.js';
import { invalid } from '../../http/errors.js';
import type { RateLimiter } from '../../http/rate-limit.js';
import { createAccountLanes } from '../../lib/account-lanes.js';
import type { EventHub } from '../../lib/event-hub.js';
import type { Notifier } from '../../lib/notifier.js';
import { checkOutboundUrl, OutboundUrlError } from '../../lib/outbound.js';
import type { CredentialCheck } from '../../lib/principal.js';
import type { ProcessDeps } from '../../process-deps.js';
import type { AgentsModule } from '../agents/agents-module.js';
import { agentEventsRepo } from './events/agent-events-repo.js';
import { eventsRoutes } from './events/events-routes.js';
import { createLifecycle } from './lifecycle/lifecycle.js';
import { createTaskWriter } from './lifecycle/tasks-writer.js';
import { createBulkService } from './operations/bulk-service.js';
import { operationsRoutes } from './operations/operations-routes.js';
import { createTaskRerunner } from './operations/task-rerunner.js';
import { fairQueueRepo } from './queue/fair-queue-repo.js';
import { queueRepo } from './queue/queue-repo.js';
import { createSweeper } from './queue/tasks-sweeper.js';
import { createEstimator } from './submit/estimator.js';
import { idempotencyRepo } from './submit/idempotency-repo.js';
import { createTaskSubmitter } from './submit/task-submitter.js';
import { widensClaims } from './tasks-fns.js';
import { tasksRepo } from './tasks-repo.js';
import { tasksRoutes } from './tasks-routes.js';
import { createTasksService } from './tasks-service.js';
import { workerRoutes } from './worker/worker-routes.js';
import { createWorkerService } from './worker/worker-service.js';

/**
 * Wires tasks: the user API, submits, the worker protocol, the event stream and the sweeper,
 * woken through the instance's notifier. Open tasks are cancelled when their agent is deleted. Every change of a
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
  /** The request windows: a bulk rerun counts one request per task in its workspace's. */
  rateLimit: RateLimiter;
  /** Wake-ups of long-polling claims and event streams, across instances. */
  notifier: Notifier;
}) {
  const { runtime, config } = deps;
  const db = runtime.db;
  const { notifier } = deps;
  const writer = createTaskWriter({ repo: tasksRepo, notifier, events: deps.events });
  const lifecycle = createLifecycle({
    repo: tasksRepo,
    queue: queueRepo,
    fair: fairQueueRepo,
    writer,
    clock: runtime.clock,
  });
  const policy = { allowPrivate: config.allowPrivateUrls, lookup: runtime.lookup };
  const submitLanes = createAccountLanes(config.submitsPerAccount);
  const submitter = createTaskSubmitter({
    db,
    idempotency: idempotencyRepo,
    agents: deps.agents.service,
    lifecycle,
    estimator: createEstimator({ db, queue: queueRepo }),
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
  const service = createTasksService({ db, repo: tasksRepo, agents: deps.agents.service, lifecycle });
  const rerunner = createTaskRerunner({ requireTask: service.requireTask, submitter });
  const bulk = createBulkService({ db, repo: tasksRepo, agents: deps.agents.service, lifecycle, rerunner });
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
    queue: queueRepo,
    lifecycle,
    clock: runtime.clock,
    intervalMs: config.sweepIntervalMs,
    log: runtime.logger,
  });

  // A resumed agent, or one given more concurrency, may hand out tasks that were already queued:
  // its waiting claims must look again (no task changed, so no task change wakes them).
  deps.events.on('agent:updated', ({ trx, before, after }) => {
    if (widensClaims(before, after)) writer.wakeWork(trx, after.uuid);
  });
  deps.events.on('agent:deleting', ({ agentUuid }) => service.cancelAllOfAgent(agentUuid));
  deps.events.on('agent:deleted', async ({ trx, agentUuid, at }) => {
    await service.cancelRestOfAgent(trx, agentUuid, Date.parse(at));
    writer.agentDeleted(trx, agentUuid);
  });

  async function routes(app: FastifyInstance) {
    app.addHook('onReady', async () => sweeper.start());
    app.addHook('preClose', async () => {
      worker.close();
      await sweeper.stop();
    });
    await app.register(tasksRoutes(service, submitter));
    await app.register(operationsRoutes(rerunner, bulk, deps.rateLimit));
    await app.register(workerRoutes(worker, { credentials: deps.credentials, timers: runtime.timers }));
    await app.register(
      eventsRoutes({
        service,
        notifier,
        connections: deps.connections,
        credentials: deps.credentials,
        timers: runtime.timers,
        db,
        repo: agentEventsRepo,
        agents: deps.agents.service,
      }),
    );
  }

  return {
    service,
    /** Creating tasks: submit, and `prepare` + `insert` for rooms that create them in their own transaction. */
    submitter,
    worker,
    sweeper,
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
