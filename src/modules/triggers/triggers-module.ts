import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { createChangeCache } from '../../db/change-cache.js';
import { afterCommit } from '../../db/transactions.js';
import type { SecretBox } from '../../lib/crypto.js';
import type { EventHub } from '../../lib/event-hub.js';
import type { ProcessDeps } from '../../process-deps.js';
import type { AgentsModule } from '../agents/agents-module.js';
import { agentsRepo } from '../agents/agents-repo.js';
import type { TaskSubmitter } from '../tasks/submit/task-submitter.js';
import type { ServiceSpan } from '../telemetry/service-spans-fns.js';
import { type TriggerRow, triggerChanges, triggersRepo } from './triggers-repo.js';
import { triggersRoutes } from './triggers-routes.js';
import { createTriggersService } from './triggers-service.js';
import { webhookRoutes } from './webhook-routes.js';
import { createWebhookService } from './webhook-service.js';

/**
 * Wires webhook triggers: management routes, the receive address, and deletion with their agent.
 * The receive's trigger cache serves once the app listens for its `changeFeed`.
 */
export function createTriggersModule(deps: {
  config: Config;
  runtime: ProcessDeps;
  box: SecretBox;
  agents: Pick<AgentsModule, 'service'>;
  events: Pick<EventHub, 'on'>;
  /** Creates the deliveries' tasks. */
  tasks: TaskSubmitter;
  traceSpans?: (workspaceUuid: string, spans: ServiceSpan[]) => void;
  /** Counts refusals for a bad secret or signature that the delivery log left out (a metric). */
  onUnloggedRefusal?: () => void;
}) {
  const cacheMs = deps.config.triggerCacheMs;
  const cache = createChangeCache<TriggerRow>({ ttlMs: cacheMs, now: () => deps.runtime.clock.now() });
  const service = createTriggersService({
    db: deps.runtime.db,
    repo: triggersRepo,
    cache,
    agents: deps.agents.service,
    agentsRepo,
    box: deps.box,
    clock: deps.runtime.clock,
    publicUrl: deps.config.publicUrl,
  });
  const webhooks = createWebhookService({
    db: deps.runtime.db,
    repo: triggersRepo,
    cache,
    agents: deps.agents.service,
    tasks: deps.tasks,
    box: deps.box,
    clock: deps.runtime.clock,
    traceSpans: deps.traceSpans,
    onUnloggedRefusal: deps.onUnloggedRefusal,
  });
  // An agent's triggers go with it.
  deps.events.on('agent:deleted', async ({ trx, agentUuid }) => {
    const removed = await triggersRepo.removeAllOfAgent(trx, agentUuid);
    afterCommit(trx, () => {
      for (const uuid of removed) cache.invalidate(uuid);
    });
  });

  async function routes(app: FastifyInstance) {
    await app.register(triggersRoutes(service));
    await app.register(webhookRoutes(webhooks));
  }

  return {
    service,
    webhooks,
    routes,
    /** What the app listens for to let the trigger cache serve (null: no cache). */
    changeFeed: cacheMs > 0 ? { channel: triggerChanges, cache } : null,
  };
}
