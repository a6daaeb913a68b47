import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { NoBody, NoContent } from '../../http/common-schemas.js';
import { errorResponses } from '../../http/error-schemas.js';
import { actingOf, principalOf } from '../../http/guard.js';
import { requestOriginOf } from '../../http/request-ids.js';
import type { InvitationsService } from './invitations-service.js';
import type { MembersService } from './members-service.js';
import {
  AcceptBody,
  InvitationListReply,
  InvitationParams,
  InvitationSchema,
  InviteBody,
  MemberListReply,
  MemberParams,
  MemberSchema,
  NameBody,
  RoleBody,
  WorkspaceListReply,
  WorkspaceParams,
  WorkspaceSchema,
} from './workspaces-schemas.js';
import type { WorkspacesService } from './workspaces-service.js';

const tags = ['workspaces'];
const config = { auth: 'session' as const };

/** HTTP routes of workspaces, members and invitations (docs/workspaces.md); session JWT only. */
export function workspacesRoutes(services: {
  workspaces: WorkspacesService;
  members: MembersService;
  invitations: InvitationsService;
}) {
  const { workspaces, members, invitations } = services;
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/workspaces',
      {
        config,
        schema: {
          tags,
          summary: 'Create a team workspace',
          description:
            'The caller becomes its only member, as owner. A user owns at most TASKHOOK_MAX_WORKSPACES_PER_USER workspaces ' +
            '(default 10) besides their personal one, and belongs to at most 100: one more is 400 LIMIT_EXCEEDED, ' +
            'details.field "workspaces"; nothing is created.',
          body: NameBody,
          response: { 201: WorkspaceSchema, ...errorResponses([400, 401, 403]) },
        },
      },
      async (request, reply) => {
        const created = await workspaces.create(actingOf(request), principalOf(request), request.body.name);
        return reply.code(201).send(created);
      },
    );

    app.get(
      '/workspaces',
      {
        config,
        schema: {
          tags,
          summary: 'List your workspaces',
          description: 'Every workspace you belong to: the personal one first, then oldest first.',
          response: { 200: WorkspaceListReply, ...errorResponses([401, 403]) },
        },
      },
      async (request) => ({ workspaces: await workspaces.list(principalOf(request).userUuid) }),
    );

    app.get(
      '/workspaces/:id',
      {
        config,
        schema: {
          tags,
          summary: 'Get a workspace',
          description: 'With your role in it. Not a member, unknown or deleted: 404.',
          params: WorkspaceParams,
          response: { 200: WorkspaceSchema, ...errorResponses([401, 403, 404]) },
        },
      },
      async (request) => workspaces.get(principalOf(request).userUuid, principalOf(request).workspaceUuid),
    );

    app.patch(
      '/workspaces/:id',
      {
        config,
        schema: {
          tags,
          summary: 'Rename a workspace',
          description: 'Admin or owner. The personal workspace can be renamed too.',
          params: WorkspaceParams,
          body: NameBody,
          response: { 200: WorkspaceSchema, ...errorResponses([400, 401, 403, 404]) },
        },
      },
      async (request) => workspaces.rename(actingOf(request), principalOf(request).userUuid, request.body.name),
    );

    app.delete(
      '/workspaces/:id',
      {
        config,
        schema: {
          tags,
          summary: 'Delete a workspace',
          description:
            'Owner only; the personal workspace cannot be deleted (409 PERSONAL_WORKSPACE). From the 204 on, nothing of it is reachable: keys and tokens fail, members get 404, open tasks are cancelled; its rows are purged in the background.',
          params: WorkspaceParams,
          response: { 204: NoContent, ...errorResponses([401, 403, 404, 409]) },
        },
      },
      async (request, reply) => {
        await workspaces.remove(actingOf(request), principalOf(request).userUuid);
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/workspaces/:id/members',
      {
        config,
        schema: {
          tags,
          summary: 'List members',
          description: 'Oldest member first.',
          params: WorkspaceParams,
          response: { 200: MemberListReply, ...errorResponses([401, 403, 404]) },
        },
      },
      async (request) => ({ members: await members.list(principalOf(request).workspaceUuid) }),
    );

    app.patch(
      '/workspaces/:id/members/:userUuid',
      {
        config,
        schema: {
          tags,
          summary: "Change a member's role",
          description:
            'Admin or owner; making an owner or changing an owner\'s role needs owner (403). The only owner cannot be demoted (409 LAST_OWNER). The same role again changes nothing. Making someone owner who already owns TASKHOOK_MAX_WORKSPACES_PER_USER workspaces besides their personal one: 400 LIMIT_EXCEEDED, details.field "role"; nothing changes. A demotion revokes the pending invitations the member may no longer grant.',
          params: MemberParams,
          body: RoleBody,
          response: { 200: MemberSchema, ...errorResponses([400, 401, 403, 404, 409]) },
        },
      },
      async (request) =>
        members.setRole(actingOf(request), principalOf(request), request.params.userUuid, request.body.role),
    );

    app.delete(
      '/workspaces/:id/members/:userUuid',
      {
        config,
        schema: {
          tags,
          summary: 'Remove a member',
          description:
            'Admin or owner; removing an owner needs owner. Removing yourself is leaving. The keys and ingest tokens the member made in the workspace are revoked.',
          params: MemberParams,
          response: { 204: NoContent, ...errorResponses([401, 403, 404, 409]) },
        },
      },
      async (request, reply) => {
        await members.remove(actingOf(request), principalOf(request), request.params.userUuid);
        return reply.code(204).send(null);
      },
    );

    app.post(
      '/workspaces/:id/leave',
      {
        config,
        schema: {
          tags,
          summary: 'Leave a workspace',
          description:
            'Any role. The only owner cannot leave (409 LAST_OWNER), nor can anyone leave their personal workspace (409 PERSONAL_WORKSPACE). Your keys and ingest tokens in it are revoked.',
          params: WorkspaceParams,
          body: NoBody,
          response: { 204: NoContent, ...errorResponses([400, 401, 403, 404, 409]) },
        },
      },
      async (request, reply) => {
        await members.leave(actingOf(request), principalOf(request));
        return reply.code(204).send(null);
      },
    );

    app.post(
      '/workspaces/:id/invitations',
      {
        config,
        schema: {
          tags,
          summary: 'Invite someone by e-mail',
          description:
            'Admin or owner; inviting as owner needs owner. The link is e-mailed (or logged without SMTP) and never returned. ' +
            'One invitation e-mail per address per workspace per 10 minutes: an address this workspace invited less than 600 s ago ' +
            '(whatever became of that invitation) is 429 RATE_LIMITED, details.field "email", with Retry-After the seconds left; nothing changes. ' +
            'Checked after the role (403), body (400) and member (409) checks, before the cap of 100 pending invitations ' +
            '(400 LIMIT_EXCEEDED, details.field "invitations"). From 600 s on, a pending invitation for the same address is replaced.',
          params: WorkspaceParams,
          body: InviteBody,
          response: { 201: InvitationSchema, ...errorResponses([400, 401, 403, 404, 409]) },
        },
      },
      async (request, reply) => {
        const { email, role } = request.body;
        return reply.code(201).send(await invitations.create(actingOf(request), principalOf(request), email, role));
      },
    );

    app.get(
      '/workspaces/:id/invitations',
      {
        config,
        schema: {
          tags,
          summary: 'List pending invitations',
          description: 'Not accepted, revoked, replaced or expired; newest first.',
          params: WorkspaceParams,
          response: { 200: InvitationListReply, ...errorResponses([401, 403, 404]) },
        },
      },
      async (request) => ({ invitations: await invitations.listPending(principalOf(request).workspaceUuid) }),
    );

    app.delete(
      '/workspaces/:id/invitations/:uuid',
      {
        config,
        schema: {
          tags,
          summary: 'Revoke an invitation',
          description: 'Its link stops working. Unknown or no longer pending: 404.',
          params: InvitationParams,
          response: { 204: NoContent, ...errorResponses([401, 403, 404]) },
        },
      },
      async (request, reply) => {
        await invitations.revoke(actingOf(request), request.params.uuid);
        return reply.code(204).send(null);
      },
    );

    app.post(
      '/invitations/accept',
      {
        config,
        schema: {
          tags,
          summary: 'Accept an invitation',
          description:
            'Joins its workspace with its role. In this order: invalid, expired, used or revoked: 400 INVITATION_INVALID; ' +
            'an inviter no longer a member, or whose role may no longer grant the role, or whose account is disabled: ' +
            '400 INVITATION_INVALID and the invitation is revoked for good; for another e-mail: 403 INVITATION_EMAIL_MISMATCH; ' +
            'already a member: 409 (the invitation is used up); limits: 400 LIMIT_EXCEEDED (the invitation stays pending).',
          body: AcceptBody,
          response: { 200: WorkspaceSchema, ...errorResponses([400, 401, 403, 409]) },
        },
      },
      async (request) => invitations.accept(principalOf(request), request.body.token, requestOriginOf(request)),
    );
  };
}
