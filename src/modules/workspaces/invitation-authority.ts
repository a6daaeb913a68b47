import type { Executor } from '../../db/connect.js';
import { type Acting, ROLES, type Role, roleAtLeast } from '../../lib/principal.js';
import { recordAudit } from '../audit/audit-repo.js';
import { invitationsRepo } from './invitations-repo.js';
import { workspacesRepo } from './workspaces-repo.js';

/*
 * An invitation is only as good as its inviter's authority: admins and owners grant admin, member
 * and viewer; only owners grant owner. When an inviter loses that authority their pending
 * invitations go, and accepting checks the inviter again (docs/workspaces.md).
 */

/** May a member holding `holder` (null: not a member) grant `granted` by invitation? */
export function mayGrant(holder: Role | null, granted: Role): boolean {
  if (holder === null || !roleAtLeast(holder, 'admin')) return false;
  return granted !== 'owner' || holder === 'owner';
}

/**
 * In the transaction that removes a member, sees them leave, or changes their role (`nowRole`;
 * null when they are no longer a member): revokes each pending invitation they made in the
 * workspace whose role they may no longer grant, each audited as `invitation.revoke` by `acting`.
 */
export async function revokeUngrantable(
  trx: Executor,
  acting: Acting,
  inviterUuid: string,
  nowRole: Role | null,
  at: string,
) {
  const roles = ROLES.filter((role) => !mayGrant(nowRole, role));
  const revoked = await invitationsRepo.revokeOfInviter(trx, acting.workspaceUuid, inviterUuid, roles, at);
  for (const invitation of revoked) {
    await recordAudit(trx, acting, {
      action: 'invitation.revoke',
      target: { type: 'invitation', uuid: invitation.uuid },
      details: { email: invitation.email, role: invitation.role },
    });
  }
}

/**
 * Does the inviter still stand behind an invitation: a member of its workspace whose current role
 * may grant its role, with an account that is not disabled (a deleted account is no member)?
 */
export async function inviterStandsBehind(
  ex: Executor,
  invitation: { workspaceUuid: string; role: Role; invitedBy: { uuid: string } },
): Promise<boolean> {
  const standing = await workspacesRepo.standingOf(ex, invitation.workspaceUuid, invitation.invitedBy.uuid);
  return standing !== undefined && !standing.disabled && mayGrant(standing.role, invitation.role);
}
