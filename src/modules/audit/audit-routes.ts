import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { errorResponses } from '../../http/error-schemas.js';
import { principalOf } from '../../http/guard.js';
import { AuditLogParams, AuditLogQuery, AuditLogReply } from './audit-schemas.js';
import type { AuditService } from './audit-service.js';

/** `GET /workspaces/:id/audit_log` (a session; the guard has checked membership and admin+). */
export function auditRoutes(service: AuditService) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();
    app.get(
      '/workspaces/:id/audit_log',
      {
        config: { auth: 'session' as const },
        schema: {
          tags: ['workspaces'],
          summary: 'Read the audit log',
          description:
            'Management actions in the workspace, newest first (by at, then id). Entries older than TASKHOOK_AUDIT_RETENTION_DAYS are never returned. Follow next_cursor for the next page; entries written meanwhile do not shift the pages. A cursor this endpoint did not issue, or an unknown action, is a 400.',
          params: AuditLogParams,
          querystring: AuditLogQuery,
          response: { 200: AuditLogReply, ...errorResponses([404]) },
        },
      },
      async (request) => service.list(principalOf(request).workspaceUuid, request.query),
    );
  };
}
