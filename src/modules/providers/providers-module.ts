import type { Config } from '../../config.js';
import type { Executor } from '../../db/connect.js';
import type { SecretBox } from '../../lib/crypto.js';
import type { ProcessDeps } from '../../process-deps.js';
import { providersRepo } from './providers-repo.js';
import { providersRoutes } from './providers-routes.js';
import { createProvidersService } from './providers-service.js';

/** Wires provider credentials: the service (also used by the model proxy) and its routes. */
export function createProvidersModule(deps: {
  config: Config;
  runtime: ProcessDeps;
  box: SecretBox;
  /** Names of the workspace's fallback routes that have a credential as a target. */
  routesNaming: (ex: Executor, workspaceUuid: string, credentialUuid: string) => Promise<string[]>;
  /** Names of the workspace's live agents whose runtime uses a credential (the agents room's). */
  agentsUsing: (ex: Executor, workspaceUuid: string, credentialUuid: string) => Promise<string[]>;
}) {
  const service = createProvidersService({
    db: deps.runtime.db,
    repo: providersRepo,
    box: deps.box,
    clock: deps.runtime.clock,
    outbound: { allowPrivate: deps.config.allowPrivateUrls, lookup: deps.runtime.lookup },
    routesNaming: deps.routesNaming,
    agentsUsing: deps.agentsUsing,
  });
  return { service, routes: providersRoutes(service) };
}
