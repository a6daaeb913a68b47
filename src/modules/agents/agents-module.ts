import type { SecretBox } from '../../lib/crypto.js';
import type { Runtime } from '../../runtime.js';
import { agentsRepo } from './agents-repo.js';
import { agentsRoutes } from './agents-routes.js';
import { type AgentDeleteListener, createAgentsService, type RuntimeCheck } from './agents-service.js';

/**
 * Wires agent management. Capabilities that own something of an agent subscribe with
 * `onDelete` to remove it in the transaction that deletes the agent.
 */
export function createAgentsModule(deps: { runtime: Runtime; checkRuntime: RuntimeCheck; box: SecretBox }) {
  const deleteListeners: AgentDeleteListener[] = [];
  const service = createAgentsService({
    db: deps.runtime.db,
    repo: agentsRepo,
    clock: deps.runtime.clock,
    checkRuntime: deps.checkRuntime,
    box: deps.box,
    onDelete: async (trx, agentUuid, now) => {
      for (const listener of deleteListeners) await listener(trx, agentUuid, now);
    },
  });
  return {
    service,
    routes: agentsRoutes(service),
    /** Subscribes to agent deletion: called inside its transaction (a throw rolls it back). */
    onDelete(listener: AgentDeleteListener): void {
      deleteListeners.push(listener);
    },
  };
}

export type AgentsModule = ReturnType<typeof createAgentsModule>;
