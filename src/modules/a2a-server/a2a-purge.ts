import type { Executor } from '../../db/connect.js';
import { type AgentPurgeStep, ownedBy } from '../../db/purge.js';

/** The A2A server's part of purging a deleted workspace, per agent: the messageIds it remembers. */
export const a2aPurge: ReadonlyArray<readonly [string, AgentPurgeStep]> = [
  ['a2a_message_ids', ownedBy('a2a_message_ids', ['agent_uuid', 'message_id'], 'agent_uuid')],
];

/** Retention: deletes up to `limit` A2A messageIds whose 24 hours ended before `now`. */
export async function deleteExpiredMessageIds(ex: Executor, now: string, limit: number): Promise<number> {
  const result = await ex
    .deleteFrom('a2a_message_ids')
    .where(({ eb, refTuple, selectFrom }) =>
      eb(
        refTuple('agent_uuid', 'message_id'),
        'in',
        selectFrom('a2a_message_ids')
          .select(['agent_uuid', 'message_id'])
          .where('expires_at', '<', now)
          .limit(limit)
          .$asTuple('agent_uuid', 'message_id'),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
