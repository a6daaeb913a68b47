import type { Runtime } from '../../runtime.js';
import { agentsRepo } from './agents-repo.js';
import { agentsRoutes } from './agents-routes.js';
import { type AgentDeleteCascade, createAgentsService } from './agents-service.js';

/** Wires agent management. Other capabilities add what deleting an agent must also do. */
export function createAgentsModule(deps: { runtime: Runtime; cascades?: AgentDeleteCascade[] }) {
  const service = createAgentsService({
    db: deps.runtime.db,
    repo: agentsRepo,
    clock: deps.runtime.clock,
    cascades: deps.cascades ?? [],
  });
  return { service, routes: agentsRoutes(service) };
}
