import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHousekeepingModule } from '../../../src/modules/housekeeping/housekeeping-module.js';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES, ownDatabase } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';
import { claimOne, reportComplete, submitTask } from '../../helpers/tasks.js';
import { createTrigger, deliver } from '../../helpers/triggers.js';
import { captureLog, createWorkspace, invite, WORKSPACE_HEADER } from '../workspaces/workspace-helpers.js';

/** Tables no workspace owns: accounts, sign-in, settings, the schema's own bookkeeping. */
const GLOBAL = new Set([
  'users',
  'email_verifications',
  'password_resets',
  'oauth_attempts',
  'oauth_identities',
  'settings',
  'rate_limits',
  // MCP authorization: clients register without an account (RFC 7591) and a pending authorization
  // request names no workspace until it is consented to; both expire by themselves.
  'mcp_oauth_clients',
  'mcp_oauth_requests',
]);
const isGlobal = (table: string) => GLOBAL.has(table) || table.startsWith('kysely_');

interface Column {
  name: string;
  type: string;
  required: boolean;
}

describe.each(DATABASES)('a deleted workspace leaves nothing behind on $name', (shared) => {
  const clock = manualClock();
  let t: TestApp;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const own = await ownDatabase(shared);
    drop = own.drop;
    t = await buildTestApp(own.database, { clock });
  });
  afterAll(async () => {
    await t.close();
    await drop();
  });

  const ex = () => t.runtime.db.kysely;
  const postgres = () => t.runtime.db.dialect === 'postgres';

  async function tables(): Promise<string[]> {
    const rows = postgres()
      ? await sql<{ name: string }>`select table_name as name from information_schema.tables
          where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(ex())
      : await sql<{ name: string }>`select name from sqlite_master
          where type = 'table' and name not like 'sqlite_%'`.execute(ex());
    return rows.rows.map((r) => r.name).sort();
  }

  async function columns(table: string): Promise<Column[]> {
    if (postgres()) {
      const rows = await sql<{ name: string; type: string; nullable: string; dflt: string | null }>`
        select column_name as name, data_type as type, is_nullable as nullable, column_default as dflt
        from information_schema.columns where table_schema = current_schema() and table_name = ${table}`.execute(ex());
      return rows.rows.map((r) => ({ name: r.name, type: r.type, required: r.nullable === 'NO' && r.dflt === null }));
    }
    const rows = await sql<{ name: string; type: string; notnull: number; dflt_value: unknown; pk: number }>`
      select * from pragma_table_info(${table})`.execute(ex());
    return rows.rows.map((r) => ({
      name: r.name,
      type: r.type,
      required: (r.notnull === 1 || r.pk > 0) && r.dflt_value === null,
    }));
  }

  async function rowsOf(table: string): Promise<string[]> {
    const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(ex());
    return rows.rows.map((r) => JSON.stringify(r));
  }

  /** A row of `table` whose references name the workspace's objects; every other column filled. */
  async function fillRow(table: string, refs: Record<string, string>) {
    const values: Record<string, unknown> = {};
    for (const c of await columns(table)) {
      const ref = refs[c.name];
      if (ref !== undefined) values[c.name] = ref;
      else if (!c.required) continue;
      else if (/bool/i.test(c.type)) values[c.name] = postgres() ? true : 1;
      else if (/int|numeric/i.test(c.type)) values[c.name] = Math.floor(Math.random() * 1e9);
      else if (/json/i.test(c.type)) values[c.name] = '{}';
      else values[c.name] = `w-${randomUUID()}`;
    }
    await sql`insert into ${sql.table(table)} (${sql.join(Object.keys(values).map((k) => sql.ref(k)))})
      values (${sql.join(Object.values(values))})`.execute(ex());
  }

  it('removes every row it owned from every table, and every value naming its objects', async () => {
    const logged = captureLog(t);
    const owner = await createUser(t);
    const kept = await createUser(t);
    const ws = (await createWorkspace(t, owner, `walk ${randomUUID()}`)).uuid;
    const inWs = { authorization: `Bearer ${owner.token}`, [WORKSPACE_HEADER]: ws };
    const key = await call(t.app, 'POST', '/auth/platform_keys', { headers: inWs, body: { name: 'k' } });
    expect(key.statusCode, key.body).toBe(201);
    const member = { ...owner, key: key.json().key as string, keyUuid: key.json().uuid as string };

    // Through the API, what is simple to make there.
    const agent = await call(t.app, 'POST', '/agent', { headers: { 'x-api-key': member.key }, body: { name: 'a' } });
    expect(agent.statusCode, agent.body).toBe(201);
    const agentUuid = agent.json().uuid as string;
    await submitTask(t, member, agentUuid, {}, { 'idempotency-key': 'walk' });
    const claimed = await claimOne(t, member, agentUuid);
    expect((await reportComplete(t, member, agentUuid, claimed.task_id, claimed.lease_id)).statusCode).toBe(200);
    const open = await submitTask(t, member, agentUuid);
    const trigger = await createTrigger(t, member, agentUuid);
    expect((await deliver(t, trigger.uuid, { secret: trigger.webhook_secret, body: { a: 1 } })).statusCode).toBe(202);
    expect((await call(t.app, 'POST', '/auth/generate_ingest_token', { headers: inWs })).statusCode).toBe(201);
    expect((await call(t.app, 'POST', '/auth/webhook_signing_secret/rotate', { headers: inWs })).statusCode).toBe(200);
    await invite(t, logged, ws, owner, `${randomUUID()}@example.com`, 'member');

    // Every other table it can own gets a row naming its objects: schedules and their runs,
    // budgets and spend, routes, calls, telemetry, A2A and MCP rows, callbacks, push runs…
    const scheduleUuid = randomUUID();
    const grantUuid = randomUUID();
    const routeName = `route-${randomUUID()}`;
    const refs: Record<string, string> = {
      workspace_uuid: ws,
      agent_uuid: agentUuid,
      task_uuid: open.task_id,
      trigger_uuid: trigger.uuid,
      user_uuid: owner.uuid,
      created_by: owner.uuid,
      invited_by: owner.uuid,
      schedule_uuid: scheduleUuid,
      scope_id: agentUuid,
      route_name: routeName,
      grant_uuid: grantUuid,
    };
    await fillRow('schedules', { ...refs, uuid: scheduleUuid });
    await fillRow('mcp_oauth_grants', { ...refs, uuid: grantUuid });
    const ownable = (await tables()).filter((name) => !isGlobal(name));
    const naming = (rows: string[], ids: string[]) => rows.filter((r) => ids.some((id) => r.includes(id)));
    for (const table of ownable) {
      if (naming(await rowsOf(table), [ws, agentUuid, open.task_id]).length > 0) continue;
      await fillRow(table, table === 'spotlight_routes' ? { ...refs, name: routeName } : refs);
    }
    // Every uuid of the workspace's objects, as stored.
    const ids = [ws, scheduleUuid, routeName, grantUuid];
    for (const table of ['agents', 'tasks', 'triggers', 'schedules', 'platform_keys', 'ingest_tokens']) {
      const rows = await sql<{
        uuid: string;
      }>`select uuid from ${sql.table(table)} where workspace_uuid = ${ws}`.execute(ex());
      ids.push(...rows.rows.map((r) => r.uuid));
    }
    for (const table of ['provider_credentials', 'spotlight_routes', 'signing_secrets', 'invitations']) {
      const rows = await sql<{
        uuid: string;
      }>`select uuid from ${sql.table(table)} where workspace_uuid = ${ws}`.execute(ex());
      ids.push(...rows.rows.map((r) => r.uuid));
    }
    for (const table of ownable) expect(naming(await rowsOf(table), ids).length, table).toBeGreaterThan(0);
    const before: Record<string, string[]> = {};
    for (const table of await tables()) before[table] = naming(await rowsOf(table), [kept.uuid]);

    const deleted = await call(t.app, 'DELETE', `/workspaces/${ws}`, { token: owner.token });
    expect(deleted.statusCode, deleted.body).toBe(204);
    const housekeeping = createHousekeepingModule({ config: t.config, runtime: t.runtime, batchSize: 2 });
    let purged = 0;
    for (let round = 0; round < 20 && purged === 0; round++) purged = (await housekeeping.runOnce()).workspacesPurged;
    expect(purged).toBe(1);

    const left: string[] = [];
    for (const table of await tables()) {
      for (const row of naming(await rowsOf(table), ids)) {
        // The deleting owner's audit entry stays (in their personal workspace); a trigger's own
        // request window expires by itself.
        if (table === 'audit_log' && row.includes('"workspace.delete"') && !row.includes(`"workspace_uuid":"${ws}"`)) {
          continue;
        }
        if (table === 'rate_limits' && row.includes('"trigger:')) continue;
        left.push(`${table}: ${row.slice(0, 200)}`);
      }
    }
    expect(left).toEqual([]);
    // Another user's rows are untouched.
    for (const table of await tables()) expect(naming(await rowsOf(table), [kept.uuid]), table).toEqual(before[table]);
  });
});
