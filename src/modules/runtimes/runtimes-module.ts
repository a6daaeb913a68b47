import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { afterCommit } from '../../db/transactions.js';
import type { SecretBox } from '../../lib/crypto.js';
import type { EventHub } from '../../lib/event-hub.js';
import type { Notifier } from '../../lib/notifier.js';
import { createFairOutboundDispatcher } from '../../lib/outbound.js';
import type { FairOutbound } from '../../lib/outbound-fair.js';
import type { ProcessDeps } from '../../process-deps.js';
import type { AccountsService } from '../accounts/accounts-service.js';
import { agentsRepo } from '../agents/agents-repo.js';
import { openRuntimeHeaders } from '../agents/runtime-headers.js';
import type { AdmissionControl } from '../spotlight/limits/limits-admission.js';
import type { ProxyService } from '../spotlight/proxy/proxy-service.js';
import type { TaskChangeEvent } from '../tasks/lifecycle/tasks-writer.js';
import { queueRepo } from '../tasks/queue/queue-repo.js';
import { FINAL_STATUSES } from '../tasks/tasks-fns.js';
import type { TasksModule } from '../tasks/tasks-module.js';
import { ADAPTERS_BY_TYPE } from './adapters.js';
import { createPushDispatcher, PUSH_LEASE_SECONDS } from './dispatcher.js';
import { runtimesRepo } from './runtimes-repo.js';
import { createTaskRunner, type PushRuntimes } from './task-runner.js';

/**
 * Wires push runtimes: the dispatcher that hands queued tasks of agents whose runtime type a
 * registered adapter runs (`adapters.ts`) to their push runtime, started with the server and
 * stopped (calls in flight handed back) when it closes. When a task finishes its push run row
 * goes; when a task an agent had accepted (an http agent's 202) is cancelled or times out, the
 * agent is told once, by the instance that made the change.
 */
export function createRuntimesModule(deps: {
  config: Config;
  runtime: ProcessDeps;
  box: SecretBox;
  tasks: Pick<TasksModule, 'lifecycle'>;
  /** Wake-ups of task changes, so a run whose task changed on another instance is re-checked. */
  notifier: Pick<Notifier, 'subscribe'>;
  events: Pick<EventHub, 'on'>;
  accounts: Pick<AccountsService, 'activeSigningSecrets'>;
  spotlight: Pick<ProxyService, 'chatCompletions'>;
  /** The model proxy's rate limits, which an `openai` agent's runs must pass before they are handed out. */
  admission?: Pick<AdmissionControl, 'admitRuns'>;
  /** More push runtimes by type, or replacements of the registered ones (tests give their own). */
  extra?: PushRuntimes;
}) {
  const { runtime, config } = deps;
  // Per-account lanes over each feature's guarded pool, one per feature and process (for metrics too).
  const outbound: Record<string, FairOutbound> = {};
  const lanes = (feature: string, timeoutMs: number) => {
    outbound[feature] ??= createFairOutboundDispatcher({
      allowPrivate: config.allowPrivateUrls,
      lookup: runtime.lookup,
      timeoutMs,
      perAccount: config.outboundPerAccount,
    });
    return outbound[feature];
  };
  const ctx = { config, deps: runtime, accounts: deps.accounts, spotlight: deps.spotlight, lanes };
  const runtimes: PushRuntimes = {
    ...Object.fromEntries(Object.entries(ADAPTERS_BY_TYPE).map(([type, adapter]) => [type, adapter.build(ctx)])),
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
  const dispatcher = createPushDispatcher({
    db: runtime.db,
    lifecycle: deps.tasks.lifecycle,
    queue: queueRepo,
    events: deps.events,
    notifier: deps.notifier,
    runner,
    isPush: (type) => runtimes[type] !== undefined,
    leaseSeconds: (stored) => ADAPTERS_BY_TYPE[stored.type]?.leaseSeconds?.(stored) ?? PUSH_LEASE_SECONDS,
    openRuntime: (stored) => openRuntimeHeaders(stored, deps.box),
    clock: runtime.clock,
    intervalMs: config.sweepIntervalMs,
    perAccount: config.pushRunsPerAccount,
    // An agent that is a model: each run is one model call its rate limits must admit first.
    admitRuns: (agent, n) =>
      agent.runtime.type === 'openai' && deps.admission
        ? deps.admission.admitRuns(agent.workspaceUuid, agent.uuid, n)
        : Promise.resolve({ admitted: n, release: () => undefined }),
    log: runtime.logger,
  });
  wakeAfter = dispatcher.wakeAfter;

  /** In the finishing change's transaction: drop the run row; tell an agent that had accepted the task. */
  async function onFinished({ trx, operation, before, task }: TaskChangeEvent) {
    if (!FINAL_STATUSES.has(task.status) || !before?.workerId?.startsWith('runtime:')) return;
    const run = await runtimesRepo.takeRun(trx, task.uuid);
    const stopped = operation === 'cancel' || operation === 'timeout';
    if (!run || !stopped || !before.leaseExpiresAt || run.acceptedLeaseId !== before.leaseId) return;
    const stored = await agentsRepo.runtimeOf(trx, task.agentUuid);
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
  deps.events.on('task:statusChanged', onFinished);

  async function routes(app: FastifyInstance) {
    app.addHook('onReady', async () => dispatcher.start());
    app.addHook('preClose', async () => dispatcher.stop());
  }
  return { dispatcher, outbound, routes };
}
