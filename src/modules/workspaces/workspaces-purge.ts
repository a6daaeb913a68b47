import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { ownedBy, type PurgeStep } from '../../db/purge.js';

/**
 * The workspaces room's part of purging a deleted workspace: which workspaces wait for it, their
 * invitations, and last of all the workspace's own row (its memberships cascade).
 */
export const workspacesPurge = {
  steps: [['invitations', ownedBy('invitations', ['uuid'])]] as ReadonlyArray<readonly [string, PurgeStep]>,

  /** Up to `limit` deleted workspaces still to purge, the longest deleted first. */
  async deletedWorkspaces(ex: Executor, limit: number): Promise<string[]> {
    const rows = await withDbErrors(
      ex
        .selectFrom('workspaces')
        .select('uuid')
        .where('deleted_at', 'is not', null)
        .orderBy('deleted_at')
        .limit(limit)
        .execute(),
    );
    return rows.map((r) => r.uuid);
  },

  /** The deleted workspace's own row, once everything else of it is gone. */
  async deleteRow(ex: Executor, workspaceUuid: string): Promise<number> {
    const result = await withDbErrors(
      ex
        .deleteFrom('workspaces')
        .where('uuid', '=', workspaceUuid)
        .where('deleted_at', 'is not', null)
        .executeTakeFirst(),
    );
    return Number(result.numDeletedRows);
  },
};
