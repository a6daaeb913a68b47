import { sql } from 'kysely';
import { type AgentPurgeStep, deleteLimited, ownedBy, type PurgeStep } from '../../db/purge.js';

/**
 * The tasks room's part of purging a deleted workspace (housekeeping runs the steps, in order).
 * Per agent: the events of its tasks in batches of their own, then its tasks (what still cascades
 * from a task, its callbacks, push run, A2A and MCP rows, is bounded per task), then its
 * concurrency groups and its event counter. Per workspace: its idempotency keys.
 */
export const tasksPurge: {
  ofAgent: ReadonlyArray<readonly [string, AgentPurgeStep]>;
  ofWorkspace: ReadonlyArray<readonly [string, PurgeStep]>;
} = {
  ofAgent: [
    [
      'task_events',
      (ex, agentUuid, limit) =>
        deleteLimited(
          ex,
          'task_events',
          ['task_uuid', 'seq'],
          sql`from task_events join tasks on tasks.uuid = task_events.task_uuid
            where tasks.agent_uuid = ${agentUuid} limit ${limit}`,
        ),
    ],
    ['tasks', ownedBy('tasks', ['uuid'], 'agent_uuid')],
    ['concurrency_groups', ownedBy('concurrency_groups', ['agent_uuid', 'group_key'], 'agent_uuid')],
    ['agent_event_seqs', ownedBy('agent_event_seqs', ['agent_uuid'], 'agent_uuid')],
  ],
  ofWorkspace: [['idempotency_keys', ownedBy('idempotency_keys', ['workspace_uuid', 'key'])]],
};
