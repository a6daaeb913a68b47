import { type Kysely, sql } from 'kysely';
import type { DialectMigration } from './types.js';

/**
 * Concurrency keys and fair claiming (docs/architecture.md, "Claiming"): a task's key, an agent's
 * per-key cap, a trigger's key template, and when each group of an agent's tasks was last served.
 */
export const migration020: DialectMigration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('tasks').addColumn('concurrency_key', 'text').execute();
    await db.schema.alterTable('agents').addColumn('concurrency_per_key', 'integer').execute();
    await db.schema.alterTable('triggers').addColumn('concurrency_key', 'text').execute();
    // Keyed tasks waiting for a worker only: a claim's probe whether fair claiming applies, the
    // walk over an agent's keys, and each key's first tasks in claim order.
    await sql`create index tasks_keyed_ready_idx on tasks (agent_uuid, concurrency_key, priority desc, created_at, uuid)
      where ready = true and concurrency_key is not null`.execute(db);
    // One row per agent and group while the group has work; group_key '' is the keyless group
    // (a real key is never empty). served_seq orders the groups' last hand-outs; null: never served.
    await db.schema
      .createTable('concurrency_groups')
      .addColumn('agent_uuid', 'text', (c) => c.notNull().references('agents.uuid').onDelete('cascade'))
      .addColumn('group_key', 'text', (c) => c.notNull())
      .addColumn('served_seq', 'integer')
      .addPrimaryKeyConstraint('concurrency_groups_pk', ['agent_uuid', 'group_key'])
      .execute();
  },
};
