import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { invalid } from '../../http/errors.js';
import { checkOutboundUrl, createOutboundDispatcher, OutboundUrlError } from '../../lib/outbound.js';
import type { Runtime } from '../../runtime.js';
import type { AccountsService } from '../accounts/accounts-service.js';
import type { TaskRecord } from '../tasks/tasks-repo.js';
import type { SubmitInput } from '../tasks/tasks-schemas.js';
import type { TasksService } from '../tasks/tasks-service.js';
import { createDispatcher } from './callbacks-dispatcher.js';
import { callbacksRepo } from './callbacks-repo.js';
import { callbacksRoutes } from './callbacks-routes.js';
import { createCallbacksService } from './callbacks-service.js';

/**
 * Wires task callbacks: the submit-time URL check, the outbox hook, the dispatcher and the
 * deliveries routes. Created before the tasks module (which takes the check and the hook), then
 * given the tasks service with `attach`.
 */
export function createCallbacksModule(deps: {
  config: Config;
  runtime: Runtime;
  accounts: Pick<AccountsService, 'activeSigningSecrets'>;
}) {
  const { config, runtime } = deps;
  const policy = { allowPrivate: config.allowPrivateUrls, lookup: runtime.lookup };
  const dispatcher = createDispatcher({
    db: runtime.db,
    repo: callbacksRepo,
    signingSecrets: (userUuid) => deps.accounts.activeSigningSecrets(userUuid),
    dispatcher: createOutboundDispatcher({ ...policy, timeoutMs: config.callbackTimeoutMs }),
    allowPrivate: config.allowPrivateUrls,
    schedule: config.callbackRetrySchedule,
    timeoutMs: config.callbackTimeoutMs,
    concurrency: 16,
    clock: runtime.clock,
    log: runtime.logger,
  });
  let service: ReturnType<typeof createCallbacksService> | null = null;

  /** Submit-time check of webhook_url (repeated at connect time by the dispatcher). */
  async function validateSubmit(input: SubmitInput) {
    if (!input.webhook_url) return;
    try {
      await checkOutboundUrl(input.webhook_url, policy);
    } catch (err) {
      if (err instanceof OutboundUrlError) throw invalid('webhook_url', err.message);
      throw err;
    }
  }

  return {
    validateSubmit,
    hook: (...args: Parameters<ReturnType<typeof createCallbacksService>['onStatusChange']>) =>
      (service as ReturnType<typeof createCallbacksService>).onStatusChange(...args),
    committed: (task: TaskRecord) => service?.committed(task),
    attach(tasks: Pick<TasksService, 'requireTask'>) {
      service = createCallbacksService({
        db: runtime.db,
        repo: callbacksRepo,
        tasks,
        clock: runtime.clock,
        nudge: dispatcher.nudge,
      });
      const attached = service;
      return async function routes(app: FastifyInstance) {
        app.addHook('onReady', async () => dispatcher.start());
        app.addHook('preClose', async () => dispatcher.stop());
        await app.register(callbacksRoutes(attached));
      };
    },
  };
}
