import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { afterCommit } from '../../db/transactions.js';
import type { SecretBox } from '../../lib/crypto.js';
import { createOutboundDispatcher } from '../../lib/outbound.js';
import type { Runtime as ServiceRuntime } from '../../runtime.js';
import { createA2aRuntime } from '../a2a-client/a2a-client.js';
import type { AccountsService } from '../accounts/accounts-service.js';
import { openRuntimeHeaders } from '../agents/runtime-headers.js';
import { createHttpRuntime } from '../http-runtime/http-runtime.js';
import { createModelRuntime, modelPushRuntime } from '../model-runtime/model-runtime.js';
import type { SpotlightService } from '../spotlight/spotlight-service.js';
import { FINAL_STATUSES } from '../tasks/tasks-fns.js';
import type { TasksModule } from '../tasks/tasks-module.js';
import { tasksRepo } from '../tasks/tasks-repo.js';
import type { TaskChangeEvent } from '../tasks/tasks-writer.js';
import { createDispatcher } from './dispatcher.js';
import { runtimesRepo } from './runtimes-repo.js';
import { createTaskRunner, type PushRuntimes } from './task-runner.js';

/** The longest an http agent may take to answer (timeout_seconds is at most 300). */
const HTTP_MAX_TIMEOUT_MS = 300_000;

/**
 * Wires push runtimes: the dispatcher that hands queued tasks of `openai`, `http` and `a2a`
 * agents to their runtime, started with the server and stopped (calls in flight
 * handed back) when it closes. When a task finishes its push run row goes; when a task an http
 * agent accepted (202) is cancelled or times out, the agent is told once, by the instance that
 * made the change.
 */
export function createRuntimesModule(deps: {
  config: Config;
  runtime: ServiceRuntime;
  box: SecretBox;
  tasks: Pick<TasksModule, 'lifecycle' | 'writer' | 'notifier' | 'onStatusChange'>;
  accounts: Pick<AccountsService, 'activeSigningSecrets'>;
  spotlight: Pick<SpotlightService, 'chatCompletions'>;
  /** More push runtimes by type (e.g. `a2a`). */
  extra?: PushRuntimes;
}) {
  const { runtime, config } = deps;
  const now = () => runtime.clock.now();
  const model = createModelRuntime({ spotlight: deps.spotlight, now });
  const http = createHttpRuntime({
    signingSecrets: (userUuid) => deps.accounts.activeSigningSecrets(userUuid),
    dispatcher: createOutboundDispatcher({
      allowPrivate: config.allowPrivateUrls,
      lookup: runtime.lookup,
      timeoutMs: HTTP_MAX_TIMEOUT_MS,
    }),
    allowPrivate: config.allowPrivateUrls,
    publicUrl: config.publicUrl,
    maxAnswerBytes: config.maxBodyBytes,
    now,
  });
  const a2a = createA2aRuntime({
    outbound: { allowPrivate: config.allowPrivateUrls, lookup: runtime.lookup },
    clock: runtime.clock,
  });
  const runtimes: PushRuntimes = {
    openai: modelPushRuntime(model) as PushRuntimes['openai'],
    http: http as PushRuntimes['http'],
    a2a: a2a as PushRuntimes['a2a'],
    ...deps.extra,
  };
  let wakeAfter: (delayMs: number) => void = () => undefined;
  const runner = createTaskRunner({
    db: runtime.db,
    lifecycle: deps.tasks.lifecycle,
    clock: runtime.clock,
    runtimes,
    log: runtime.logger,
    onRetry: (delayMs) => wakeAfter(delayMs),
  });
  const dispatcher = createDispatcher({
    db: runtime.db,
    lifecycle: deps.tasks.lifecycle,
    queue: tasksRepo,
    writer: deps.tasks.writer,
    notifier: deps.tasks.notifier,
    runner,
    isPush: (type) => runtimes[type] !== undefined,
    openRuntime: (stored) => openRuntimeHeaders(stored, deps.box),
    clock: runtime.clock,
    intervalMs: config.sweepIntervalMs,
    log: runtime.logger,
  });
  wakeAfter = dispatcher.wakeAfter;

  /** In the finishing change's transaction: drop the run row; tell an agent that had accepted the task. */
  async function onFinished({ trx, operation, before, task }: TaskChangeEvent) {
    if (!FINAL_STATUSES.has(task.status) || !before?.workerId?.startsWith('runtime:')) return;
    const run = await runtimesRepo.takeRun(trx, task.uuid);
    const stopped = operation === 'cancel' || operation === 'timeout';
    if (!run || !stopped || !before.leaseExpiresAt || run.acceptedLeaseId !== before.leaseId) return;
    const stored = await runtimesRepo.runtimeOf(trx, task.agentUuid);
    const push = stored && runtimes[stored.type];
    if (!stored || !push?.cancelled) return;
    const held = { ...task, leaseId: before.leaseId };
    afterCommit(trx, () => {
      const open = openRuntimeHeaders(stored, deps.box);
      push.cancelled?.({ task: held, runtime: open as never, state: run.state }).catch((err: unknown) => {
        runtime.logger.warn({ err, task: task.uuid }, 'telling a push runtime about a cancel failed');
      });
    });
  }
  deps.tasks.onStatusChange(onFinished);

  async function routes(app: FastifyInstance) {
    app.addHook('onReady', async () => dispatcher.start());
    app.addHook('preClose', async () => dispatcher.stop());
  }
  return { dispatcher, routes };
}
