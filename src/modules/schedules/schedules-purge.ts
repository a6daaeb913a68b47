import { sql } from 'kysely';
import { type AgentPurgeStep, deleteLimited, ownedBy } from '../../db/purge.js';

/**
 * The schedules room's part of purging a deleted workspace, per agent: the run logs of its
 * schedules in batches of their own, then the schedules.
 */
export const schedulesPurge: ReadonlyArray<readonly [string, AgentPurgeStep]> = [
  [
    'schedule_runs',
    (ex, agentUuid, limit) =>
      deleteLimited(
        ex,
        'schedule_runs',
        ['run_id'],
        sql`from schedule_runs join schedules on schedules.uuid = schedule_runs.schedule_uuid
          where schedules.agent_uuid = ${agentUuid} limit ${limit}`,
      ),
  ],
  ['schedules', ownedBy('schedules', ['uuid'], 'agent_uuid')],
];
