import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { iso } from '../../../src/lib/time.js';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES, POSTGRES_ONLY, POSTGRES_URL } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { sqlitePlans } from '../../helpers/query-plans.js';
import { claimOne, claimTasks, getTask, submitTask, within, workerHeaders } from '../../helpers/tasks.js';

const DAY_S = 86_400;

function submitRaw(t: TestApp, user: TestUser, agent: string, body: Record<string, unknown>, headers = {}) {
  return call(t.app, 'POST', `/agent/request/${agent}`, {
    headers: { ...workerHeaders(user), ...headers },
    body: { message: 'later', ...body },
  });
}

describe.each(DATABASES)('delayed start on $name', (database) => {
  let t: TestApp;
  let clock: ReturnType<typeof manualClock>;

  beforeAll(async () => {
    clock = manualClock();
    t = await buildTestApp(database, { clock });
  });
  afterAll(() => t.close());

  it.each([
    [{ run_at: '2026-11-22T10:00:00Z', delay_seconds: 5 }, 'run_at'],
    [{ run_at: '2026-11-22 10:00:00Z' }, 'run_at'],
    [{ run_at: '2026-11-22T10:00:00' }, 'run_at'],
    [{ run_at: 'tomorrow' }, 'run_at'],
    [{ run_at: '2026-13-22T10:00:00Z' }, 'run_at'],
    [{ run_at: 1764669600 }, 'run_at'],
    [{ delay_seconds: 1.5 }, 'delay_seconds'],
    [{ delay_seconds: -1 }, 'delay_seconds'],
    [{ delay_seconds: 30 * DAY_S + 1 }, 'delay_seconds'],
    [{ delay_seconds: '60' }, 'delay_seconds'],
  ])('refuses %j with 400 naming %s, creating nothing', async (body, field) => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const res = await submitRaw(t, user, agent, body);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field } });
    const list = await call(t.app, 'GET', `/agent/${agent}/tasks`, { headers: workerHeaders(user) });
    expect(list.json().tasks).toEqual([]);
  });

  it('run_at at most 30 days ahead; a past run_at means now; offsets are read as instants', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const now = clock.now();
    const tooFar = await submitRaw(t, user, agent, { run_at: iso(now + (30 * DAY_S + 1) * 1000) });
    expect(tooFar.json().error.details.field).toBe('run_at');
    const farthest = await submitTask(t, user, agent, { run_at: iso(now + 30 * DAY_S * 1000) });
    expect((await getTask(t, user, agent, farthest.task_id)).available_at).toBe(iso(now + 30 * DAY_S * 1000));
    const past = await submitTask(t, user, agent, { run_at: '2020-01-01T00:00:00Z' });
    expect((await getTask(t, user, agent, past.task_id)).available_at).toBe(past.created_at);
    // One hour ahead, written in +01:00 with a quarter of a millisecond cut away.
    const at = new Date(now + 3_600_000);
    const local = new Date(at.getTime() + 3_600_000).toISOString().replace('Z', '');
    const withOffset = await submitTask(t, user, agent, { run_at: `${local.slice(0, 23)}25+01:00` });
    const view = await getTask(t, user, agent, withOffset.task_id);
    expect(view.available_at).toBe(iso(Math.floor(at.getTime())));
    expect(withOffset.estimated_start >= (view.available_at as string)).toBe(true);
    expect(view.estimated_start).toBe(withOffset.estimated_start);
  });

  it('a delayed task is never handed out before available_at, and others pass it meanwhile', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const delayed = await submitTask(t, user, agent, { delay_seconds: 60, priority: 10 });
    const view = await getTask(t, user, agent, delayed.task_id);
    expect(view).toMatchObject({
      status: 'queued',
      attempt: 1,
      available_at: iso(Date.parse(delayed.created_at) + 60_000),
    });
    const plain = await submitTask(t, user, agent, { priority: 1 });
    // The urgent delayed task waits; the ready one goes first.
    expect((await claimOne(t, user, agent)).task_id).toBe(plain.task_id);
    clock.advance(59_999);
    expect(await claimTasks(t, user, agent, { wait_seconds: 0 })).toEqual([]);
    // Cancellable and listed as queued while it waits.
    const listed = await call(t.app, 'GET', `/agent/${agent}/tasks?status=queued`, { headers: workerHeaders(user) });
    expect(listed.json().tasks.map((x: { task_id: string }) => x.task_id)).toEqual([delayed.task_id]);
    clock.advance(1);
    const claimed = await claimOne(t, user, agent, { lease_seconds: 30 });
    expect(claimed.task_id).toBe(delayed.task_id);
    expect(Date.parse(claimed.lease_expires_at) - 30_000).toBeGreaterThanOrEqual(
      Date.parse(view.available_at as string),
    );
    const running = await getTask(t, user, agent, delayed.task_id);
    expect(running).toMatchObject({ status: 'running', available_at: null });
    expect((running.started_at as string) >= (view.available_at as string)).toBe(true);
    // Its timeout clock starts when it starts.
    expect(claimed.timeout_at).toBe(iso(Date.parse(running.started_at as string) + 3_600_000));
  });

  it('a delayed task does not count against concurrency while it waits', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user, { concurrency: 1 })).uuid;
    await submitTask(t, user, agent, { delay_seconds: 600 });
    const ready = await submitTask(t, user, agent);
    expect((await claimOne(t, user, agent)).task_id).toBe(ready.task_id);
  });

  it('run_at and delay_seconds are part of the body an Idempotency-Key compares', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const key = { 'idempotency-key': `delay-${crypto.randomUUID()}` };
    const first = await submitRaw(t, user, agent, { delay_seconds: 10 }, key);
    expect(first.statusCode).toBe(202);
    const again = await submitRaw(t, user, agent, { delay_seconds: 10 }, key);
    expect(again.json().task_id).toBe(first.json().task_id);
    const other = await submitRaw(t, user, agent, { delay_seconds: 20 }, key);
    expect(other.statusCode).toBe(422);
    expect(other.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
  });
});

