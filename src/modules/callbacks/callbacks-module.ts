import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import type { Executor } from '../../db/connect.js';
import type { SecretBox } from '../../lib/crypto.js';
import type { EventHub } from '../../lib/event-hub.js';
import { createFairOutboundDispatcher } from '../../lib/outbound.js';
import type { ProcessDeps } from '../../process-deps.js';
import type { AccountsService } from '../accounts/accounts-service.js';
import type { TasksModule } from '../tasks/tasks-module.js';
import { type ServiceSpan, taskTraceOf } from '../telemetry/service-spans-fns.js';
import { callbacksRepo } from './callbacks-repo.js';
import { callbacksRoutes } from './callbacks-routes.js';
import { createCallbackSender } from './callbacks-sender.js';
import { createCallbacksService } from './callbacks-service.js';

declare module '../../lib/event-hub.js' {
  interface HubEvents {
    /** An A2A push receiver answered 410: its config is to be deleted, in the recording transaction. */
    'callback:pushGone': { trx: Executor; configUuid: string };
  }
}

/**
 * Wires task callbacks: an outbox row written with each announced status change (subscribed to
 * the hub's `task:statusChanged`), the sender that sends them, and the deliveries routes.
 */
export function createCallbacksModule(deps: {
  config: Config;
  runtime: ProcessDeps;
  accounts: Pick<AccountsService, 'activeSigningSecrets'>;
  tasks: Pick<TasksModule, 'service' | 'traceFields'>;
  events: Pick<EventHub, 'on' | 'emit'>;
  /** Seals and opens the extra headers of A2A push deliveries. */
  box: SecretBox;
  /** Records the service's own spans (the callback attempts), best-effort. */
  traceSpans?: (workspaceUuid: string, spans: ServiceSpan[]) => void;
  /** Hears each attempt's outcome (metrics). */
  onAttempt?: (outcome: 'delivered' | 'retrying' | 'gave_up') => void;
}) {
  const { config, runtime } = deps;
  const outbound = createFairOutboundDispatcher({
    allowPrivate: config.allowPrivateUrls,
    lookup: runtime.lookup,
    timeoutMs: config.callbackTimeoutMs,
    perAccount: config.outboundPerAccount,
  });
  const sender = createCallbackSender({
    db: runtime.db,
    repo: callbacksRepo,
    signingSecrets: (workspaceUuid) => deps.accounts.activeSigningSecrets(workspaceUuid),
    outbound,
    allowPrivate: config.allowPrivateUrls,
    schedule: config.callbackRetrySchedule,
    timeoutMs: config.callbackTimeoutMs,
    concurrency: 16,
    perAccount: 4,
    clock: runtime.clock,
    log: runtime.logger,
    onAttempt: deps.onAttempt,
    openHeaders: (sealed) => JSON.parse(deps.box.open(sealed)) as Record<string, string>,
    onPushGone: (trx, configUuid) => deps.events.emit('callback:pushGone', { trx, configUuid }),
    tracing: deps.traceSpans && {
      traceOf: async (taskUuid) => {
        const task = await deps.tasks.traceFields(taskUuid);
        return task ? taskTraceOf(task) : null;
      },
      record: deps.traceSpans,
    },
  });
  const service = createCallbacksService({
    db: runtime.db,
    repo: callbacksRepo,
    tasks: deps.tasks.service,
    clock: runtime.clock,
    nudge: sender.nudge,
    sealHeaders: (headers) => deps.box.seal(JSON.stringify(headers)),
  });
  deps.events.on('task:statusChanged', service.onStatusChange);

  async function routes(app: FastifyInstance) {
    app.addHook('onReady', async () => sender.start());
    app.addHook('preClose', async () => sender.stop());
    await app.register(callbacksRoutes(service));
  }

  /** In the transaction that deletes a workspace: its callbacks not yet sent are dropped. */
  const dropPendingOfWorkspace = (trx: Executor, workspaceUuid: string) =>
    callbacksRepo.dropPendingOfWorkspace(trx, workspaceUuid).then(() => undefined);

  return { service, sender, outbound, routes, dropPendingOfWorkspace };
}
