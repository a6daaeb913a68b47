import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, manualTimers, type TestApp } from '../../helpers/app.js';
import { DATABASES, ownDatabase, type TestDatabase } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { claimOne, reportComplete } from '../../helpers/tasks.js';

const START = Date.parse('2026-06-01T00:00:30.000Z');

describe.each(DATABASES)('schedules on $name', (shared) => {
  const clock = manualClock(START);
  let t: TestApp;
  let database: TestDatabase;
  let drop: () => Promise<void>;
  let user: TestUser;

  beforeAll(async () => {
    // The clock fires every due schedule of its database: storage of its own keeps this file's apart.
    const own = await ownDatabase(shared);
    database = own.database;
    drop = own.drop;
    t = await buildTestApp(database, { clock, timers: manualTimers() });
    user = await createUser(t);
  });
  afterAll(async () => {
    await t.close();
    await drop();
  });

  /** Moves the clock, and signs in again (a session expires when days pass). */
  async function setClock(iso: string) {
    clock.set(Date.parse(iso));
    const login = await call(t.app, 'POST', '/auth/login', { body: { email: user.email, password: user.password } });
    user.token = login.json().token;
  }
  const base = (agent: string) => `/v1/agent/${agent}/schedules`;
  async function createSchedule(agent: string, body: Record<string, unknown>) {
    const res = await call(t.app, 'POST', base(agent), {
      token: user.token,
      body: { name: 'nightly', cron: '0 3 * * *', message: 'Run at {{ schedule.local_time }}', ...body },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  }
  const runs = async (agent: string, uuid: string) =>
    (await call(t.app, 'GET', `${base(agent)}/${uuid}/runs`, { token: user.token })).json().runs;
  const task = async (agent: string, id: string) =>
    (await call(t.app, 'GET', `/agent/${agent}/task/${id}`, { token: user.token })).json();

  it('creates, reads, lists, patches and deletes, with next_run_at', async () => {
    const agent = await createAgent(t, user);
    const s = await createSchedule(agent.uuid, { timezone: 'Europe/Berlin', metadata: { team: 'ops' } });
    expect(s).toMatchObject({
      agent_uuid: agent.uuid,
      cron: '0 3 * * *',
      timezone: 'Europe/Berlin',
      priority: 5,
      concurrency_key: null,
      enabled: true,
      overlap: 'allow',
      catch_up_seconds: 0,
      next_run_at: '2026-06-01T01:00:00.000Z',
    });
    const got = await call(t.app, 'GET', `${base(agent.uuid)}/${s.uuid}`, { token: user.token });
    expect(got.json()).toEqual(s);
    const list = await call(t.app, 'GET', base(agent.uuid), { token: user.token });
    expect(list.json().schedules.map((x: { uuid: string }) => x.uuid)).toEqual([s.uuid]);

    const off = await call(t.app, 'PATCH', `${base(agent.uuid)}/${s.uuid}`, {
      token: user.token,
      body: { enabled: false },
    });
    expect(off.json().next_run_at).toBeNull();
    const on = await call(t.app, 'PATCH', `${base(agent.uuid)}/${s.uuid}`, {
      token: user.token,
      body: { enabled: true, cron: '@hourly', concurrency_key: 'repo-1' },
    });
    expect(on.json()).toMatchObject({
      next_run_at: '2026-06-01T01:00:00.000Z',
      cron: '@hourly',
      concurrency_key: 'repo-1',
    });
    const empty = await call(t.app, 'PATCH', `${base(agent.uuid)}/${s.uuid}`, { token: user.token, body: {} });
    expect(empty.statusCode).toBe(200);

    const gone = await call(t.app, 'DELETE', `${base(agent.uuid)}/${s.uuid}`, { token: user.token });
    expect(gone.statusCode).toBe(204);
    expect((await call(t.app, 'GET', `${base(agent.uuid)}/${s.uuid}`, { token: user.token })).statusCode).toBe(404);

    const audit = await t.runtime.db.kysely
      .selectFrom('audit_log')
      .select(['action', 'details'])
      .where('target_uuid', '=', s.uuid)
      .orderBy('at')
      .orderBy('id')
      .execute();
    expect(audit.map((e) => e.action)).toEqual([
      'schedule.create',
      'schedule.update',
      'schedule.update',
      'schedule.update',
      'schedule.delete',
    ]);
    const details = audit.map((e) => (typeof e.details === 'string' ? JSON.parse(e.details) : e.details));
    expect(details[0]).toEqual({ agent_uuid: agent.uuid, name: 'nightly' });
    expect(details[2]).toEqual({ agent_uuid: agent.uuid, fields: ['concurrency_key', 'cron', 'enabled'] });
  });

  it('refuses bad input with the field named', async () => {
    const agent = await createAgent(t, user);
    const refused: Array<[Record<string, unknown>, string]> = [
      [{ cron: '0 0 L * *' }, 'cron'],
      [{ cron: '*/30 * * * * *' }, 'cron'],
      [{ cron: '0 0 30 2 *' }, 'cron'],
      [{ timezone: '+02:00' }, 'timezone'],
      [{ timezone: 'CEST' }, 'timezone'],
      [{ message: 'hi {{payload}}' }, 'message'],
      [{ message: 'hi {{schedule.name' }, 'message'],
      [{ overlap: 'never' }, 'overlap'],
      [{ catch_up_seconds: -1 }, 'catch_up_seconds'],
      [{ metadata: { big: 'x'.repeat(17_000) } }, 'metadata'],
    ];
    for (const [body, field] of refused) {
      const res = await call(t.app, 'POST', base(agent.uuid), {
        token: user.token,
        body: { name: 'n', cron: '@daily', message: 'm', ...body },
      });
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.details.field, JSON.stringify(body)).toBe(field);
    }
    expect((await call(t.app, 'GET', base(agent.uuid), { token: user.token })).json().schedules).toEqual([]);
  });

  it('previews occurrences as the clock fires them', async () => {
    const agent = await createAgent(t, user);
    const res = await call(t.app, 'POST', `${base(agent.uuid)}/preview`, {
      token: user.token,
      body: { cron: '30 2 * * *', timezone: 'Europe/Berlin', from: '2026-03-28T12:00:00Z', count: 2 },
    });
    expect(res.json()).toEqual({
      occurrences: [
        { scheduled_for: '2026-03-29T01:00:00.000Z', local: '2026-03-29T03:00:00+02:00' },
        { scheduled_for: '2026-03-30T00:30:00.000Z', local: '2026-03-30T02:30:00+02:00' },
      ],
    });
    const bad = await call(t.app, 'POST', `${base(agent.uuid)}/preview`, {
      token: user.token,
      body: { cron: '@daily', from: 'yesterday' },
    });
    expect(bad.json().error.details.field).toBe('from');
  });

  it('runs now, logs the run, and refuses an overlap or a paused agent', async () => {
    const agent = await createAgent(t, user);
    const s = await createSchedule(agent.uuid, { overlap: 'skip', enabled: false, metadata: { run_id: 'mine' } });
    const first = await call(t.app, 'POST', `${base(agent.uuid)}/${s.uuid}/run`, { token: user.token });
    expect(first.statusCode, first.body).toBe(202);
    const accepted = first.json();
    expect(accepted).toMatchObject({
      status: 'queued',
      schedule_uuid: s.uuid,
      scheduled_for: new Date(clock.now()).toISOString(),
    });
    const created = await task(agent.uuid, accepted.task_id);
    expect(created.message).toBe(`Run at ${new Date(clock.now()).toISOString().slice(0, 19)}+00:00`);
    expect(created.metadata).toEqual({
      schedule_uuid: s.uuid,
      scheduled_for: accepted.scheduled_for,
      run_id: accepted.run_id,
    });

    const overlap = await call(t.app, 'POST', `${base(agent.uuid)}/${s.uuid}/run`, { token: user.token });
    expect(overlap.statusCode).toBe(409);
    const claimed = await claimOne(t, user, agent.uuid);
    await reportComplete(t, user, agent.uuid, claimed.task_id, claimed.lease_id);
    await call(t.app, 'PATCH', `/agent/${agent.uuid}`, { token: user.token, body: { status: 'paused' } });
    const paused = await call(t.app, 'POST', `${base(agent.uuid)}/${s.uuid}/run`, { token: user.token });
    expect(paused.statusCode).toBe(503);

    const log = await runs(agent.uuid, s.uuid);
    expect(log.map((r: { skipped_reason: string | null; manual: boolean }) => [r.skipped_reason, r.manual])).toEqual([
      ['agent_unavailable', true],
      ['overlap', true],
      [null, true],
    ]);
    expect(log[2].task_id).toBe(accepted.task_id);
    const again = (await call(t.app, 'GET', `${base(agent.uuid)}/${s.uuid}`, { token: user.token })).json();
    expect(again.next_run_at).toBeNull();
  });

  it('gives the tasks it creates its concurrency_key', async () => {
    const agent = await createAgent(t, user);
    const keyed = await createSchedule(agent.uuid, { enabled: false, concurrency_key: 'repo-7' });
    const keyless = await createSchedule(agent.uuid, { enabled: false });
    for (const [s, key] of [
      [keyed, 'repo-7'],
      [keyless, null],
    ] as const) {
      const res = await call(t.app, 'POST', `${base(agent.uuid)}/${s.uuid}/run`, { token: user.token });
      expect(res.statusCode, res.body).toBe(202);
      expect((await task(agent.uuid, res.json().task_id)).concurrency_key).toBe(key);
    }
  });

  it('fires each occurrence once when due, skips overlaps, drops missed ones', async () => {
    const agent = await createAgent(t, user);
    await setClock('2026-06-02T00:00:30.000Z');
    const s = await createSchedule(agent.uuid, { cron: '* * * * *', overlap: 'skip' });
    expect(s.next_run_at).toBe('2026-06-02T00:01:00.000Z');
    expect(await t.app.background.schedule()).toBe(0); // not due yet: never early

    await setClock('2026-06-02T00:01:00.500Z');
    expect(await t.app.background.schedule()).toBe(1);
    expect(await t.app.background.schedule()).toBe(0); // decided once
    let log = await runs(agent.uuid, s.uuid);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ scheduled_for: '2026-06-02T00:01:00.000Z', manual: false, skipped_reason: null });
    const fired = await task(agent.uuid, log[0].task_id);
    expect(fired.created_at).toBe(log[0].fired_at);

    // The task is still queued: the next minute is skipped (overlap).
    await setClock('2026-06-02T00:02:01.000Z');
    await t.app.background.schedule();
    log = await runs(agent.uuid, s.uuid);
    expect(log[0]).toMatchObject({
      scheduled_for: '2026-06-02T00:02:00.000Z',
      skipped_reason: 'overlap',
      task_id: null,
    });

    // Down for five minutes: only the latest missed occurrence is decided, as missed (> 10 s late).
    const claimed = await claimOne(t, user, agent.uuid);
    await reportComplete(t, user, agent.uuid, claimed.task_id, claimed.lease_id);
    await setClock('2026-06-02T00:07:30.000Z');
    await t.app.background.schedule();
    log = await runs(agent.uuid, s.uuid);
    expect(log).toHaveLength(3);
    expect(log[0]).toMatchObject({ scheduled_for: '2026-06-02T00:07:00.000Z', skipped_reason: 'missed' });
    const now = (await call(t.app, 'GET', `${base(agent.uuid)}/${s.uuid}`, { token: user.token })).json();
    expect(now.next_run_at).toBe('2026-06-02T00:08:00.000Z');

    // Within 10 s late it still fires.
    await setClock('2026-06-02T00:08:09.000Z');
    await t.app.background.schedule();
    expect((await runs(agent.uuid, s.uuid))[0]).toMatchObject({
      scheduled_for: '2026-06-02T00:08:00.000Z',
      skipped_reason: null,
    });
    await call(t.app, 'DELETE', `${base(agent.uuid)}/${s.uuid}`, { token: user.token });
  });

  it('catch_up_seconds fires a missed nightly run once, and survives a restart', async () => {
    const agent = await createAgent(t, user);
    await setClock('2026-06-03T00:00:00.000Z');
    const s = await createSchedule(agent.uuid, { cron: '0 3 * * *', catch_up_seconds: 3600 });
    const { dataDir } = t.config;
    await t.close();
    // No instance runs over 03:00; one starts at 03:40 with a fresh process (same storage).
    clock.set(Date.parse('2026-06-04T03:40:00.000Z'));
    t = await buildTestApp(database, { clock, timers: manualTimers(), config: { dataDir } });
    await setClock('2026-06-04T03:40:00.000Z');
    await t.app.background.schedule();
    const log = await runs(agent.uuid, s.uuid);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ scheduled_for: '2026-06-04T03:00:00.000Z', skipped_reason: null });
    const got = (await call(t.app, 'GET', `${base(agent.uuid)}/${s.uuid}`, { token: user.token })).json();
    expect(got.next_run_at).toBe('2026-06-05T03:00:00.000Z');
    await call(t.app, 'DELETE', `${base(agent.uuid)}/${s.uuid}`, { token: user.token });
  });

  it('goes with its agent, and allows 100 per agent', async () => {
    const agent = await createAgent(t, user);
    const s = await createSchedule(agent.uuid, { enabled: false });
    for (let i = 1; i < 100; i++) await createSchedule(agent.uuid, { enabled: false });
    const over = await call(t.app, 'POST', base(agent.uuid), {
      token: user.token,
      body: { name: 'n', cron: '@daily', message: 'm' },
    });
    expect(over.statusCode).toBe(400);
    expect(over.json().error).toMatchObject({ code: 'LIMIT_EXCEEDED', details: { field: 'schedules' } });
    expect((await call(t.app, 'DELETE', `/agent/${agent.uuid}`, { token: user.token })).statusCode).toBe(204);
    expect((await call(t.app, 'GET', `${base(agent.uuid)}/${s.uuid}`, { token: user.token })).statusCode).toBe(404);
  }, 90_000);
});