describe.each(DATABASES.slice(0, 1))('the claim with available_at ($name plans)', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  it('the claim and the look for the next available task read the claim index, available_at inside it', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    await submitTask(t, user, agent, { delay_seconds: 600 });
    const plans = await sqlitePlans(t, /from "tasks".*available_at/i, () => claimTasks(t, user, agent));
    expect(plans).toHaveLength(2);
    for (const plan of plans) {
      expect(plan.steps.join('\n')).toMatch(/SEARCH tasks USING (COVERING )?INDEX tasks_claim_idx \(agent_uuid=\?\)/);
    }
  });
});

describe.each(DATABASES)('a waiting claim and a delayed task ($name, real clock)', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  it('a long-poll claim waiting when available_at passes receives the task (it does not sleep through its wait)', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id } = await submitTask(t, user, agent, { delay_seconds: 1 });
    const { available_at } = await getTask(t, user, agent, task_id);
    // Without a wake-up at available_at the claim would answer [] after its whole 25 s wait.
    const claimed = await within(claimTasks(t, user, agent, { wait_seconds: 25, lease_seconds: 60 }), 20_000, 'claim');
    expect(claimed.map((x) => x.task_id)).toEqual([task_id]);
    expect(Date.parse(claimed[0]?.lease_expires_at as string) - 60_000).toBeGreaterThanOrEqual(
      Date.parse(available_at as string),
    );
  });
});

describe.runIf(POSTGRES_URL).each(POSTGRES_ONLY)('delayed start across two instances ($name)', (database) => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await buildTestApp(database);
    b = await buildTestApp(database);
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  it('a claim waiting on one instance gets a task delayed on the other once it is available, exactly once', async () => {
    const user = await createUser(a);
    const agent = (await createAgent(a, user)).uuid;
    const waiting = claimTasks(b, user, agent, { wait_seconds: 25, lease_seconds: 60 });
    const { task_id, created_at } = await submitTask(a, user, agent, { delay_seconds: 1 });
    const claimed = await within(waiting, 20_000, 'claim on the other instance');
    expect(claimed.map((x) => x.task_id)).toEqual([task_id]);
    expect(Date.parse(claimed[0]?.lease_expires_at as string) - 60_000).toBeGreaterThanOrEqual(
      Date.parse(created_at) + 1000,
    );
    expect(await claimTasks(a, user, agent)).toEqual([]);
  });
});
