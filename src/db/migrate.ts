import type { Kysely, Migration, MigrationProvider } from 'kysely';
import { Migrator, sql } from 'kysely';
import type { Db } from './connect.js';
import { migration001 } from './migrations/001-foundation.js';
import { migration002 } from './migrations/002-tasks.js';
import { migration003 } from './migrations/003-triggers.js';
import { migration004 } from './migrations/004-callbacks.js';
import { migration007 } from './migrations/007-telemetry.js';
import { migration008 } from './migrations/008-oauth.js';
import { migration009 } from './migrations/009-model-proxy.js';
import { migration010 } from './migrations/010-housekeeping.js';
import { migration011 } from './migrations/011-task-trace.js';
import { migration012 } from './migrations/012-push-runs.js';
import { migration013 } from './migrations/013-refused-deliveries.js';
import { migration014 } from './migrations/014-a2a.js';
import { migration015 } from './migrations/015-account-recovery.js';
import { migration016 } from './migrations/016-workspaces.js';
import { migration017 } from './migrations/017-schedules.js';
import { migration018 } from './migrations/018-mcp.js';
import { migration019 } from './migrations/019-trigger-verification.js';
import { migration020 } from './migrations/020-concurrency-keys.js';
import { migration021 } from './migrations/021-budgets.js';
import { migration022 } from './migrations/022-routes.js';
import { migration023 } from './migrations/023-call-routes.js';
import { migration026 } from './migrations/026-schedules-workspace.js';
import { migration027 } from './migrations/027-trigger-signatures.js';
import { migration028 } from './migrations/028-audit-client-request-id.js';
import { migration029 } from './migrations/029-invitation-sends.js';
import { migration032 } from './migrations/032-usage-estimated.js';
import { migration033 } from './migrations/033-agent-task-events.js';
import { migration034 } from './migrations/034-task-retry-delay.js';
import { migration036 } from './migrations/036-mcp-oauth.js';
import { migration038 } from './migrations/038-call-api.js';
import { migration039 } from './migrations/039-key-models-rate-limits.js';
import { migration040 } from './migrations/040-task-lineage.js';
import { migration043 } from './migrations/043-a2a-push.js';
import type { DialectMigration } from './migrations/types.js';

/** Every migration, in order. Forward only: a released migration is never edited. */
const MIGRATIONS: Record<string, DialectMigration> = {
  '001-foundation': migration001,
  '002-tasks': migration002,
  '003-triggers': migration003,
  '004-callbacks': migration004,
  '007-telemetry': migration007,
  '008-oauth': migration008,
  '009-model-proxy': migration009,
  '010-housekeeping': migration010,
  '011-task-trace': migration011,
  '012-push-runs': migration012,
  '013-refused-deliveries': migration013,
  '014-a2a': migration014,
  '015-account-recovery': migration015,
  '016-workspaces': migration016,
  '017-schedules': migration017,
  '018-mcp': migration018,
  '019-trigger-verification': migration019,
  '020-concurrency-keys': migration020,
  '021-budgets': migration021,
  '022-routes': migration022,
  '023-call-routes': migration023,
  '026-schedules-workspace': migration026,
  '027-trigger-signatures': migration027,
  '028-audit-client-request-id': migration028,
  '029-invitation-sends': migration029,
  '032-usage-estimated': migration032,
  '033-agent-task-events': migration033,
  '034-task-retry-delay': migration034,
  '036-mcp-oauth': migration036,
  '038-call-api': migration038,
  '039-key-models-rate-limits': migration039,
  '040-task-lineage': migration040,
  '043-a2a-push': migration043,
};

export class MigrationError extends Error {}

/**
 * Brings the schema up to date (or, for tests of a migration, up to `target`). Safe to run from
 * several instances at once (the migrator takes a lock).
 * @throws MigrationError naming the migration that failed.
 */
export async function migrateToLatest(db: Db, target?: string): Promise<string[]> {
  const provider: MigrationProvider = {
    async getMigrations() {
      const out: Record<string, Migration> = {};
      for (const [name, m] of Object.entries(MIGRATIONS)) {
        out[name] = {
          up: async (k: Kysely<unknown>) => {
            // The pool's statement_timeout bounds request queries; a migration may rightly take longer.
            if (db.dialect === 'postgres') await sql`set local statement_timeout = 0`.execute(k);
            await m.up(k, db.dialect);
          },
        };
      }
      return out;
    },
  };
  const migrator = new Migrator({ db: db.kysely, provider });
  // Kysely takes no lock on SQLite (one connection per process); two processes starting on a new
  // data dir (the server and the CLI) would both migrate. An IMMEDIATE transaction around the
  // whole run makes the second wait and then find nothing left to do.
  const sqlite = db.dialect === 'sqlite';
  if (sqlite) await sql`begin immediate`.execute(db.kysely);
  let outcome: Awaited<ReturnType<Migrator['migrateToLatest']>>;
  db.allowSchemaEdits?.(true);
  try {
    outcome = await (target ? migrator.migrateTo(target) : migrator.migrateToLatest());
  } catch (err) {
    if (sqlite) await sql`rollback`.execute(db.kysely);
    throw err;
  } finally {
    db.allowSchemaEdits?.(false);
  }
  if (sqlite) await sql`${sql.raw(outcome.error ? 'rollback' : 'commit')}`.execute(db.kysely);
  const { error, results } = outcome;
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const reason = error instanceof Error ? error.message : String(error ?? 'unknown error');
    throw new MigrationError(`Migration ${failed?.migrationName ?? ''} failed: ${reason}`, {
      cause: error,
    });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
