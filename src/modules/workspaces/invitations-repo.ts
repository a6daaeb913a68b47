import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import type { Role } from '../../lib/principal.js';

/** How an invitation stopped being pending. */
export type InvitationEnd = 'accepted' | 'revoked' | 'replaced';

export interface InvitationRow {
  uuid: string;
  workspaceUuid: string;
  email: string;
  emailLower: string;
  role: Role;
  invitedBy: { uuid: string; email: string };
  createdAt: string;
  expiresAt: string;
  endedAt: string | null;
}

type Joined = {
  uuid: string;
  workspace_uuid: string;
  email: string;
  email_lower: string;
  role: string;
  invited_by: string;
  inviter_email: string | null;
  created_at: string;
  expires_at: string;
  ended_at: string | null;
};

const toInvitation = (r: Joined): InvitationRow => ({
  uuid: r.uuid,
  workspaceUuid: r.workspace_uuid,
  email: r.email,
  emailLower: r.email_lower,
  role: r.role as Role,
  invitedBy: { uuid: r.invited_by, email: r.inviter_email ?? '' },
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  endedAt: r.ended_at,
});

function withInviter(ex: Executor) {
  return ex
    .selectFrom('invitations as i')
    .leftJoin('users as u', 'u.uuid', 'i.invited_by')
    .select([
      'i.uuid',
      'i.workspace_uuid',
      'i.email',
      'i.email_lower',
      'i.role',
      'i.invited_by',
      'u.email as inviter_email',
      'i.created_at',
      'i.expires_at',
      'i.ended_at',
    ]);
}

/** Invitations to workspaces; a token is only ever stored as its hash. */
export const invitationsRepo = {
  insert(
    ex: Executor,
    row: {
      uuid: string;
      workspaceUuid: string;
      email: string;
      emailLower: string;
      role: Role;
      tokenHash: string;
      invitedBy: string;
      createdAt: string;
      expiresAt: string;
    },
  ) {
    return withDbErrors(
      ex
        .insertInto('invitations')
        .values({
          uuid: row.uuid,
          workspace_uuid: row.workspaceUuid,
          email: row.email,
          email_lower: row.emailLower,
          role: row.role,
          token_hash: row.tokenHash,
          invited_by: row.invitedBy,
          created_at: row.createdAt,
          expires_at: row.expiresAt,
          ended_at: null,
          ended_as: null,
        })
        .execute(),
    );
  },

  /** Pending (not ended, not expired) invitations of the workspace, newest first. */
  async listPending(ex: Executor, workspaceUuid: string, now: string): Promise<InvitationRow[]> {
    const rows = await withDbErrors(
      withInviter(ex)
        .where('i.workspace_uuid', '=', workspaceUuid)
        .where('i.ended_at', 'is', null)
        .where('i.expires_at', '>', now)
        .orderBy('i.created_at', 'desc')
        .orderBy('i.uuid', 'desc')
        .execute(),
    );
    return rows.map(toInvitation);
  },

  async countPending(ex: Executor, workspaceUuid: string, now: string): Promise<number> {
    const row = await withDbErrors(
      ex
        .selectFrom('invitations')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_uuid', '=', workspaceUuid)
        .where('ended_at', 'is', null)
        .where('expires_at', '>', now)
        .executeTakeFirstOrThrow(),
    );
    return Number(row.n);
  },

  /** The invitation with this token hash, whatever its state, if its workspace is live. */
  async findByHash(ex: Executor, tokenHash: string): Promise<InvitationRow | undefined> {
    const row = await withDbErrors(
      withInviter(ex)
        .innerJoin('workspaces as w', 'w.uuid', 'i.workspace_uuid')
        .where('i.token_hash', '=', tokenHash)
        .where('w.deleted_at', 'is', null)
        .executeTakeFirst(),
    );
    return row && toInvitation(row);
  },

  /**
   * Ends one pending, unexpired invitation in a single conditional update, so of concurrent
   * attempts (on any instance) exactly one gets it back.
   */
  async end(ex: Executor, uuid: string, as: InvitationEnd, now: string) {
    return withDbErrors(
      ex
        .updateTable('invitations')
        .set({ ended_at: now, ended_as: as })
        .where('uuid', '=', uuid)
        .where('ended_at', 'is', null)
        .where('expires_at', '>', now)
        .returning(['uuid', 'email', 'role', 'workspace_uuid'])
        .executeTakeFirst(),
    );
  },

  /** Ends the pending invitation(s) of the workspace for this e-mail (a new one replaces them). */
  endPendingFor(ex: Executor, workspaceUuid: string, emailLower: string, now: string) {
    return withDbErrors(
      ex
        .updateTable('invitations')
        .set({ ended_at: now, ended_as: 'replaced' })
        .where('workspace_uuid', '=', workspaceUuid)
        .where('email_lower', '=', emailLower)
        .where('ended_at', 'is', null)
        .execute(),
    );
  },

  /**
   * Revokes the pending invitations `inviterUuid` made in the workspace whose role is one of
   * `roles` (their inviter may no longer grant it). @returns the revoked ones.
   */
  async revokeOfInviter(ex: Executor, workspaceUuid: string, inviterUuid: string, roles: readonly Role[], now: string) {
    if (roles.length === 0) return [];
    return withDbErrors(
      ex
        .updateTable('invitations')
        .set({ ended_at: now, ended_as: 'revoked' })
        .where('workspace_uuid', '=', workspaceUuid)
        .where('invited_by', '=', inviterUuid)
        .where('role', 'in', roles)
        .where('ended_at', 'is', null)
        .where('expires_at', '>', now)
        .returning(['uuid', 'email', 'role'])
        .execute(),
    );
  },

  /**
   * When the workspace last sent an invitation to this (normalized) address, whatever became of
   * that invitation since; null when it never did. Invitations are kept as long as their workspace.
   */
  async lastSentAt(ex: Executor, workspaceUuid: string, emailLower: string): Promise<string | null> {
    const row = await withDbErrors(
      ex
        .selectFrom('invitations')
        .select('created_at')
        .where('workspace_uuid', '=', workspaceUuid)
        .where('email_lower', '=', emailLower)
        .orderBy('created_at', 'desc')
        .limit(1)
        .executeTakeFirst(),
    );
    return row?.created_at ?? null;
  },

  /** Ends every pending invitation of a workspace being deleted. */
  endAllOf(ex: Executor, workspaceUuid: string, now: string) {
    return withDbErrors(
      ex
        .updateTable('invitations')
        .set({ ended_at: now, ended_as: 'revoked' })
        .where('workspace_uuid', '=', workspaceUuid)
        .where('ended_at', 'is', null)
        .execute(),
    );
  },

  /** The invitation if it belongs to the workspace (any state). */
  async findIn(ex: Executor, workspaceUuid: string, uuid: string): Promise<InvitationRow | undefined> {
    const row = await withDbErrors(
      withInviter(ex).where('i.workspace_uuid', '=', workspaceUuid).where('i.uuid', '=', uuid).executeTakeFirst(),
    );
    return row && toInvitation(row);
  },
};

export type InvitationsRepo = typeof invitationsRepo;
