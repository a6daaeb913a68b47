import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planDeliveryBatch } from '../../../src/modules/triggers/delivery-batch-fns.js';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { listTasks } from '../../helpers/tasks.js';
import { type CreatedTrigger, createTrigger, deliver } from '../../helpers/triggers.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const BODY = { repository: { name: 'r' } };

interface Setup {
  user: TestUser;
  agent: string;
  trigger: CreatedTrigger;
}

async function setup(t: TestApp): Promise<Setup> {
  const user = await createUser(t);
  const agent = (await createAgent(t, user)).uuid;
  return { user, agent, trigger: await createTrigger(t, user, agent) };
}

const send = (t: TestApp, s: Setup, id?: string) =>
  deliver(t, s.trigger.uuid, {
    secret: s.trigger.webhook_secret,
    body: BODY,
    ...(id ? { headers: { 'x-github-delivery': id } } : {}),
  });

const taskCount = async (t: TestApp, s: Setup) => (await listTasks(t, s.user, s.agent)).pagination.total;

async function deliveryCount(t: TestApp, s: Setup): Promise<number> {
  const log = await call(t.app, 'GET', `/v1/agent/${s.agent}/triggers/${s.trigger.uuid}/deliveries`, {
    token: s.user.token,
  });
  return log.json().pagination.total;
}

const bodies = (answers: LightMyRequestResponse[]) =>
  answers.map((res) => {
    expect(res.statusCode, res.body).toBe(202);
    return res.json() as { task_id: string; delivery_id: string };
  });

describe.each(DATABASES)('deliveries received in one turn on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    // A minute's trigger cache: a row deleted behind the cache's back stays in it (the failing member).
    t = await buildTestApp(database, { config: { triggerCacheMs: 60_000 } });
  });
  afterAll(() => t?.close());

  it('with and without delivery ids, and ids repeated inside the batch and across batches', async () => {
    const s = await setup(t);
    const ids = Array.from({ length: 10 }, () => `d-${randomUUID()}`);
    const turn = [
      ...Array.from({ length: 30 }, () => send(t, s)),
      ...ids.flatMap((id) => [send(t, s, id), send(t, s, id), send(t, s, id)]),
    ];
    const answers = bodies(await Promise.all(turn));
    const withoutIds = answers.slice(0, 30);
    expect(new Set(withoutIds.map((a) => a.task_id)).size).toBe(30);
    const firsts = ids.map((id, i) => {
      const copies = answers.slice(30 + 3 * i, 33 + 3 * i);
      for (const copy of copies) expect(copy).toEqual(copies[0]);
      expect(copies[0]?.delivery_id).toBe(id);
      return copies[0];
    });
    expect(new Set(firsts.map((a) => a?.task_id)).size).toBe(10);
    expect(await taskCount(t, s)).toBe(40);
    expect(await deliveryCount(t, s)).toBe(60);

    // The same ids again, in another batch with new ones: the first 202s, nothing new for them.
    const again = bodies(await Promise.all([...ids.map((id) => send(t, s, id)), send(t, s, `d-${randomUUID()}`)]));
    expect(again.slice(0, 10)).toEqual(firsts);
    expect(await taskCount(t, s)).toBe(41);
    expect(await deliveryCount(t, s)).toBe(71);
  });

  it('a failing member fails only its own receive', async () => {
    const [good, doomed] = [await setup(t), await setup(t)];
    expect((await send(t, doomed)).statusCode).toBe(202); // cached now
    // Deleted without the announcement the repository makes: the cache still serves the trigger,
    // so its delivery reaches the write and breaks the foreign key there.
    await t.runtime.db.kysely
      .deleteFrom('trigger_deliveries')
      .where('trigger_uuid', '=', doomed.trigger.uuid)
      .execute();
    await t.runtime.db.kysely.deleteFrom('triggers').where('uuid', '=', doomed.trigger.uuid).execute();
    const id = `d-${randomUUID()}`;
    const answers = await Promise.all([
      send(t, good),
      send(t, doomed),
      send(t, good, id),
      send(t, doomed, `d-${randomUUID()}`),
      send(t, good, id),
      send(t, good),
    ]);
    expect(answers[1]?.statusCode).toBe(500);
    expect(answers[3]?.statusCode).toBe(500);
    const fine = bodies([answers[0], answers[2], answers[4], answers[5]] as LightMyRequestResponse[]);
    expect(fine[1]).toEqual(fine[2]);
    expect(await taskCount(t, good)).toBe(3);
    expect(await deliveryCount(t, good)).toBe(4);
    expect(await taskCount(t, doomed)).toBe(1);
  });
});

describe.each(DATABASES)('delivery ids over time in one batch on $name', (database) => {
  // Starts a day in the past, so the jump ends near real time (see triggers-routes.test.ts).
  const clock = manualClock(Date.now() - DAY - MINUTE);
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database, { clock, config: { sweepIntervalMs: DAY } });
  });
  afterAll(() => t?.close());

  it('ids past their 24 h create new tasks once each; ids still held answer the first 202', async () => {
    const s = await setup(t);
    const [old, recent] = [`d-${randomUUID()}`, `d-${randomUUID()}`];
    const start = clock.now();
    const [first] = bodies([await send(t, s, old)]);
    clock.set(start + 2 * MINUTE);
    const [held] = bodies([await send(t, s, recent)]);
    clock.set(start + DAY + MINUTE);
    const answers = bodies(await Promise.all([send(t, s, old), send(t, s, recent), send(t, s, old), send(t, s)]));
    expect(answers[0]?.task_id).not.toBe(first?.task_id);
    expect(answers[2]).toEqual(answers[0]);
    expect(answers[1]).toEqual(held);
    expect(await taskCount(t, s)).toBe(4);
    expect((await send(t, s, old)).json()).toEqual(answers[0]);
  });
});

describe('planDeliveryBatch', () => {
  const member = (dedupKey: string | null, triggerUuid = 't1') => ({ triggerUuid, dedupKey, nowMs: DAY * 2 });
  const holder = (dedupKey: string, receivedAtMs: number, triggerUuid = 't1') => ({
    uuid: `h-${dedupKey}-${triggerUuid}`,
    triggerUuid,
    dedupKey,
    receivedAt: new Date(receivedAtMs).toISOString(),
  });

  it('writes new ids together, repeats and held ids alone, and releases expired holders once', () => {
    const members = [member(null), member('a'), member('a'), member('b'), member('c'), member('c', 't2'), member('d')];
    const holders = [holder('b', DAY + 1), holder('c', DAY), holder('d', 0, 't2')];
    const plan = planDeliveryBatch(members, holders, DAY);
    expect(plan.together).toEqual([members[0], members[1], members[4], members[5], members[6]]);
    expect(plan.alone).toEqual([members[2], members[3]]);
    expect(plan.release).toEqual(['h-c-t1']);
  });
});
