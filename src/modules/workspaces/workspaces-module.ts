import type { FastifyInstance } from 'fastify';
import { createInvitationsService } from './invitations-service.js';
import { createMembersService } from './members-service.js';
import type { WorkspacesDeps } from './workspaces-fns.js';
import { workspacesRoutes } from './workspaces-routes.js';
import { createWorkspacesService } from './workspaces-service.js';

/** Wires team workspaces, their members and invitations, and their routes. */
export function createWorkspacesModule(deps: WorkspacesDeps) {
  const services = {
    workspaces: createWorkspacesService(deps),
    members: createMembersService(deps),
    invitations: createInvitationsService(deps),
  };
  return {
    ...services,
    async routes(app: FastifyInstance) {
      await app.register(workspacesRoutes(services));
    },
  };
}
