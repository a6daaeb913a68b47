import { AppError, notFound, RetryLaterError } from '../../http/errors.js';
import { forbiddenMessage } from '../../http/permissions.js';
import { randomSecret, sha256Hex } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { type Acting, type Principal, type RequestOrigin, type Role, roleAtLeast } from '../../lib/principal.js';
import { iso } from '../../lib/time.js';
import { normalizeEmail } from '../accounts/accounts-fns.js';
import { announceCredentialChange } from '../accounts/credential-changes.js';
import { recordAudit } from '../audit/audit-repo.js';
import { inviterStandsBehind, mayGrant } from './invitation-authority.js';
import { type InvitationRow, invitationsRepo } from './invitations-repo.js';
import {
  limitExceeded,
  MAX_MEMBERS,
  MAX_PENDING_INVITATIONS,
  MAX_WORKSPACES_PER_USER,
  personalRefused,
  requireRoomToOwn,
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

/** A workspace e-mails one address at most one invitation per this many milliseconds. */
export const INVITATION_RESEND_MS = 600_000;

/** 429 for an address the workspace invited less than 600 s ago; `waitMs` until it may again. */
const resendTooSoon = (waitMs: number) =>
  new RetryLaterError(
    'This address was sent an invitation to this workspace less than 10 minutes ago',
    { field: 'email', reason: 'one invitation e-mail per address per workspace per 10 minutes' },
    Math.max(1, Math.ceil(waitMs / 1000)),
  );

/** Invitations to a team workspace: create (and mail), list, revoke, accept (docs/workspaces.md). */
export function createInvitationsService(deps: WorkspacesDeps) {
  const { db, clock } = deps;
  const now = () => iso(clock.now());

  return {
    /**
     * Invites an e-mail address with a role; a pending invitation for the same address is replaced.
     * The link goes out by mail (or to the log without SMTP) after the commit. One e-mail per
     * address per workspace per `INVITATION_RESEND_MS`.
     * @throws AppError PERSONAL_WORKSPACE, FORBIDDEN (a role the inviter may not grant), CONFLICT
     *   (already a member), RATE_LIMITED (invited less than 600 s ago), LIMIT_EXCEEDED.
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
        // The inviter's member row, then the workspace's, are locked: a concurrent removal or
        // demotion of the inviter (which revokes their invitations) waits for this one or is seen
        // here, and the creates of one workspace take turns (the resend rule and the cap are exact).
        const standing = await workspacesRepo.standingOf(trx, workspaceUuid, principal.userUuid, true);
        await workspacesRepo.lock(trx, workspaceUuid);
        const found = await workspacesRepo.findOf(trx, principal.userUuid, workspaceUuid);
        if (!found || !standing) throw notFound('Workspace');
        if (found.personal) throw personalRefused();
        if (!mayGrant(standing.role, role))
          throw new AppError('FORBIDDEN', forbiddenMessage(role === 'owner' ? 'owner' : 'admin'));
        if (await workspacesRepo.hasMemberWithEmail(trx, workspaceUuid, emailLower)) {
          throw new AppError('CONFLICT', 'This e-mail address belongs to a member of the workspace');
        }
        const lastSent = await invitationsRepo.lastSentAt(trx, workspaceUuid, emailLower);
        if (lastSent !== null && createdAtMs - Date.parse(lastSent) < INVITATION_RESEND_MS) {
          throw resendTooSoon(Date.parse(lastSent) + INVITATION_RESEND_MS - createdAtMs);
        }
        await invitationsRepo.endPendingFor(trx, workspaceUuid, emailLower, row.createdAt);
        if ((await invitationsRepo.countPending(trx, workspaceUuid, row.createdAt)) >= MAX_PENDING_INVITATIONS) {
          throw limitExceeded(
            `A workspace can have at most ${MAX_PENDING_INVITATIONS} pending invitations`,
            'invitations',
          );
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
     * The caller joins the invitation's workspace with its role. In this order: the token, the
     * inviter (still a member who may grant the role, account enabled; otherwise the invitation is
     * revoked for good), the e-mail, membership, limits. The invitation is used up by one
     * conditional update, so exactly one of concurrent accepts (on any instance) wins.
     * @throws AppError INVITATION_INVALID, INVITATION_EMAIL_MISMATCH, CONFLICT (already a member: used up), LIMIT_EXCEEDED.
     */
    async accept(principal: Principal, token: string, origin: RequestOrigin) {
      const invitation = await invitationsRepo.findByHash(db.kysely, sha256Hex(token));
      const at = now();
      if (!invitation || invitation.endedAt !== null || invitation.expiresAt <= at) throw invalidInvitation();
      if (!(await inviterStandsBehind(db.kysely, invitation))) {
        await invitationsRepo.end(db.kysely, invitation.uuid, 'revoked', at);
        throw invalidInvitation();
      }
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
        const members = await workspacesRepo.lockMembers(trx, workspaceUuid);
        // Again under the members' locks: a demotion or removal that committed meanwhile counts.
        if (!(await inviterStandsBehind(trx, invitation))) {
          await invitationsRepo.end(trx, invitation.uuid, 'revoked', at);
          return 'revoked' as const;
        }
        if (!(await invitationsRepo.end(trx, invitation.uuid, 'accepted', at))) throw invalidInvitation();
        if (members.some((m) => m.userUuid === principal.userUuid)) return 'member' as const;
        if (invitation.role === 'owner') await requireRoomToOwn(trx, deps, principal.userUuid, 'workspaces');
        if ((await workspacesRepo.countOf(trx, principal.userUuid)) >= MAX_WORKSPACES_PER_USER) {
          throw limitExceeded(`A user can belong to at most ${MAX_WORKSPACES_PER_USER} workspaces`, 'workspaces');
        }
        if (members.length >= MAX_MEMBERS) {
          throw limitExceeded(`A workspace can have at most ${MAX_MEMBERS} members`, 'members');
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
      if (outcome === 'revoked') throw invalidInvitation();
      if (outcome === 'member') throw new AppError('CONFLICT', 'You are already a member of this workspace');
      deps.credentialsChanged(principal.userUuid);
      const joined = await workspacesRepo.findOf(db.kysely, principal.userUuid, workspaceUuid);
      if (!joined) throw notFound('Workspace');
      return workspaceView(joined);
    },
  };
}

export type InvitationsService = ReturnType<typeof createInvitationsService>;
