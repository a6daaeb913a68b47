import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import SqliteDatabase from '../../src/db/sqlite-driver.js';
import { builtCli, cliEnv, freePort, ROOT, removeBuiltCli } from '../helpers/cli-process.js';
import { DATABASES, ownDatabase, TEST_PG_SECRETS, type TestDatabase, tempDir } from '../helpers/databases.js';

// Kysely's migrator takes this session advisory lock on PostgreSQL (PostgreSQL adapter's LOCK_ID).
const KYSELY_MIGRATION_LOCK = '3853314791062309107';

interface Hold {
  /** Whether the server has reached its storage (which it does after it has set up its handlers). */
  reached(pid: number): Promise<boolean>;
  release(): Promise<void>;
}

/**
 * Holds what the server's migrations must take (SQLite's write lock, PostgreSQL's migration lock), so
 * that a server that starts cannot get past them until `release`.
 */
async function holdMigrations(database: TestDatabase, dataDir: string): Promise<Hold> {
  if (!database.databaseUrl) {
    const file = path.join(dataDir, 'taskhook.sqlite');
    const native = new SqliteDatabase(file);
    native.pragma('journal_mode = WAL');
    native.exec('begin immediate');
    return {
      reached: async (pid) =>
        readdirSync(`/proc/${pid}/fd`).some((fd) => {
          try {
            return readlinkSync(`/proc/${pid}/fd/${fd}`) === file;
          } catch {
            return false;
          }
        }),
      release: async () => {
        native.exec('rollback');
        native.close();
      },
    };
  }
  const client = new pg.Client({ connectionString: database.databaseUrl });
  await client.connect();
  await client.query(`select pg_advisory_lock(${KYSELY_MIGRATION_LOCK})`);
  return {
    reached: async () => {
      const others = await client.query(
        'select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
      );
      return others.rows[0].n > 0;
    },
    release: async () => {
      await client.query(`select pg_advisory_unlock(${KYSELY_MIGRATION_LOCK})`);
      await client.end();
    },
  };
}

let cli = '';
beforeAll(async () => {
  cli = await builtCli();
}, 300_000);
afterAll(() => removeBuiltCli(cli));

// As PID 1 (a container) a signal without a handler is ignored: `docker stop` of a container that is
// still starting would wait for SIGKILL. Outside a container the same gap shows as death by signal.
// The server is held at its migrations, which it reaches only after setting up its handlers.
describe.runIf(existsSync('/proc/self/status')).each(DATABASES)(
  'taskhook serve stopped while it starts on $name',
  (shared) => {
    let own: Awaited<ReturnType<typeof ownDatabase>>;
    beforeAll(async () => {
      own = await ownDatabase(shared);
    });
    afterAll(async () => {
      await own.drop();
    });

    it('handles SIGTERM before its migrations, ends the start-up at the next step and exits 0 without listening', async () => {
      const database = own.database;
      const dataDir = tempDir('taskhook-start-signal-');
      const hold = await holdMigrations(database, dataDir);
      const env: Record<string, string> = { TASKHOOK_DATA_DIR: dataDir, PORT: String(await freePort()) };
      if (database.databaseUrl) {
        Object.assign(env, {
          DATABASE_URL: database.databaseUrl,
          TASKHOOK_JWT_SECRET: TEST_PG_SECRETS.jwtSecret,
          TASKHOOK_ENCRYPTION_KEY: TEST_PG_SECRETS.encryptionKey,
        });
      }
      const server = spawn(process.execPath, [cli, 'serve'], {
        cwd: ROOT,
        env: cliEnv(env),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      server.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      server.stderr?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const exited = once(server, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
      try {
        for (let i = 0; i < 600 && server.exitCode === null && !(await hold.reached(server.pid as number)); i++) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(server.exitCode, output).toBeNull();
        expect(await hold.reached(server.pid as number), 'the server reached its storage').toBe(true);
        server.kill('SIGTERM');
      } finally {
        await hold.release();
      }
      const [code, signal] = await exited;
      expect({ code, signal }, output).toEqual({ code: 0, signal: null });
      expect(output).toContain('"signal":"SIGTERM","msg":"stopped while starting"');
      expect(output).not.toContain('Server listening');
    }, 60_000);
  },
);
