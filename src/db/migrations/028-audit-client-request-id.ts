import type { Kysely } from 'kysely';
import type { Dialect } from '../connect.js';
import type { DialectMigration } from './types.js';

/**
 * An audit entry's `request_id` is from now on the server's own id for the request; the
 * X-Request-Id the client sent, when it was accepted, moves to a column of its own. Entries
 * written before keep what they had (the client's id when it sent one) and a null
 * `client_request_id`.
 */
export const migration028: DialectMigration = {
  async up(db: Kysely<unknown>, _dialect: Dialect) {
    await db.schema.alterTable('audit_log').addColumn('client_request_id', 'text').execute();
  },
};
