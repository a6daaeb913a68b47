import { notFound } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import type { Acting, Principal } from '../../lib/principal.js';
import { iso } from '../../lib/time.js';
import { newSigningSecret } from '../accounts/accounts-fns.js';
import { accountsRepo } from '../accounts/accounts-repo.js';
import { announceCredentialChange } from '../accounts/credential-changes.js';
import { recordAudit } from '../audit/audit-repo.js';
import { invitationsRepo } from './invitations-repo.js';
import {
  limitExceeded,
  MAX_WORKSPACES_PER_USER,
  personalRefused,
  requireName,
  requireRoomToOwn,
  type WorkspacesDeps,
  workspaceView,
} from './workspaces-fns.js';
import { type WorkspaceRow, workspacesRepo } from './workspaces-repo.js';

/** Team workspaces: create, list, read, rename, delete (docs/workspaces.md). */
export function createWorkspacesService(deps: WorkspacesDeps) {
  const { db, clock } = deps;
  const now = () => iso(clock.now());

  async function requireWorkspace(userUuid: string, workspaceUuid: string): Promise<WorkspaceRow> {
    const found = await workspacesRepo.findOf(db.kysely, userUuid, workspaceUuid);
    if (!found) throw notFound('Workspace');
    return found;
  }

  return {
    /**
     * A team workspace with the caller as its only member (owner), its own signing secret, and a
     * `workspace.create` entry in its audit log.
     * @throws AppError LIMIT_EXCEEDED when the caller already belongs to the most workspaces allowed.
     */
    async create(acting: Acting, principal: Principal, name: string) {
      requireName(name);
      const uuid = newId();
      const createdAt = now();
      const sealed = deps.box.seal(newSigningSecret());
      await db.transaction(async (trx) => {
        await requireRoomToOwn(trx, deps, principal.userUuid, 'workspaces');
        if ((await workspacesRepo.countOf(trx, principal.userUuid)) >= MAX_WORKSPACES_PER_USER) {
          throw limitExceeded(`A user can belong to at most ${MAX_WORKSPACES_PER_USER} workspaces`, 'workspaces');
        }
        await workspacesRepo.insert(trx, { uuid, name, ownerUuid: principal.userUuid, createdAt });
        await accountsRepo.insertSigningSecret(trx, { uuid: newId(), workspaceUuid: uuid, sealed, createdAt });
        await recordAudit(
          trx,
          acting,
          { action: 'workspace.create', target: { type: 'workspace', uuid }, details: { name } },
          uuid,
        );
      });
      return workspaceView({ uuid, name, personal: false, role: 'owner', createdAt, updatedAt: createdAt });
    },

    async list(userUuid: string) {
      return (await workspacesRepo.listOf(db.kysely, userUuid)).map(workspaceView);
    },

    async get(userUuid: string, workspaceUuid: string) {
      return workspaceView(await requireWorkspace(userUuid, workspaceUuid));
    },

    async rename(acting: Acting, userUuid: string, name: string) {
      requireName(name);
      const { workspaceUuid } = acting;
      await db.transaction(async (trx) => {
        await workspacesRepo.rename(trx, workspaceUuid, name, now());
        await recordAudit(trx, acting, {
          action: 'workspace.rename',
          target: { type: 'workspace', uuid: workspaceUuid },
          details: { name },
        });
      });
      return workspaceView(await requireWorkspace(userUuid, workspaceUuid));
    },

    /**
     * Deletes a team workspace at once: its members lose access, its agents are deleted as
     * `DELETE /agent` deletes them (open tasks cancelled, triggers gone), its callbacks not yet sent
     * are dropped and its pending invitations end. Its rows are purged later, in the background.
     * @throws AppError PERSONAL_WORKSPACE for the personal workspace.
     */
    async remove(acting: Acting, userUuid: string) {
      const { workspaceUuid } = acting;
      const workspace = await requireWorkspace(userUuid, workspaceUuid);
      if (workspace.personal) throw personalRefused();
      await deps.agents.prepareWorkspaceRemoval(workspaceUuid);
      const members = await db.transaction(async (trx) => {
        const locked = await workspacesRepo.lockMembers(trx, workspaceUuid);
        const at = now();
        if (!(await workspacesRepo.markDeleted(trx, workspaceUuid, at))) throw notFound('Workspace');
        await deps.agents.removeAllOfWorkspaceIn(trx, workspaceUuid);
        await deps.dropPendingCallbacks(trx, workspaceUuid);
        await invitationsRepo.endAllOf(trx, workspaceUuid, at);
        for (const member of locked) await announceCredentialChange(trx, member.userUuid);
        // The workspace's own log goes with it: the entry is kept in the owner's personal one.
        await recordAudit(
          trx,
          acting,
          {
            action: 'workspace.delete',
            target: { type: 'workspace', uuid: workspaceUuid },
            details: { name: workspace.name },
          },
          userUuid,
        );
        return locked;
      });
      for (const member of members) deps.credentialsChanged(member.userUuid);
    },
  };
}

export type WorkspacesService = ReturnType<typeof createWorkspacesService>;
