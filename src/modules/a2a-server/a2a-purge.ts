import { type AgentPurgeStep, expiredBefore, ownedBy } from '../../db/purge.js';

/** The A2A server's part of purging a deleted workspace, per agent: the messageIds it remembers. */
export const a2aPurge: ReadonlyArray<readonly [string, AgentPurgeStep]> = [
  ['a2a_message_ids', ownedBy('a2a_message_ids', ['agent_uuid', 'message_id'], 'agent_uuid')],
];

/** Retention: deletes up to `limit` A2A messageIds whose 24 hours ended before `now`. */
export const deleteExpiredMessageIds = expiredBefore('a2a_message_ids', ['agent_uuid', 'message_id']);
