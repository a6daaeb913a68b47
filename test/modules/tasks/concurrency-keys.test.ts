import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { sqlitePlans } from '../../helpers/query-plans.js';
import {
  claimTasks,
  getTask,
  listTasks,
  reportComplete,
  reportInputRequest,
  reportProgress,
  sendMessage,
  submitTask,
} from '../../helpers/tasks.js';

describe.each(DATABASES)('concurrency keys on $name', (database) => {
  let t: TestApp;
  let user: TestUser;

  beforeAll(async () => {
    t = await buildTestApp(database, { config: { rateLimit: 1_000_000 } });
    user = await createUser(t);
  });
  afterAll(() => t.close());

  const newAgent = async (body: Record<string, unknown> = {}) =>
    (await createAgent(t, user, { concurrency: 100, ...body })).uuid;

  /** Submits one task per entry ([key, priority?]) in order; @returns their ids. */
  async function submitAll(agent: string, entries: Array<[string | null, number?]>): Promise<string[]> {
    const ids: string[] = [];
    for (const [key, priority] of entries) {
      const body: Record<string, unknown> = { message: `task ${ids.length}`, concurrency_key: key };
      if (priority !== undefined) body.priority = priority;
      ids.push((await submitTask(t, user, agent, body)).task_id);
    }
    return ids;
  }

  /** Claims one at a time `count` times; @returns the keys handed out, in order. */
  async function claimKeys(agent: string, count: number): Promise<Array<string | null>> {
    const keys: Array<string | null> = [];
    for (let i = 0; i < count; i++) {
      for (const task of await claimTasks(t, user, agent)) keys.push(task.concurrency_key);
    }
    return keys;
  }

  it('stores the key on the task: GET (every state), the list, the claim item', async () => {
    const agent = await newAgent();
    const [keyed, keyless] = await submitAll(agent, [['tenant-1'], [null]]);
    expect((await getTask(t, user, agent, keyed as string)).concurrency_key).toBe('tenant-1');
    expect((await getTask(t, user, agent, keyless as string)).concurrency_key).toBeNull();
    const listed = (await listTasks(t, user, agent)).tasks as Array<{ task_id: string; concurrency_key: unknown }>;
    expect(listed.find((x) => x.task_id === keyed)?.concurrency_key).toBe('tenant-1');
    const claimed = await claimTasks(t, user, agent, { max_tasks: 2 });
    expect(claimed.map((c) => c.concurrency_key).sort()).toEqual(['tenant-1', null].sort());
    const item = claimed.find((c) => c.task_id === keyed);
    await reportComplete(t, user, agent, keyed as string, item?.lease_id as string);
    const done = await getTask(t, user, agent, keyed as string);
    expect(done).toMatchObject({ status: 'completed', concurrency_key: 'tenant-1' });
  });

  it('refuses a bad key or cap with 400 naming the field', async () => {
    const agent = await newAgent();
    for (const key of ['', 'x'.repeat(256), 7]) {
      const res = await call(t.app, 'POST', `/agent/request/${agent}`, {
        headers: { 'x-api-key': user.key },
        body: { message: 'hi', concurrency_key: key },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'concurrency_key' } });
    }
    for (const cap of [0, 1001, 1.5, '2']) {
      const res = await call(t.app, 'POST', '/agent', {
        token: user.token,
        body: { name: 'a', concurrency_per_key: cap },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'concurrency_per_key' } });
      const patch = await call(t.app, 'PATCH', `/agent/${agent}`, {
        token: user.token,
        body: { concurrency_per_key: cap },
      });
      expect(patch.statusCode).toBe(400);
      expect(patch.json().error).toMatchObject({ details: { field: 'concurrency_per_key' } });
    }
    const ok = await call(t.app, 'POST', `/agent/request/${agent}`, {
      headers: { 'x-api-key': user.key },
      body: { message: 'hi', concurrency_key: 'x'.repeat(255) },
    });
    expect(ok.statusCode).toBe(202);
  });

  it('shows concurrency_per_key on the agent (null by default), set and cleared by PATCH', async () => {
    const res = await call(t.app, 'POST', '/agent', { token: user.token, body: { name: 'capped' } });
    expect(res.json().concurrency_per_key).toBeNull();
    const uuid = res.json().uuid;
    const set = await call(t.app, 'PATCH', `/agent/${uuid}`, { token: user.token, body: { concurrency_per_key: 3 } });
    expect(set.json().concurrency_per_key).toBe(3);
    expect((await call(t.app, 'GET', `/agent/${uuid}`, { token: user.token })).json().concurrency_per_key).toBe(3);
    const cleared = await call(t.app, 'PATCH', `/agent/${uuid}`, {
      token: user.token,
      body: { concurrency_per_key: null },
    });
    expect(cleared.json().concurrency_per_key).toBeNull();
  });

  it('an Idempotency-Key compares the key too', async () => {
    const agent = await newAgent();
    const headers = { 'Idempotency-Key': `idem-${agent}` };
    const first = await submitTask(t, user, agent, { concurrency_key: 'a' }, headers);
    const again = await submitTask(t, user, agent, { concurrency_key: 'a' }, headers);
    expect(again.task_id).toBe(first.task_id);
    const other = await call(t.app, 'POST', `/agent/request/${agent}`, {
      headers: { 'x-api-key': user.key, ...headers },
      body: { message: 'review the code', concurrency_key: 'b' },
    });
    expect(other.statusCode).toBe(422);
    expect(other.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it('serves keys with backlogs in turn: A, B, C, A, B, C', async () => {
    const agent = await newAgent();
    await submitAll(agent, [['A'], ['A'], ['A'], ['B'], ['B'], ['B'], ['C'], ['C'], ['C']]);
    expect(await claimKeys(agent, 9)).toEqual(['A', 'B', 'C', 'A', 'B', 'C', 'A', 'B', 'C']);
  });

  it('a claim of max_tasks n applies the rule n times', async () => {
    const agent = await newAgent();
    await submitAll(agent, [['A'], ['A'], ['A'], ['B'], ['B'], [null], [null]]);
    const tasks = await claimTasks(t, user, agent, { max_tasks: 5 });
    expect(tasks.map((x) => x.concurrency_key)).toEqual(['A', 'B', null, 'A', 'B']);
    const rest = await claimTasks(t, user, agent, { max_tasks: 5 });
    expect(rest.map((x) => x.concurrency_key)).toEqual([null, 'A']);
  });

  it('a new key waits behind a backlog for at most as many hand-outs as there are groups', async () => {
    const agent = await newAgent();
    await submitAll(
      agent,
      Array.from({ length: 20 }, (): [string] => ['big']),
    );
    expect(await claimKeys(agent, 3)).toEqual(['big', 'big', 'big']);
    await submitAll(agent, [['new']]);
    expect(await claimKeys(agent, 2)).toEqual(['new', 'big']);
    // The keyless group, served before by the plain claim, counts as served.
    const keyless = await newAgent();
    await submitAll(
      keyless,
      Array.from({ length: 5 }, (): [null] => [null]),
    );
    expect(await claimKeys(keyless, 2)).toEqual([null, null]);
    await submitAll(keyless, [['late']]);
    expect(await claimKeys(keyless, 2)).toEqual(['late', null]);
  });

  it('priority comes first; keyless tasks alone go by priority then age exactly as before', async () => {
    const agent = await newAgent();
    const ids = await submitAll(agent, [
      [null, 3],
      [null, 9],
      [null, 5],
      [null, 9],
      [null, 1],
    ]);
    const order = (await claimTasks(t, user, agent, { max_tasks: 5 })).map((x) => x.task_id);
    expect(order).toEqual([ids[1], ids[3], ids[2], ids[0], ids[4]]);
    const mixed = await newAgent();
    const m = await submitAll(mixed, [
      ['A', 5],
      ['A', 5],
      ['B', 2],
      [null, 8],
      ['B', 8],
    ]);
    const got = (await claimTasks(t, user, mixed, { max_tasks: 5 })).map((x) => x.task_id);
    expect(got).toEqual([m[3], m[4], m[0], m[1], m[2]]);
  });

  it('holds at most concurrency_per_key tasks of a key; keyless tasks are not capped', async () => {
    const agent = await newAgent({ concurrency_per_key: 2 });
    await submitAll(agent, [['A'], ['A'], ['A'], ['A'], [null], [null], [null]]);
    const first = await claimTasks(t, user, agent, { max_tasks: 10 });
    expect(first.map((x) => x.concurrency_key)).toEqual(['A', null, 'A', null, null]);
    expect(await claimTasks(t, user, agent, { max_tasks: 10 })).toEqual([]);
    const a = first.find((x) => x.concurrency_key === 'A');
    await reportComplete(t, user, agent, a?.task_id as string, a?.lease_id as string);
    expect((await claimTasks(t, user, agent, { max_tasks: 10 })).map((x) => x.concurrency_key)).toEqual(['A']);
    expect(await claimTasks(t, user, agent, { max_tasks: 10 })).toEqual([]);
  });

  it('a lower cap takes nothing away and applies to the next hand-out', async () => {
    const agent = await newAgent({ concurrency_per_key: 3 });
    await submitAll(agent, [['A'], ['A'], ['A'], ['A'], ['A']]);
    const held = await claimTasks(t, user, agent, { max_tasks: 10 });
    expect(held).toHaveLength(3);
    await call(t.app, 'PATCH', `/agent/${agent}`, { token: user.token, body: { concurrency_per_key: 1 } });
    for (const x of held) {
      const res = await reportProgress(t, user, agent, x.task_id, {
        lease_id: x.lease_id,
        current_step: 'still mine',
        steps_completed: 1,
        total_steps: 2,
      });
      expect(res.json().status).toBe('running');
    }
    for (const x of held.slice(0, 2)) {
      await reportComplete(t, user, agent, x.task_id, x.lease_id);
      expect(await claimTasks(t, user, agent)).toEqual([]);
    }
    await reportComplete(t, user, agent, held[2]?.task_id as string, held[2]?.lease_id as string);
    expect(await claimTasks(t, user, agent, { max_tasks: 10 })).toHaveLength(1);
  });

  it('a task awaiting input is not held; answered, it is handed out again within the cap', async () => {
    const agent = await newAgent({ concurrency_per_key: 1 });
    const [first, second] = await submitAll(agent, [['A'], ['A']]);
    const [claimed] = await claimTasks(t, user, agent);
    expect(claimed?.task_id).toBe(first);
    await reportInputRequest(t, user, agent, first as string, claimed?.lease_id as string, 'which branch?');
    const [next] = await claimTasks(t, user, agent);
    expect(next?.task_id).toBe(second);
    await sendMessage(t, user, agent, first as string, 'main');
    expect(await claimTasks(t, user, agent)).toEqual([]);
    await reportComplete(t, user, agent, second as string, next?.lease_id as string);
    const [again] = await claimTasks(t, user, agent);
    expect(again).toMatchObject({ task_id: first, concurrency_key: 'A' });
  });

  it.runIf(database.name === 'sqlite')('a claim learns whether keys apply from two index probes', async () => {
    const agent = await newAgent();
    await submitAll(agent, [[null]]);
    const plans = await sqlitePlans(t, /from "agents"/i, () => claimTasks(t, user, agent));
    const steps = plans.flatMap((p) => p.steps).join('\n');
    expect(steps).toMatch(/SEARCH g USING (COVERING )?INDEX sqlite_autoindex_concurrency_groups_1 \(agent_uuid=\?\)/);
    expect(steps).toMatch(/SEARCH t USING COVERING INDEX tasks_keyed_ready_idx \(agent_uuid=\?/);
  });
});
