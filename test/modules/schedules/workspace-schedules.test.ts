import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.js';
import { type ScheduleRow, schedulesRepo } from '../../../src/modules/schedules/schedules-repo.js';
import { buildTestApp, call, manualClock, manualTimers, type TestApp } from '../../helpers/app.js';
import { DATABASES, ownDatabase, type TestDatabase } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';

const START = Date.parse('2026-06-01T00:00:30.000Z');
const CAP = 5;

describe.each(DATABASES)('schedules of a workspace on $name', (shared) => {
  const clock = manualClock(START);
  let t: TestApp;
  let database: TestDatabase;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    // The clock fires every due schedule of its database: storage of its own keeps this file's apart.
    const own = await ownDatabase(shared);
    database = own.database;
    drop = own.drop;
    t = await buildTestApp(database, { clock, timers: manualTimers(), config: { maxSchedulesPerWorkspace: CAP } });
  });
  afterAll(async () => {
    await t.close();
    await drop();
  });

  const base = (agent: string) => `/v1/agent/${agent}/schedules`;
  const create = (user: TestUser, agent: string, name = 'n') =>
    call(t.app, 'POST', base(agent), {
      token: user.token,
      body: { name, cron: '0 3 * * *', message: 'm', enabled: false },
    });

  it('refuses a create beyond TASKHOOK_MAX_SCHEDULES_PER_WORKSPACE, over all agents, and never overshoots', async () => {
    const user = await createUser(t);
    const [a1, a2] = [await createAgent(t, user), await createAgent(t, user)];
    for (let i = 0; i < CAP - 1; i++) expect((await create(user, i % 2 ? a1.uuid : a2.uuid)).statusCode).toBe(201);
    // One place left, eight concurrent creates on two agents: exactly one gets it.
    const racing = await Promise.all(
      Array.from({ length: 8 }, (_, i) => create(user, i % 2 ? a1.uuid : a2.uuid, `race ${i}`)),
    );
    expect(racing.map((r) => r.statusCode).sort()).toEqual([201, 400, 400, 400, 400, 400, 400, 400]);
    const refused = racing.find((r) => r.statusCode === 400);
    expect(refused?.json().error).toMatchObject({ code: 'LIMIT_EXCEEDED', details: { field: 'schedules' } });
    const listed = async (agent: string) =>
      (await call(t.app, 'GET', base(agent), { token: user.token })).json().pagination.total as number;
    expect((await listed(a1.uuid)) + (await listed(a2.uuid))).toBe(CAP);

    // PATCH never counts; a delete frees room at once.
    const first = (await call(t.app, 'GET', base(a1.uuid), { token: user.token })).json().schedules[0];
    const patched = await call(t.app, 'PATCH', `${base(a1.uuid)}/${first.uuid}`, {
      token: user.token,
      body: { name: 'renamed', cron: '0 4 * * *' },
    });
    expect(patched.statusCode).toBe(200);
    expect((await create(user, a2.uuid)).statusCode).toBe(400);
    const gone = await call(t.app, 'DELETE', `${base(a1.uuid)}/${first.uuid}`, { token: user.token });
    expect(gone.statusCode).toBe(204);
    expect((await create(user, a2.uuid)).statusCode).toBe(201);

    // Another workspace has its own room.
    const other = await createUser(t);
    expect((await create(other, (await createAgent(t, other)).uuid)).statusCode).toBe(201);
  });

  it('judges the minimum interval by the times of day, not by occurrences', async () => {
    const user = await createUser(t);
    const agent = await createAgent(t, user);
    // 01:59:30 and 02:59:30 Berlin time: 3600 s apart on the clock, 30 s apart in real time on
    // 2027-03-28 (02:59:30 falls in the gap). Allowed: the gap is judged in wall-clock time.
    const cron = '30 59 1,2 * * *';
    const created = await call(t.app, 'POST', base(agent.uuid), {
      token: user.token,
      body: { name: 'n', cron, timezone: 'Europe/Berlin', message: 'm', enabled: false },
    });
    expect(created.statusCode, created.body).toBe(201);
    const preview = await call(t.app, 'POST', `${base(agent.uuid)}/preview`, {
      token: user.token,
      body: { cron, timezone: 'Europe/Berlin', from: '2027-03-27T23:00:00Z', count: 2 },
    });
    expect(preview.json().occurrences.map((o: { scheduled_for: string }) => o.scheduled_for)).toEqual([
      '2027-03-28T00:59:30.000Z',
      '2027-03-28T01:00:00.000Z',
    ]);
    const tight = await call(t.app, 'POST', `${base(agent.uuid)}/preview`, {
      token: user.token,
      body: { cron: '0,30 * * * * *' },
    });
    expect(tight.statusCode).toBe(400);
    expect(tight.json().error.details).toMatchObject({ field: 'cron' });
    expect(tight.json().error.details.reason).toContain('30 seconds apart at the closest; the minimum is 60 seconds');
  });

  it("one pass decides another workspace's occurrence whatever the backlog of the first", async () => {
    const [a, b] = [await createUser(t), await createUser(t)];
    const [agentA1, agentA2, agentB] = [await createAgent(t, a), await createAgent(t, a), await createAgent(t, b)];
    const at = new Date(START).toISOString();
    const row = (workspaceUuid: string, agentUuid: string, nextRunAt: string): ScheduleRow => ({
      uuid: newId(),
      agentUuid,
      workspaceUuid,
      name: 'every minute',
      cron: '* * * * *',
      timezone: 'UTC',
      message: 'tick',
      metadata: {},
      priority: 5,
      concurrencyKey: null,
      enabled: true,
      overlap: 'allow',
      catchUpSeconds: 0,
      nextRunAt,
      lastTaskUuid: null,
      createdAt: at,
      updatedAt: at,
    });
    // 150 of A's schedules are due (since 00:00) before B's (00:01): more than a pass of a global
    // order by due time held.
    // Written straight to storage: the workspace cap of this app is small.
    const db = t.runtime.db.kysely;
    for (let i = 0; i < 150; i++) {
      await schedulesRepo.insert(db, row(a.uuid, i % 2 ? agentA1.uuid : agentA2.uuid, '2026-06-01T00:00:00.000Z'));
    }
    const ofB = row(b.uuid, agentB.uuid, '2026-06-01T00:01:00.000Z');
    await schedulesRepo.insert(db, ofB);

    clock.set(Date.parse('2026-06-01T00:01:01.000Z'));
    const decided = await t.app.background.schedule();
    const runsOfB = await schedulesRepo.listRuns(db, ofB.uuid, 0, 10);
    expect(runsOfB.runs).toHaveLength(1);
    expect(runsOfB.runs[0]).toMatchObject({ scheduledFor: '2026-06-01T00:01:00.000Z', skippedReason: null });
    expect(runsOfB.runs[0]?.taskUuid).not.toBeNull();
    // The pass decided only a share of A's backlog (rounds); the rest follows in the next passes.
    expect(decided).toBeLessThan(101);
    // (A nudged pass may run beside these: a pass that finds its rows claimed decides 0.)
    const stillDue = () => schedulesRepo.dueByWorkspace(db, '2026-06-01T00:01:01.000Z', 1000, 1000);
    for (let i = 0; i < 100 && (await stillDue()).length > 0; i++) await t.app.background.schedule();
    expect(await stillDue()).toEqual([]);
  }, 120_000);
});
