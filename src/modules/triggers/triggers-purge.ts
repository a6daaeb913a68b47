import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';
import { type AgentPurgeStep, deleteLimited, expiredBefore, ownedBy } from '../../db/purge.js';

/**
 * The triggers room's part of purging a deleted workspace, per agent: the deliveries of its
 * triggers and their remembered signatures in batches of their own, then the triggers (with their
 * secrets and signature settings).
 */
export const triggersPurge: ReadonlyArray<readonly [string, AgentPurgeStep]> = [
  [
    'trigger_deliveries',
    (ex, agentUuid, limit) =>
      deleteLimited(
        ex,
        'trigger_deliveries',
        ['uuid'],
        sql`from trigger_deliveries join triggers on triggers.uuid = trigger_deliveries.trigger_uuid
          where triggers.agent_uuid = ${agentUuid} limit ${limit}`,
      ),
  ],
  [
    'trigger_signatures',
    (ex, agentUuid, limit) =>
      deleteLimited(
        ex,
        'trigger_signatures',
        ['trigger_uuid', 'signature'],
        sql`from trigger_signatures join triggers on triggers.uuid = trigger_signatures.trigger_uuid
          where triggers.agent_uuid = ${agentUuid} limit ${limit}`,
      ),
  ],
  ['triggers', ownedBy('triggers', ['uuid'], 'agent_uuid')],
];

/** Retention: deletes up to `limit` trigger deliveries received before `before` (housekeeping paces it). */
export async function deleteOldDeliveries(ex: Executor, before: string, limit: number): Promise<number> {
  const result = await ex
    .deleteFrom('trigger_deliveries')
    .where('uuid', 'in', (q) =>
      q.selectFrom('trigger_deliveries').select('uuid').where('received_at', '<', before).limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Retention: deletes up to `limit` remembered delivery signatures whose replay window ended before `now`. */
export const deleteExpiredSignatures = expiredBefore('trigger_signatures', ['trigger_uuid', 'signature']);
