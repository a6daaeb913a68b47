import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';

/**
 * The agents room's part of purging a deleted workspace: which agents it has (deleted ones
 * included), and each agent's own row once every room has purged what hangs off it.
 */
export const agentsPurge = {
  /** Up to `limit` agents of the workspace, live or deleted (through `agents_user_idx`). */
  async agentsOf(ex: Executor, workspaceUuid: string, limit: number): Promise<string[]> {
    const rows = await withDbErrors(
      ex
        .selectFrom('agents')
        .select('uuid')
        .where('workspace_uuid', '=', workspaceUuid)
        .orderBy('created_at')
        .limit(limit)
        .execute(),
    );
    return rows.map((r) => r.uuid);
  },

  /** Deletes the agent's row (what still cascades from it is bounded: at most a few rows). */
  async deleteAgent(ex: Executor, agentUuid: string): Promise<number> {
    const result = await withDbErrors(ex.deleteFrom('agents').where('uuid', '=', agentUuid).executeTakeFirst());
    return Number(result.numDeletedRows);
  },
};
