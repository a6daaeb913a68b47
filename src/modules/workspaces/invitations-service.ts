import { AppError, notFound } from '../../http/errors.js';
import { forbiddenMessage } from '../../http/permissions.js';
import { randomSecret, sha256Hex } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { type Acting, type Principal, type RequestOrigin, type Role, roleAtLeast } from '../../lib/principal.js';
import { iso } from '../../lib/time.js';
import { normalizeEmail } from '../accounts/accounts-fns.js';
import { announceCredentialChange } from '../accounts/credential-changes.js';
import { recordAudit } from '../audit/audit-repo.js';
import { type InvitationRow, invitationsRepo } from './invitations-repo.js';
import {
  limitExceeded,
  MAX_MEMBERS,
  MAX_PENDING_INVITATIONS,
  MAX_WORKSPACES_PER_USER,
  personalRefused,
  type WorkspacesDeps,
  workspaceView,
} from './workspaces-fns.js';
import { workspacesRepo } from './workspaces-repo.js';

/** Random bytes in an invitation token (written as 43 base64url characters). */
const TOKEN_BYTES = 32;

/** The invitation object of the API; it never holds the token. */
export const invitationView = (i: InvitationRow) => ({
  uuid: i.uuid,
  email: i.email,
  role: i.role,
  invited_by: i.invitedBy,
  created_at: i.createdAt,
  expires_at: i.expiresAt,
});

const invalidInvitation = () =>
  new AppError('INVITATION_INVALID', 'The invitation is invalid, expired, used or revoked');

/** Invitations to a team workspace: create (and mail), list, revoke, accept (docs/workspaces.md). */
export function createInvitationsService(deps: WorkspacesDeps) {
  const { db, clock } = deps;
  const now = () => iso(clock.now());

  return {
    /**
     * Invites an e-mail address with a role; a pending invitation for the same address is replaced.
     * The link goes out by mail (or to the log without SMTP) after the commit.
     * @throws AppError PERSONAL_WORKSPACE, FORBIDDEN (owner by a non-owner), CONFLICT (already a member), LIMIT_EXCEEDED.
     */
    async create(acting: Acting, principal: Principal, email: string, role: Role) {
      if (role === 'owner' && !roleAtLeast(principal.role, 'owner')) {
        throw new AppError('FORBIDDEN', forbiddenMessage('owner'));
      }
      const { workspaceUuid } = acting;
      const emailLower = normalizeEmail(email);
      const token = randomSecret(TOKEN_BYTES);
      const createdAtMs = clock.now();
      const row = {
        uuid: newId(),
        workspaceUuid,
        email,
        emailLower,
        role,
        tokenHash: sha256Hex(token),
        invitedBy: principal.userUuid,
        createdAt: iso(createdAtMs),
        expiresAt: iso(createdAtMs + deps.invitationTtlMs),
      };
      const workspace = await db.transaction(async (trx) => {
        const found = await workspacesRepo.findOf(trx, principal.userUuid, workspaceUuid);
        if (!found) throw notFound('Workspace');
        if (found.personal) throw personalRefused();
        if (await workspacesRepo.hasMemberWithEmail(trx, workspaceUuid, emailLower)) {
          throw new AppError('CONFLICT', 'This e-mail address belongs to a member of the workspace');
        }
        await invitationsRepo.endPendingFor(trx, workspaceUuid, emailLower, row.createdAt);
        if ((await invitationsRepo.countPending(trx, workspaceUuid, row.createdAt)) >= MAX_PENDING_INVITATIONS) {
          throw limitExceeded(`A workspace can have at most ${MAX_PENDING_INVITATIONS} pending invitations`);
        }
        await invitationsRepo.insert(trx, row);
        await recordAudit(trx, acting, {
          action: 'invitation.create',
          target: { type: 'invitation', uuid: row.uuid },
          details: { email, role },
        });
        return found;
      });
      const link = `${deps.publicUrl}/dashboard/invitations/${token}`;
      await deps.mailer.sendInvitation(email, link, workspace.name);
      return invitationView({
        ...row,
        invitedBy: { uuid: principal.userUuid, email: principal.email },
        endedAt: null,
      });
    },

    async listPending(workspaceUuid: string) {
      return (await invitationsRepo.listPending(db.kysely, workspaceUuid, now())).map(invitationView);
    },

    /** @throws AppError NOT_FOUND unless the invitation is the workspace's and still pending. */
    async revoke(acting: Acting, uuid: string) {
      await db.transaction(async (trx) => {
        const found = await invitationsRepo.findIn(trx, acting.workspaceUuid, uuid);
        if (!found) throw notFound('Invitation');
        const ended = await invitationsRepo.end(trx, uuid, 'revoked', now());
        if (!ended) throw notFound('Invitation');
        await recordAudit(trx, acting, {
          action: 'invitation.revoke',
          target: { type: 'invitation', uuid },
          details: { email: found.email, role: found.role },
        });
      });
    },

    /**
     * The caller joins the invitation's workspace with its role. The invitation is used up by one
     * conditional update, so exactly one of concurrent accepts (on any instance) wins.
     * @throws AppError INVITATION_INVALID, INVITATION_EMAIL_MISMATCH, CONFLICT (already a member: used up), LIMIT_EXCEEDED.
     */
    async accept(principal: Principal, token: string, origin: RequestOrigin) {
      const invitation = await invitationsRepo.findByHash(db.kysely, sha256Hex(token));
      const at = now();
      if (!invitation || invitation.endedAt !== null || invitation.expiresAt <= at) throw invalidInvitation();
      if (invitation.emailLower !== normalizeEmail(principal.email)) {
        throw new AppError('INVITATION_EMAIL_MISMATCH', 'This invitation is for another e-mail address');
      }
      const { workspaceUuid } = invitation;
      const acting: Acting = {
        workspaceUuid,
        actor: { type: 'user', uuid: principal.userUuid, email: principal.email },
        ...origin,
      };
      const outcome = await db.transaction(async (trx) => {
        if (!(await invitationsRepo.end(trx, invitation.uuid, 'accepted', at))) throw invalidInvitation();
        const members = await workspacesRepo.lockMembers(trx, workspaceUuid);
        if (members.some((m) => m.userUuid === principal.userUuid)) return 'member' as const;
        if ((await workspacesRepo.countOf(trx, principal.userUuid)) >= MAX_WORKSPACES_PER_USER) {
          throw limitExceeded(`A user can belong to at most ${MAX_WORKSPACES_PER_USER} workspaces`);
        }
        if (members.length >= MAX_MEMBERS) {
          throw limitExceeded(`A workspace can have at most ${MAX_MEMBERS} members`);
        }
        await workspacesRepo.insertMember(trx, workspaceUuid, principal.userUuid, invitation.role, at);
        await recordAudit(trx, acting, {
          action: 'invitation.accept',
          target: { type: 'member', uuid: principal.userUuid },
          details: { invitation_uuid: invitation.uuid, role: invitation.role },
        });
        await announceCredentialChange(trx, principal.userUuid);
        return 'joined' as const;
      });
      if (outcome === 'member') throw new AppError('CONFLICT', 'You are already a member of this workspace');
      deps.credentialsChanged(principal.userUuid);
      const joined = await workspacesRepo.findOf(db.kysely, principal.userUuid, workspaceUuid);
      if (!joined) throw notFound('Workspace');
      return workspaceView(joined);
    },
  };
}

export type InvitationsService = ReturnType<typeof createInvitationsService>;
