import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { type AcquireConnection, noConnectionLimits } from '../../http/connection-limits.js';
import type { Notifier } from '../../lib/notifier.js';
import type { CredentialCheck } from '../../lib/principal.js';
import type { ProcessDeps } from '../../process-deps.js';
import type { TasksModule } from '../tasks/tasks-module.js';
import type { ServiceSpan } from '../telemetry/service-spans-fns.js';
import { requestStateKey } from './mcp-input-fns.js';
import { mcpRepo } from './mcp-repo.js';
import { mcpRoutes } from './mcp-routes.js';
import { createMcpService } from './mcp-service.js';
import { sessionKey } from './mcp-session-fns.js';

/**
 * The MCP server at `/mcp`: every active agent of the workspace a tool, its calls normal tasks
 * through the tasks service; stateless (signed session ids, state in storage).
 */
export function createMcpModule(deps: {
  config: Config;
  runtime: ProcessDeps;
  tasks: Pick<TasksModule, 'service' | 'submitter'>;
  notifier: Notifier;
  acquireConnection?: AcquireConnection;
  credentials: CredentialCheck;
  traceSpans?: (workspaceUuid: string, spans: ServiceSpan[]) => void;
  /** The protected resource metadata URL for 401 challenges; absent while OAuth is off. */
  resourceMetadata?: string;
}) {
  const service = createMcpService({
    db: deps.runtime.db,
    repo: mcpRepo,
    tasks: deps.tasks.service,
    submitter: deps.tasks.submitter,
    notifier: deps.notifier,
    maxWaitSeconds: deps.config.mcpWaitSeconds,
    stateKey: requestStateKey(deps.runtime.secrets.encryptionKey),
    clock: deps.runtime.clock,
    traceSpans: deps.traceSpans,
  });
  const routes = mcpRoutes({
    service,
    sessionKey: sessionKey(deps.runtime.secrets.encryptionKey),
    version: packageVersion(),
    allowedOrigins: [new URL(deps.config.publicUrl).origin, ...deps.config.corsOrigins],
    credentials: deps.credentials,
    timers: deps.runtime.timers,
    clock: deps.runtime.clock,
    notifier: deps.notifier,
    acquire: deps.acquireConnection ?? noConnectionLimits,
    resourceMetadata: deps.resourceMetadata ?? null,
  });
  return {
    service,
    routes: async (app: FastifyInstance) => {
      if (deps.config.mcp) await app.register(routes);
    },
  };
}

/** The package version (serverInfo.version), from src/ and dist/ alike. */
function packageVersion(): string {
  return (createRequire(import.meta.url)('../../../package.json') as { version: string }).version;
}
