import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import type { EventHub } from '../../lib/event-hub.js';
import type { ProcessDeps } from '../../process-deps.js';
import type { AgentsModule } from '../agents/agents-module.js';
import { agentsRepo } from '../agents/agents-repo.js';
import type { TaskSubmitter } from '../tasks/submit/task-submitter.js';
import { createDecisions } from './decide.js';
import { createScheduler } from './scheduler.js';
import { schedulesRepo } from './schedules-repo.js';
import { schedulesRoutes } from './schedules-routes.js';
import { createSchedulesService } from './schedules-service.js';

/** Wires schedules: management routes, the clock in the background, deletion with their agent. */
export function createSchedulesModule(deps: {
  config: Config;
  runtime: ProcessDeps;
  agents: Pick<AgentsModule, 'service'>;
  events: Pick<EventHub, 'on'>;
  /** Creates the occurrences' tasks. */
  tasks: TaskSubmitter;
}) {
  const { runtime } = deps;
  const decisions = createDecisions({ repo: schedulesRepo, agents: deps.agents.service, tasks: deps.tasks });
  const scheduler = createScheduler({
    db: runtime.db,
    repo: schedulesRepo,
    decisions,
    clock: runtime.clock,
    log: runtime.logger,
    timers: runtime.timers,
  });
  const service = createSchedulesService({
    db: runtime.db,
    repo: schedulesRepo,
    agents: deps.agents.service,
    agentsRepo,
    tasks: deps.tasks,
    decisions,
    clock: runtime.clock,
    minIntervalSeconds: deps.config.scheduleMinIntervalSeconds,
    maxPerWorkspace: deps.config.maxSchedulesPerWorkspace,
  });
  // An agent's schedules (and their run logs) go with it, in its deletion's transaction.
  deps.events.on('agent:deleted', ({ trx, agentUuid }) => schedulesRepo.removeAllOfAgent(trx, agentUuid));

  async function routes(app: FastifyInstance) {
    app.addHook('onReady', async () => scheduler.start());
    app.addHook('preClose', async () => scheduler.stop());
    await app.register(schedulesRoutes(service));
  }

  return { service, scheduler, routes };
}
