import { createChangeCache } from '../../db/change-cache.js';
import type { SecretBox } from '../../lib/crypto.js';
import type { ProcessDeps } from '../../process-deps.js';
import { type AgentRow, agentChanges, agentsRepo } from './agents-repo.js';
import { agentsRoutes } from './agents-routes.js';
import { type AgentDeleteListener, createAgentsService, type RuntimeCheck } from './agents-service.js';

/**
 * Wires agent management. Capabilities that own something of an agent subscribe with
 * `onDelete` to remove it in the transaction that deletes the agent. The agent cache serves
 * once the app listens for its `changeFeed`.
 */
export function createAgentsModule(deps: {
  runtime: ProcessDeps;
  checkRuntime: RuntimeCheck;
  box: SecretBox;
  /** How long an agent read outside a transaction is remembered (0: no cache). */
  cacheMs: number;
}) {
  const deleteListeners: AgentDeleteListener[] = [];
  const beforeDeleteListeners: Array<(agentUuid: string) => Promise<void>> = [];
  const cache = createChangeCache<AgentRow>({ ttlMs: deps.cacheMs, now: () => deps.runtime.clock.now() });
  const service = createAgentsService({
    db: deps.runtime.db,
    cache,
    repo: agentsRepo,
    clock: deps.runtime.clock,
    checkRuntime: deps.checkRuntime,
    box: deps.box,
    onDelete: async (trx, agentUuid, now) => {
      for (const listener of deleteListeners) await listener(trx, agentUuid, now);
    },
    beforeDelete: async (agentUuid) => {
      for (const listener of beforeDeleteListeners) await listener(agentUuid);
    },
  });
  return {
    service,
    routes: agentsRoutes(service),
    /** What the app listens for to let the agent cache serve (null: no cache). */
    changeFeed: deps.cacheMs > 0 ? { channel: agentChanges, cache } : null,
    /** Subscribes to agent deletion: called inside its transaction (a throw rolls it back). */
    onDelete(listener: AgentDeleteListener): void {
      deleteListeners.push(listener);
    },
    /**
     * Subscribes to the step before a deletion (the agent is the caller's; its transaction has
     * not begun): for long work in bounded transactions of its own, finished by `onDelete`.
     */
    beforeDelete(listener: (agentUuid: string) => Promise<void>): void {
      beforeDeleteListeners.push(listener);
    },
  };
}

export type AgentsModule = ReturnType<typeof createAgentsModule>;
