import { type Kysely, sql } from 'kysely';
import type { DialectMigration } from './types.js';

/**
 * The agent-wide task stream (`GET /agent/:id/tasks/events`, docs/api.md §5.8): each task event
 * also carries its agent and its number in the agent's stream (`agent_seq`, 1, 2, 3… per agent,
 * in commit order), handed out by the agent's counter row in the writing transaction. Events
 * written before this migration have neither and are not part of any agent's stream.
 */
export const migration033: DialectMigration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('task_events').addColumn('agent_uuid', 'text').execute();
    await db.schema.alterTable('task_events').addColumn('agent_seq', 'bigint').execute();
    // The stream's read (an agent's events after an id, in order), and the guard that no number
    // is handed out twice. Rows of before have nulls, which a unique index lets repeat.
    await sql`create unique index task_events_agent_idx on task_events (agent_uuid, agent_seq)`.execute(db);
    await db.schema
      .createTable('agent_event_seqs')
      .addColumn('agent_uuid', 'text', (c) => c.primaryKey().notNull().references('agents.uuid').onDelete('cascade'))
      .addColumn('last_seq', 'bigint', (c) => c.notNull())
      .execute();
  },
};
