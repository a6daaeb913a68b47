import { createChangeCache } from '../../db/change-cache.js';
import type { SecretBox } from '../../lib/crypto.js';
import type { EventHub } from '../../lib/event-hub.js';
import type { ProcessDeps } from '../../process-deps.js';
import { type AgentRow, agentChanges, agentsRepo } from './agents-repo.js';
import { agentsRoutes } from './agents-routes.js';
import { createAgentsService, type RuntimeCheck } from './agents-service.js';
import type { RuntimeSchemas } from './runtime-schemas.js';

/**
 * Wires agent management. Capabilities that own something of an agent subscribe to the hub's
 * `agent:deleted` to remove it in the transaction that deletes the agent. The agent cache serves
 * once the app listens for its `changeFeed`.
 */
export function createAgentsModule(deps: {
  runtime: ProcessDeps;
  /** The `runtime` field's schemas, from the registered runtime variants. */
  runtimeSchemas: RuntimeSchemas;
  checkRuntime: RuntimeCheck;
  box: SecretBox;
  /** How long an agent read outside a transaction is remembered (0: no cache). */
  cacheMs: number;
  events: Pick<EventHub, 'emit'>;
}) {
  const cache = createChangeCache<AgentRow>({ ttlMs: deps.cacheMs, now: () => deps.runtime.clock.now() });
  const service = createAgentsService({
    db: deps.runtime.db,
    cache,
    repo: agentsRepo,
    clock: deps.runtime.clock,
    checkRuntime: deps.checkRuntime,
    box: deps.box,
    events: deps.events,
  });
  return {
    service,
    routes: agentsRoutes(service, deps.runtimeSchemas),
    /** What the app listens for to let the agent cache serve (null: no cache). */
    changeFeed: deps.cacheMs > 0 ? { channel: agentChanges, cache } : null,
  };
}

export type AgentsModule = ReturnType<typeof createAgentsModule>;
