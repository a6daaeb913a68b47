import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import type { SecretBox } from '../../lib/crypto.js';
import type { Runtime } from '../../runtime.js';
import type { AgentsModule } from '../agents/agents-module.js';
import { agentsRepo } from '../agents/agents-repo.js';
import type { TasksService } from '../tasks/tasks-service.js';
import type { ServiceSpan } from '../telemetry/service-spans-fns.js';
import { triggersRepo } from './triggers-repo.js';
import { triggersRoutes } from './triggers-routes.js';
import { createTriggersService } from './triggers-service.js';
import { webhookRoutes } from './webhook-routes.js';
import { createWebhookService } from './webhook-service.js';

/** Wires webhook triggers: management routes, the receive address, and deletion with their agent. */
export function createTriggersModule(deps: {
  config: Config;
  runtime: Runtime;
  box: SecretBox;
  agents: Pick<AgentsModule, 'service' | 'onDelete'>;
  tasks: TasksService;
  traceSpans?: (userUuid: string, spans: ServiceSpan[]) => void;
  /** Counts refusals for a bad secret or signature that the delivery log left out (a metric). */
  onUnloggedRefusal?: () => void;
}) {
  const service = createTriggersService({
    db: deps.runtime.db,
    repo: triggersRepo,
    agents: deps.agents.service,
    agentsRepo,
    box: deps.box,
    clock: deps.runtime.clock,
    publicUrl: deps.config.publicUrl,
  });
  const webhooks = createWebhookService({
    db: deps.runtime.db,
    repo: triggersRepo,
    agents: deps.agents.service,
    tasks: deps.tasks,
    box: deps.box,
    clock: deps.runtime.clock,
    traceSpans: deps.traceSpans,
    onUnloggedRefusal: deps.onUnloggedRefusal,
  });
  // An agent's triggers go with it.
  deps.agents.onDelete(async (trx, agentUuid) => {
    await triggersRepo.removeAllOfAgent(trx, agentUuid);
  });

  async function routes(app: FastifyInstance) {
    await app.register(triggersRoutes(service));
    await app.register(webhookRoutes(webhooks));
  }

  return { service, webhooks, routes };
}
