import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, manualTimers, type TestApp } from '../../helpers/app.js';
import { ownDatabase, POSTGRES_ONLY, POSTGRES_URL } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';

// Two instances need one shared database: PostgreSQL (a SQLite file has one writer process).

describe.runIf(POSTGRES_URL).each(POSTGRES_ONLY)('exactly once across instances on $name', (shared) => {
  const clock = manualClock(Date.parse('2026-07-01T00:00:30.000Z'));
  let a: TestApp;
  let b: TestApp;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const own = await ownDatabase(shared);
    drop = own.drop;
    a = await buildTestApp(own.database, { clock, timers: manualTimers() });
    b = await buildTestApp(own.database, { clock, timers: manualTimers() });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await drop();
  });

  it('concurrent passes of two instances decide each occurrence once', async () => {
    const user = await createUser(a);
    const agent = await createAgent(a, user);
    const created = await call(a.app, 'POST', `/v1/agent/${agent.uuid}/schedules`, {
      token: user.token,
      body: { name: 'every minute', cron: '* * * * *', message: 'tick {{schedule.scheduled_for}}' },
    });
    expect(created.statusCode).toBe(201);
    const uuid = created.json().uuid;

    for (let minute = 1; minute <= 5; minute++) {
      clock.set(Date.parse('2026-07-01T00:00:00.000Z') + minute * 60_000 + 200);
      const passes = [a, b, a, b, a, b].map((t) => t.app.background.schedule());
      const decided = (await Promise.all(passes)).reduce((sum, n) => sum + n, 0);
      expect(decided).toBe(1);
    }

    const runs = (
      await call(b.app, 'GET', `/v1/agent/${agent.uuid}/schedules/${uuid}/runs?limit=100`, { token: user.token })
    ).json().runs as Array<{ scheduled_for: string; task_id: string | null }>;
    expect(runs).toHaveLength(5);
    expect(new Set(runs.map((r) => r.scheduled_for)).size).toBe(5);
    const tasks = (await call(a.app, 'GET', `/agent/${agent.uuid}/tasks?limit=100`, { token: user.token })).json();
    expect(tasks.pagination.total).toBe(5);
    expect(new Set(runs.map((r) => r.task_id))).toEqual(
      new Set(tasks.tasks.map((x: { task_id: string }) => x.task_id)),
    );
  });
});
