import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { type AcquireConnection, noConnectionLimits } from '../../http/connection-limits.js';
import type { SecretBox } from '../../lib/crypto.js';
import type { EventHub } from '../../lib/event-hub.js';
import type { Notifier } from '../../lib/notifier.js';
import type { CredentialCheck } from '../../lib/principal.js';
import type { ProcessDeps } from '../../process-deps.js';
import type { AgentsModule } from '../agents/agents-module.js';
import type { TasksModule } from '../tasks/tasks-module.js';
import { a2aPushRepo } from './a2a-push-repo.js';
import { createA2aPushService, type PushOutbox } from './a2a-push-service.js';
import { a2aServerRepo } from './a2a-server-repo.js';
import { a2aServerRoutes } from './a2a-server-routes.js';
import { createA2aServerService, rpcErrorOf } from './a2a-server-service.js';

/**
 * Every agent served as an A2A v1.0 agent: its card and a JSON-RPC endpoint over the tasks
 * service. `acquireConnection` counts blocking sends as waits and A2A streams as streams
 * against the workspace's caps; without it nothing is capped.
 */
export function createA2aServerModule(deps: {
  config: Config;
  runtime: ProcessDeps;
  agents: Pick<AgentsModule, 'service'>;
  tasks: Pick<TasksModule, 'service' | 'submitter'>;
  notifier: Notifier;
  acquireConnection?: AcquireConnection;
  /** Streams end once their credential no longer holds, as task event streams do. */
  credentials: CredentialCheck;
  box: SecretBox;
  events: Pick<EventHub, 'on'>;
  /** Where push notifications are queued (the callbacks outbox). */
  pushOutbox: PushOutbox;
}) {
  const push = createA2aPushService({
    db: deps.runtime.db,
    repo: a2aPushRepo,
    serverRepo: a2aServerRepo,
    tasks: deps.tasks.service,
    outbox: deps.pushOutbox,
    box: deps.box,
    allowPrivate: deps.config.allowPrivateUrls,
    clock: deps.runtime.clock,
    rpcErrorOf,
  });
  deps.events.on('task:statusChanged', push.onStatusChange);
  deps.events.on('callback:pushGone', push.onGone);
  const service = createA2aServerService({
    db: deps.runtime.db,
    repo: a2aServerRepo,
    tasks: deps.tasks.service,
    submitter: deps.tasks.submitter,
    agents: deps.agents.service,
    notifier: deps.notifier,
    clock: deps.runtime.clock,
    publicUrl: deps.config.publicUrl,
    maxWaitMs: deps.config.a2aMaxWaitSeconds * 1000,
    push,
  });
  const routes = a2aServerRoutes({
    service,
    push,
    stream: {
      tasks: deps.tasks.service,
      notifier: deps.notifier,
      credentials: deps.credentials,
      timers: deps.runtime.timers,
    },
    acquire: deps.acquireConnection ?? noConnectionLimits,
  });
  return {
    service,
    push,
    routes: async (app: FastifyInstance) => {
      await app.register(routes);
    },
  };
}
