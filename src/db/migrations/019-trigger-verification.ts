import type { Kysely } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/**
 * Signature schemes on triggers: which scheme a trigger verifies deliveries with (existing
 * triggers keep the `secret` scheme), its timestamp tolerance, and whether its secret was
 * supplied by the owner (then it is never rotated by the service, only replaced).
 */
export const migration019: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);
    const falseValue = dialect === 'postgres' ? false : 0;
    await db.schema
      .alterTable('triggers')
      .addColumn('verification_type', 'text', (c) => c.notNull().defaultTo('secret'))
      .execute();
    await db.schema.alterTable('triggers').addColumn('tolerance_seconds', 'integer').execute();
    await db.schema
      .alterTable('triggers')
      .addColumn('secret_supplied', t.bool, (c) => c.notNull().defaultTo(falseValue))
      .execute();
  },
};
