import type { Config } from '../../config.js';
import type { ProcessDeps } from '../../process-deps.js';
import { auditRoutes } from './audit-routes.js';
import { createAuditService } from './audit-service.js';

/** Wires the audit log's read endpoint (entries are written by each room with `recordAudit`). */
export function createAuditModule(deps: { config: Config; runtime: ProcessDeps }) {
  const service = createAuditService({
    db: deps.runtime.db,
    clock: deps.runtime.clock,
    retentionDays: deps.config.auditRetentionDays,
  });
  return { service, routes: auditRoutes(service) };
}
