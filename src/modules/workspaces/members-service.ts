import type { Executor } from '../../db/connect.js';
import { AppError, notFound } from '../../http/errors.js';
import { forbiddenMessage } from '../../http/permissions.js';
import { type Acting, type Principal, type Role, roleAtLeast } from '../../lib/principal.js';
import { iso } from '../../lib/time.js';
import { accountsRepo } from '../accounts/accounts-repo.js';
import { announceCredentialChange } from '../accounts/credential-changes.js';
import { recordAudit } from '../audit/audit-repo.js';
import { revokeUngrantable } from './invitation-authority.js';
import { lastOwner, memberView, personalRefused, requireRoomToOwn, type WorkspacesDeps } from './workspaces-fns.js';
import { type MemberRow, workspacesRepo } from './workspaces-repo.js';

declare module '../../lib/event-hub.js' {
  interface HubEvents {
    /**
     * A member left or was removed from a workspace: heard inside the removing transaction (a throw
     * rolls it back), with the remover (or the leaving user) as `acting`. E.g. the MCP
     * authorization server ends the user's grants there.
     */
    'member:removed': { trx: Executor; acting: Acting; userUuid: string };
  }
}

const ownerRequired = () => new AppError('FORBIDDEN', forbiddenMessage('owner'));

/** Members of a workspace: list, change a role, remove, leave (docs/workspaces.md). */
export function createMembersService(deps: WorkspacesDeps) {
  const { db, clock } = deps;
  const now = () => iso(clock.now());

  /** The workspace is a live team workspace of the caller's (the guard checked membership). */
  async function requireTeam(ex: Executor, principal: Principal) {
    const workspace = await workspacesRepo.findOf(ex, principal.userUuid, principal.workspaceUuid);
    if (!workspace) throw notFound('Workspace');
    if (workspace.personal) throw personalRefused();
    return workspace;
  }

  /** The target member of a change, from the locked rows; 404 when not a member. */
  async function lockedTarget(trx: Executor, workspaceUuid: string, userUuid: string) {
    const locked = await workspacesRepo.lockMembers(trx, workspaceUuid);
    const target = await workspacesRepo.findMember(trx, workspaceUuid, userUuid);
    if (!target) throw notFound('Member');
    const owners = locked.filter((m) => m.role === 'owner').length;
    return { target, owners };
  }

  /**
   * Takes the member out of the workspace: every pending invitation, key and token they made in it
   * is revoked (each audited), the hub's `member:removed` listeners end what else they held there
   * (MCP grants), then `member.remove` or `member.leave`. In the caller's transaction.
   */
  async function takeOut(trx: Executor, acting: Acting, target: MemberRow, action: 'member.remove' | 'member.leave') {
    const { workspaceUuid } = acting;
    await workspacesRepo.removeMember(trx, workspaceUuid, target.userUuid);
    await revokeUngrantable(trx, acting, target.userUuid, null, now());
    const revoked = await accountsRepo.revokeCredentialsOf(trx, workspaceUuid, target.userUuid, now());
    for (const credential of revoked) {
      await recordAudit(
        trx,
        acting,
        credential.table === 'platform_keys'
          ? { action: 'key.revoke', target: { type: 'key', uuid: credential.uuid }, details: { name: credential.name } }
          : { action: 'ingest_token.revoke', target: { type: 'ingest_token', uuid: credential.uuid }, details: {} },
      );
    }
    await deps.events.emit('member:removed', { trx, acting, userUuid: target.userUuid });
    await recordAudit(trx, acting, {
      action,
      target: { type: 'member', uuid: target.userUuid },
      details: { email: target.email },
    });
    await announceCredentialChange(trx, target.userUuid);
  }

  return {
    async list(workspaceUuid: string) {
      return (await workspacesRepo.listMembers(db.kysely, workspaceUuid)).map(memberView);
    },

    /**
     * Sets a member's role. Making an owner, or changing an owner's role, needs the owner role; the
     * only owner cannot be demoted. The same role again changes nothing and writes no entry.
     * @throws AppError NOT_FOUND, FORBIDDEN, LAST_OWNER, PERSONAL_WORKSPACE.
     */
    async setRole(acting: Acting, principal: Principal, userUuid: string, role: Role) {
      const changed = await db.transaction(async (trx) => {
        await requireTeam(trx, principal);
        const { target, owners } = await lockedTarget(trx, acting.workspaceUuid, userUuid);
        if ((role === 'owner' || target.role === 'owner') && !roleAtLeast(principal.role, 'owner')) {
          throw ownerRequired();
        }
        if (target.role === role) return { member: target, changed: false };
        if (target.role === 'owner' && owners <= 1) throw lastOwner();
        if (role === 'owner') await requireRoomToOwn(trx, deps, userUuid, 'role');
        await workspacesRepo.setRole(trx, acting.workspaceUuid, userUuid, role);
        await revokeUngrantable(trx, acting, userUuid, role, now());
        await recordAudit(trx, acting, {
          action: 'member.role_change',
          target: { type: 'member', uuid: userUuid },
          details: { email: target.email, from: target.role, to: role },
        });
        await announceCredentialChange(trx, userUuid);
        return { member: { ...target, role }, changed: true };
      });
      if (changed.changed) deps.credentialsChanged(userUuid);
      return memberView(changed.member);
    },

    /**
     * Removes a member (removing oneself is leaving). Removing an owner needs the owner role; the
     * only owner cannot go.
     * @throws AppError NOT_FOUND, FORBIDDEN, LAST_OWNER, PERSONAL_WORKSPACE.
     */
    async remove(acting: Acting, principal: Principal, userUuid: string) {
      await db.transaction(async (trx) => {
        await requireTeam(trx, principal);
        const { target, owners } = await lockedTarget(trx, acting.workspaceUuid, userUuid);
        const leaving = userUuid === principal.userUuid;
        if (!leaving && target.role === 'owner' && !roleAtLeast(principal.role, 'owner')) throw ownerRequired();
        if (target.role === 'owner' && owners <= 1) throw lastOwner();
        await takeOut(trx, acting, target, leaving ? 'member.leave' : 'member.remove');
      });
      deps.credentialsChanged(userUuid);
    },

    /** The caller leaves the workspace. @throws AppError LAST_OWNER, PERSONAL_WORKSPACE. */
    async leave(acting: Acting, principal: Principal) {
      await db.transaction(async (trx) => {
        await requireTeam(trx, principal);
        const { target, owners } = await lockedTarget(trx, acting.workspaceUuid, principal.userUuid);
        if (target.role === 'owner' && owners <= 1) throw lastOwner();
        await takeOut(trx, acting, target, 'member.leave');
      });
      deps.credentialsChanged(principal.userUuid);
    },
  };
}

export type MembersService = ReturnType<typeof createMembersService>;
