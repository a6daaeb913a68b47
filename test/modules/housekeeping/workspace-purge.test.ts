import { createHmac, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKSPACE_OWNED_TABLES } from '../../../src/db/migrations/016-workspaces.js';
import { iso } from '../../../src/lib/time.js';
import { createHousekeepingModule } from '../../../src/modules/housekeeping/housekeeping-module.js';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES, ownDatabase } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { claimOne, reportComplete, submitTask } from '../../helpers/tasks.js';
import { createTrigger, deliver } from '../../helpers/triggers.js';

const DAY = 86_400_000;
const BATCH = 3;

describe.each(DATABASES)('purge of deleted workspaces on $name', (shared) => {
  const clock = manualClock();
  let t: TestApp;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    // Housekeeping deletes across the whole database: storage of its own keeps other files' rows safe.
    const own = await ownDatabase(shared);
    drop = own.drop;
    t = await buildTestApp(own.database, { clock });
  });
  afterAll(async () => {
    await t.close();
    await drop();
  });

  /** Rows of every kind that belong to the workspace (children counted through their parents). */
  async function rowsOf(workspaceUuid: string): Promise<Record<string, number>> {
    const ex = t.runtime.db.kysely;
    const count = async (query: ReturnType<typeof sql<{ n: number | string }>>) =>
      Number((await query.execute(ex)).rows[0]?.n ?? 0);
    const counts: Record<string, number> = {};
    for (const table of [...WORKSPACE_OWNED_TABLES, 'audit_log']) {
      counts[table] = await count(
        sql`select count(*) as n from ${sql.table(table)} where workspace_uuid = ${workspaceUuid}`,
      );
    }
    counts.task_events = await count(sql`select count(*) as n from task_events e join tasks k on k.uuid = e.task_uuid
      where k.workspace_uuid = ${workspaceUuid}`);
    counts.trigger_deliveries = await count(sql`select count(*) as n from trigger_deliveries d
      join triggers g on g.uuid = d.trigger_uuid where g.workspace_uuid = ${workspaceUuid}`);
    counts.trigger_signatures = await count(
      sql`select count(*) as n from trigger_signatures where workspace_uuid = ${workspaceUuid}`,
    );
    counts.workspace_members = await count(
      sql`select count(*) as n from workspace_members where workspace_uuid = ${workspaceUuid}`,
    );
    counts.workspaces = await count(sql`select count(*) as n from workspaces where uuid = ${workspaceUuid}`);
    return counts;
  }

  /** Agents, tasks (finished and open, one idempotent), a trigger with deliveries, credentials: through the API. */
  async function fill(who: TestUser, session: Record<string, string>) {
    const key = { 'x-api-key': who.key };
    for (let a = 0; a < 2; a++) {
      const agent = await call(t.app, 'POST', '/agent', { headers: key, body: { name: `agent ${a}` } });
      expect(agent.statusCode, agent.body).toBe(201);
      const agentUuid = agent.json().uuid as string;
      for (let i = 0; i < 3; i++) await submitTask(t, who, agentUuid, {}, { 'idempotency-key': `k-${a}-${i}` });
      for (let i = 0; i < 2; i++) {
        const claimed = await claimOne(t, who, agentUuid);
        expect((await reportComplete(t, who, agentUuid, claimed.task_id, claimed.lease_id)).statusCode).toBe(200);
      }
      const trigger = await createTrigger(t, who, agentUuid);
      for (let i = 0; i < 4; i++) {
        const res = await deliver(t, trigger.uuid, {
          secret: trigger.webhook_secret,
          body: { repository: { name: 'r' } },
        });
        expect(res.statusCode).toBe(202);
      }
      // A signed (github) delivery leaves its signature behind.
      const github = await createTrigger(t, who, agentUuid, { verification: { type: 'github', secret: 'gh' } });
      const signed = JSON.stringify({ a, at: randomUUID() });
      const signature = `sha256=${createHmac('sha256', 'gh').update(signed).digest('hex')}`;
      const res = await deliver(t, github.uuid, { body: signed, headers: { 'x-hub-signature-256': signature } });
      expect(res.statusCode, res.body).toBe(202);
    }
    for (let i = 0; i < 2; i++) {
      const res = await call(t.app, 'POST', '/user/provider_credentials', {
        headers: session,
        body: {
          name: `p${i}`,
          provider: 'openai',
          api_key: `sk-${randomUUID()}`,
          base_url: 'https://93.184.216.34/v1',
        },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    expect((await call(t.app, 'POST', '/auth/generate_ingest_token', { headers: session })).statusCode).toBe(201);
    expect((await call(t.app, 'POST', '/auth/webhook_signing_secret/rotate', { headers: session })).statusCode).toBe(
      200,
    );
  }

  it('deletes every row of a deleted workspace, in several short passes, and nothing of another', async () => {
    const owner = await createUser(t);
    const team = randomUUID();
    const now = iso(clock.now());
    await t.runtime.db.kysely
      .insertInto('workspaces')
      .values({ uuid: team, name: 'Team', personal: 0, created_at: now, updated_at: now, deleted_at: null })
      .execute();
    await t.runtime.db.kysely
      .insertInto('workspace_members')
      .values({ workspace_uuid: team, user_uuid: owner.uuid, role: 'owner', joined_at: now })
      .execute();
    const inTeam = { authorization: `Bearer ${owner.token}`, 'x-taskhook-workspace': team };
    const teamKey = await call(t.app, 'POST', '/auth/platform_keys', { headers: inTeam, body: { name: 'team key' } });
    expect(teamKey.statusCode, teamKey.body).toBe(201);
    const member = { ...owner, key: teamKey.json().key, keyUuid: teamKey.json().uuid };
    await fill(member, inTeam);
    await fill(owner, { authorization: `Bearer ${owner.token}` });

    const kept = await rowsOf(owner.uuid);
    const doomed = await rowsOf(team);
    for (const kind of ['tasks', 'task_events', 'trigger_deliveries', 'audit_log', 'telemetry_spans']) {
      expect(doomed[kind], kind).toBeGreaterThan(BATCH);
    }
    for (const kind of [
      'agents',
      'idempotency_keys',
      'provider_credentials',
      'platform_keys',
      'ingest_tokens',
      'trigger_signatures',
    ]) {
      expect(doomed[kind], kind).toBeGreaterThan(0);
    }

    await t.runtime.db.kysely.updateTable('workspaces').set({ deleted_at: now }).where('uuid', '=', team).execute();
    const housekeeping = createHousekeepingModule({
      config: t.config,
      runtime: t.runtime,
      batchSize: BATCH,
      maxBatches: 1,
    });
    let rounds = 0;
    let deleted = 0;
    for (;;) {
      const result = await housekeeping.runOnce();
      rounds++;
      deleted += result.deletedWorkspaceRows;
      expect(result.deletedWorkspaceRows).toBeLessThanOrEqual(BATCH * 16); // one short batch per kind at most
      if (result.workspacesPurged === 1) break;
      expect(rounds).toBeLessThan(100);
      expect((await rowsOf(team)).workspaces).toBe(1); // its row goes last
    }
    expect(rounds).toBeGreaterThan(1);
    expect(deleted).toBeGreaterThan(BATCH);
    expect(Object.values(await rowsOf(team)).every((n) => n === 0)).toBe(true);
    expect(await rowsOf(owner.uuid)).toEqual(kept);
    expect((await housekeeping.runOnce()).deletedWorkspaceRows).toBe(0);
  });

  it('deletes audit entries past TASKHOOK_AUDIT_RETENTION_DAYS', async () => {
    const user = await createUser(t);
    expect((await rowsOf(user.uuid)).audit_log).toBe(1);
    clock.advance(t.config.auditRetentionDays * DAY - DAY);
    expect((await t.app.background.housekeep()).auditLog).toBe(0);
    clock.advance(2 * DAY);
    expect((await t.app.background.housekeep()).auditLog).toBeGreaterThanOrEqual(1);
    expect((await rowsOf(user.uuid)).audit_log).toBe(0);
  });
});
