import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES, ownDatabase } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { pushBodyOf, runsOf, usePushApp } from '../../helpers/push-agent.js';
import { type ClaimedTask, claimTasks, reportComplete, submitTask } from '../../helpers/tasks.js';

/** The per-key cap holds for the tasks the service pushes to an http agent, as for workers. */
describe.each(DATABASES)('concurrency_per_key of an http agent on $name', (shared) => {
  const h = usePushApp(shared);

  it('pushes at most the cap of a key at once; the next goes when one is done', async () => {
    const agent = await h.httpAgent('/async', {});
    await call(h.t.app, 'PATCH', `/agent/${agent}`, { token: h.user.token, body: { concurrency_per_key: 1 } });
    const keyed: string[] = [];
    for (let i = 0; i < 3; i++) {
      keyed.push((await submitTask(h.t, h.user, agent, { message: `a${i}`, concurrency_key: 'A' })).task_id);
    }
    const keyless = (await submitTask(h.t, h.user, agent, { message: 'free' })).task_id;
    await h.runs(keyless, 1);
    const [first] = await h.runs(keyed[0] as string, 1);
    await h.t.app.background.dispatch();
    const pushedKeyed = () => keyed.filter((id) => runsOf(h.receiver.requests, id).length > 0);
    expect(pushedKeyed()).toEqual([keyed[0]]);
    const { data } = pushBodyOf(first as NonNullable<typeof first>);
    expect(data.concurrency_key).toBe('A');
    await reportComplete(h.t, h.user, agent, keyed[0] as string, data.lease_id);
    await h.runs(keyed[1] as string, 1);
    await h.t.app.background.dispatch();
    expect(pushedKeyed()).toEqual([keyed[0], keyed[1]]);
  });
});

/*
 * Two instances on one PostgreSQL database claiming for one agent at once: the agent row lock
 * makes their claims take turns, so no key is ever held beyond its cap.
 */
describe.each(DATABASES.filter((d) => d.name === 'postgres'))('per-key caps across instances on $name', (shared) => {
  let a: TestApp;
  let b: TestApp;
  let user: TestUser;
  let drop: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    const own = await ownDatabase(shared);
    drop = own.drop;
    a = await buildTestApp(own.database, { config: { rateLimit: 1_000_000 } });
    b = await buildTestApp(own.database, { config: { rateLimit: 1_000_000 } });
    user = await createUser(a);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await drop();
  });

  it('concurrent claims of two instances never hold more than the cap of a key', { timeout: 120_000 }, async () => {
    const cap = 2;
    const agent = (await createAgent(a, user, { concurrency: 100, concurrency_per_key: cap })).uuid;
    const keys = ['k1', 'k2', 'k3'];
    for (let i = 0; i < 45; i++) {
      await submitTask(a, user, agent, { message: `t${i}`, concurrency_key: keys[i % keys.length] });
    }
    const held = new Map<string, ClaimedTask>();
    const seen = new Set<string>();
    for (let round = 0; round < 30 && seen.size < 45; round++) {
      const claims = await Promise.all(
        [a, b, a, b].map((app) => claimTasks(app, user, agent, { max_tasks: 3 }).then((got) => ({ app, got }))),
      );
      for (const { got } of claims) {
        for (const task of got) {
          expect(seen.has(task.task_id)).toBe(false);
          seen.add(task.task_id);
          held.set(task.task_id, task);
        }
      }
      for (const key of keys) {
        expect([...held.values()].filter((x) => x.concurrency_key === key).length).toBeLessThanOrEqual(cap);
      }
      // Finish one held task per key (alternating instances), so the next round may hand out more.
      for (const key of keys) {
        const one = [...held.values()].find((x) => x.concurrency_key === key);
        if (!one) continue;
        const res = await reportComplete(round % 2 ? a : b, user, agent, one.task_id, one.lease_id);
        expect(res.statusCode).toBe(200);
        held.delete(one.task_id);
      }
    }
    expect(seen.size).toBe(45);
  });
});
