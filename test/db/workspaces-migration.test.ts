import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDb, type Db } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { sha256Hex } from '../../src/lib/crypto.js';
import { DATABASES, ownDatabase, tempDir } from '../helpers/databases.js';

const BEFORE = '015-account-recovery';
const at = '2026-01-02T03:04:05.000Z';

/** Rows as the schema before workspaces held them (owner column `user_uuid`), one of each owned kind. */
async function fillPreviousSchema(db: Db) {
  const user = randomUUID();
  const ids = { user, key: randomUUID(), token: randomUUID(), agent: randomUUID(), task: randomUUID() };
  const ids2 = { trigger: randomUUID(), credential: randomUUID(), call: randomUUID(), secret: randomUUID() };
  const run = (q: ReturnType<typeof sql>) => q.execute(db.kysely);
  const t = db.dialect === 'postgres' ? sql.lit(true) : sql.lit(1);
  await run(sql`insert into users (uuid, email, password_hash, email_verified, agents_enabled, token_version,
    created_at, updated_at) values (${user}, ${`${user}@example.test`}, '', ${t}, ${t}, 0, ${at}, ${at})`);
  await run(sql`insert into platform_keys (uuid, user_uuid, name, key_hash, prefix, created_at)
    values (${ids.key}, ${user}, 'ci', ${sha256Hex(`key-${user}`)}, 'sk_service_abcd', ${at})`);
  await run(sql`insert into ingest_tokens (uuid, user_uuid, token_hash, prefix, created_at)
    values (${ids.token}, ${user}, ${sha256Hex(`token-${user}`)}, 'abcd1234', ${at})`);
  await run(sql`insert into signing_secrets (uuid, user_uuid, secret_sealed, created_at)
    values (${ids2.secret}, ${user}, 'sealed', ${at})`);
  await run(sql`insert into agents (uuid, user_uuid, name, status, runtime, concurrency, default_timeout_seconds,
    created_at, updated_at) values (${ids.agent}, ${user}, 'reviewer', 'active', ${'{"type":"worker"}'}, 1, 60, ${at}, ${at})`);
  await run(sql`insert into tasks (uuid, agent_uuid, user_uuid, status, ready, priority, message, messages, metadata,
    callback_mode, timeout_seconds, attempt, estimated_start, created_at, updated_at, seq)
    values (${ids.task}, ${ids.agent}, ${user}, 'queued', ${t}, 0, 'hi', ${'[]'}, ${'{}'}, 'poll', 60, 0, ${at}, ${at}, ${at}, 1)`);
  await run(sql`insert into triggers (uuid, agent_uuid, user_uuid, name, message_template, enabled, secret_sealed,
    created_at, updated_at) values (${ids2.trigger}, ${ids.agent}, ${user}, 'gh', '{{body}}', ${t}, 'sealed', ${at}, ${at})`);
  await run(sql`insert into provider_credentials (uuid, user_uuid, name, provider, base_url, api_key_sealed,
    api_key_hint, created_at, updated_at) values (${ids2.credential}, ${user}, 'openai', 'openai',
    'http://127.0.0.1:1', 'sealed', '…abcd', ${at}, ${at})`);
  return { ...ids, ...ids2 };
}

describe.each(DATABASES)('the workspaces migration on $name', (database) => {
  const drops: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const drop of drops) await drop();
  });

  async function freshDb(): Promise<Db> {
    const own = await ownDatabase(database);
    const db = connectDb({
      databaseUrl: own.database.databaseUrl,
      sqliteFile: path.join(tempDir(), 'taskhook.sqlite'),
      sqliteSynchronous: 'normal',
      poolSize: 2,
    });
    drops.push(async () => {
      await db.close();
      await own.drop();
    });
    return db;
  }

  it('moves every resource into its owner personal workspace with ids unchanged, once', async () => {
    const db = await freshDb();
    await migrateToLatest(db, BEFORE);
    const ids = await fillPreviousSchema(db);
    expect(await migrateToLatest(db)).toContain('016-workspaces');
    // Idempotent: a second run has nothing left to do.
    expect(await migrateToLatest(db)).toEqual([]);

    const k = db.kysely;
    if (db.dialect === 'sqlite') {
      // The foreign keys were edited in place: the file must still be sound and consistent.
      expect((await sql<{ integrity_check: string }>`pragma integrity_check`.execute(k)).rows).toEqual([
        { integrity_check: 'ok' },
      ]);
      expect((await sql`pragma foreign_key_check`.execute(k)).rows).toEqual([]);
    }
    const workspace = await k
      .selectFrom('workspaces')
      .selectAll()
      .where('uuid', '=', ids.user)
      .executeTakeFirstOrThrow();
    expect({ name: workspace.name, personal: Boolean(workspace.personal), deleted: workspace.deleted_at }).toEqual({
      name: 'Personal',
      personal: true,
      deleted: null,
    });
    const members = await k
      .selectFrom('workspace_members')
      .selectAll()
      .where('workspace_uuid', '=', ids.user)
      .execute();
    expect(members.map((m) => ({ user: m.user_uuid, role: m.role }))).toEqual([{ user: ids.user, role: 'owner' }]);

    const key = await k.selectFrom('platform_keys').selectAll().where('uuid', '=', ids.key).executeTakeFirstOrThrow();
    expect({ ws: key.workspace_uuid, by: key.created_by, role: key.role, hash: key.key_hash }).toEqual({
      ws: ids.user,
      by: ids.user,
      role: 'admin',
      hash: sha256Hex(`key-${ids.user}`),
    });
    const token = await k
      .selectFrom('ingest_tokens')
      .selectAll()
      .where('uuid', '=', ids.token)
      .executeTakeFirstOrThrow();
    expect({ ws: token.workspace_uuid, by: token.created_by }).toEqual({ ws: ids.user, by: ids.user });
    for (const [table, uuid] of [
      ['agents', ids.agent],
      ['tasks', ids.task],
      ['provider_credentials', ids.credential],
      ['signing_secrets', ids.secret],
      ['triggers', ids.trigger],
    ] as const) {
      const row = await k.selectFrom(table).select('workspace_uuid').where('uuid', '=', uuid).executeTakeFirst();
      expect(row?.workspace_uuid, table).toBe(ids.user);
    }

    // The owner columns now reference workspaces: an agent of an unknown workspace is refused, and
    // deleting the workspace takes its agents and their tasks with it.
    await expect(
      sql`insert into agents (uuid, workspace_uuid, name, status, runtime, concurrency, default_timeout_seconds,
        created_at, updated_at) values (${randomUUID()}, ${randomUUID()}, 'x', 'active', ${'{"type":"worker"}'}, 1, 60, ${at}, ${at})`.execute(
        k,
      ),
    ).rejects.toThrow();
    await k.deleteFrom('workspaces').where('uuid', '=', ids.user).execute();
    expect(await k.selectFrom('agents').select('uuid').where('uuid', '=', ids.agent).execute()).toEqual([]);
    expect(await k.selectFrom('tasks').select('uuid').where('uuid', '=', ids.task).execute()).toEqual([]);
    // The user is still there: only the workspace went.
    expect(await k.selectFrom('users').select('uuid').where('uuid', '=', ids.user).execute()).toHaveLength(1);
  });
});
