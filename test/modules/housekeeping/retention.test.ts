import { createHmac } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOUSEKEEPING_BATCH, HOUSEKEEPING_LOCK_KEY } from '../../../src/modules/housekeeping/housekeeping-module.js';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES, ownDatabase, POSTGRES_URL } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { sqlitePlans } from '../../helpers/query-plans.js';
import { claimOne, reportComplete, submitTask, workerHeaders } from '../../helpers/tasks.js';
import { createTrigger, deliver } from '../../helpers/triggers.js';

const DAY = 86_400_000;

describe.each(DATABASES)('retention on $name', (shared) => {
  const clock = manualClock(Date.parse('2026-01-01T00:00:00.000Z'));
  let t: TestApp;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    // Housekeeping deletes across the whole database: storage of its own keeps other files' rows safe.
    const own = await ownDatabase(shared);
    drop = own.drop;
    t = await buildTestApp(own.database, {
      clock,
      config: { retentionDays: 30, sweepIntervalMs: 3_600_000, housekeepingIntervalMs: 3_600_000 },
    });
  });
  afterAll(async () => {
    await t.close();
    await drop();
  });

  async function finishedTask(user: TestUser, agentUuid: string): Promise<string> {
    const submitted = await submitTask(t, user, agentUuid);
    const claimed = await claimOne(t, user, agentUuid);
    expect(claimed.task_id).toBe(submitted.task_id);
    const done = await reportComplete(t, user, agentUuid, claimed.task_id, claimed.lease_id);
    expect(done.statusCode).toBe(200);
    return submitted.task_id;
  }

  const status = async (user: TestUser, agentUuid: string, taskId: string) =>
    (await call(t.app, 'GET', `/agent/${agentUuid}/task/${taskId}`, { headers: workerHeaders(user) })).statusCode;

  it('deletes what is past its time and nothing else', async () => {
    const user = await createUser(t);
    const agent = await createAgent(t, user);
    const idle = await createAgent(t, user); // its tasks stay queued: nobody claims them
    const trigger = await createTrigger(t, user, idle.uuid);

    // Day 0: a task that finishes, one that stays open, a delivery, an idempotent submit.
    const oldDone = await finishedTask(user, agent.uuid);
    const stillOpen = (await submitTask(t, user, idle.uuid)).task_id;
    expect((await deliver(t, trigger.uuid, { secret: trigger.webhook_secret, body: { a: 1 } })).statusCode).toBe(202);
    const keyed = await submitTask(t, user, idle.uuid, {}, { 'idempotency-key': 'k-old' });

    // Day 29: a task that finishes later; nothing is old enough yet.
    clock.advance(29 * DAY);
    const recentDone = await finishedTask(user, agent.uuid);
    // A signed (github) delivery: its signature is remembered for 24 hours.
    const github = await createTrigger(t, user, idle.uuid, { verification: { type: 'github', secret: 'gh' } });
    const signed = JSON.stringify({ b: 2 });
    const signature = `sha256=${createHmac('sha256', 'gh').update(signed).digest('hex')}`;
    const res = await deliver(t, github.uuid, { body: signed, headers: { 'x-hub-signature-256': signature } });
    expect(res.statusCode, res.body).toBe(202);
    const early = await t.app.background.housekeep();
    expect(early).toMatchObject({ tasks: 0, triggerDeliveries: 0, triggerSignatures: 0, ran: true });
    expect(early.idempotencyKeys).toBe(1); // 24 hours passed long ago

    // Day 31: only the day-0 finished task and delivery are past 30 days.
    clock.advance(2 * DAY);
    expect(await t.app.background.housekeep()).toEqual({
      tasks: 1,
      triggerDeliveries: 1,
      triggerSignatures: 1, // the day-29 GitHub signature, past its 24 hours
      idempotencyKeys: 0,
      a2aMessageIds: 0,
      mcpOAuthClients: 0,
      mcpOAuthExpired: 0,
      telemetrySpans: 3, // the service's own spans of day 0, past the 30 days of telemetry
      telemetryLogs: 0,
      spotlightCalls: 0,
      spotlightSpend: 0,
      auditLog: 0,
      unverifiedAccounts: 0,
      deletedWorkspaceRows: 0,
      workspacesPurged: 0,
      ran: true,
    });
    expect(await status(user, agent.uuid, oldDone)).toBe(404);
    expect(await status(user, idle.uuid, stillOpen)).toBe(200);
    expect(await status(user, idle.uuid, keyed.task_id)).toBe(200);
    expect(await status(user, agent.uuid, recentDone)).toBe(200);
    const deliveries = await call(t.app, 'GET', `/v1/agent/${idle.uuid}/triggers/${trigger.uuid}/deliveries`, {
      headers: workerHeaders(user),
    });
    expect(deliveries.json().deliveries).toEqual([]);

    // The key expired, so the same key now makes a new task.
    const again = await submitTask(t, user, idle.uuid, {}, { 'idempotency-key': 'k-old' });
    expect(again.task_id).not.toBe(keyed.task_id);
    expect(await t.app.background.housekeep()).toEqual({
      tasks: 0,
      triggerDeliveries: 0,
      triggerSignatures: 0,
      idempotencyKeys: 0,
      a2aMessageIds: 0,
      mcpOAuthClients: 0,
      mcpOAuthExpired: 0,
      telemetrySpans: 0,
      telemetryLogs: 0,
      spotlightCalls: 0,
      spotlightSpend: 0,
      auditLog: 0,
      unverifiedAccounts: 0,
      deletedWorkspaceRows: 0,
      workspacesPurged: 0,
      ran: true,
    });
  });

  it('works through more than one batch', async () => {
    const user = await createUser(t);
    const agent = await createAgent(t, user);
    const ids: string[] = [];
    const count = HOUSEKEEPING_BATCH + 5;
    for (let i = 0; i < count; i++) {
      const { task_id } = await submitTask(t, user, agent.uuid);
      ids.push(task_id);
      expect(
        (await call(t.app, 'POST', `/agent/${agent.uuid}/task/${task_id}/cancel`, { token: user.token })).statusCode,
      ).toBe(200);
    }
    clock.advance(31 * DAY);
    // At least these (the previous test's finished tasks are old by now too).
    expect((await t.app.background.housekeep()).tasks).toBeGreaterThanOrEqual(count);
    for (const id of ids) expect(await status(user, agent.uuid, id)).toBe(404);
  });

  // Bound statuses kept SQLite off the partial index: every pass read every task ever stored.
  it.runIf(shared.name === 'sqlite')('finds finished tasks through their partial index (query plan)', async () => {
    const plans = await sqlitePlans(t, /^delete from "tasks"/, () => t.app.background.housekeep());
    const steps = plans.flatMap((p) => p.steps).filter((step) => /^(SEARCH|SCAN) tasks\b/.test(step));
    expect(steps).toContainEqual(
      expect.stringMatching(/^SEARCH tasks USING INDEX tasks_finished_idx \(updated_at<\?\)/),
    );
    expect(steps.filter((step) => step.startsWith('SCAN'))).toEqual([]);
  });
});

describe.runIf(POSTGRES_URL)('housekeeping on PostgreSQL takes turns', () => {
  it('does nothing while another instance holds the lock, and runs once it is free', async () => {
    const t = await buildTestApp(
      { name: 'postgres', databaseUrl: POSTGRES_URL },
      { config: { housekeepingIntervalMs: 3_600_000 } },
    );
    const other = new pg.Client({ connectionString: POSTGRES_URL });
    await other.connect();
    try {
      await other.query('begin');
      await other.query('select pg_advisory_xact_lock($1)', [HOUSEKEEPING_LOCK_KEY]);
      expect(await t.app.background.housekeep()).toMatchObject({ ran: false, tasks: 0 });
      await other.query('commit');
      expect((await t.app.background.housekeep()).ran).toBe(true);
    } finally {
      await other.end();
      await t.close();
    }
  });
});
