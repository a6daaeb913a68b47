import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { listTasks, workerHeaders } from '../../helpers/tasks.js';

const HOUR = 60 * 60 * 1000;

describe.each(DATABASES)('idempotent submit on $name', (database) => {
  let t: TestApp;
  const clock = manualClock();

  beforeAll(async () => {
    // Time moves by hours here: keep this app's sweeper from sweeping the shared database meanwhile.
    t = await buildTestApp(database, { clock, config: { sweepIntervalMs: 24 * HOUR } });
  });
  afterAll(() => t.close());

  function submit(user: TestUser, agent: string, body: unknown, key?: string) {
    const headers = workerHeaders(user);
    if (key !== undefined) headers['idempotency-key'] = key;
    return call(t.app, 'POST', `/agent/request/${agent}`, { headers, body });
  }

  it('50 concurrent submits with one key create one task and all answer the same body', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const key = randomUUID();
    const body = { message: 'deploy once', priority: 7, metadata: { run: 1 } };
    const answers = await Promise.all(Array.from({ length: 50 }, () => submit(user, agent, body, key)));

    for (const res of answers) expect(res.statusCode, res.body).toBe(202);
    const first = answers[0]?.json();
    for (const res of answers) expect(res.json()).toEqual(first);
    for (const res of answers) expect(res.headers.location).toBe(first.poll_url);
    const list = await listTasks(t, user, agent);
    expect(list.pagination.total).toBe(1);
    expect(list.tasks[0]?.task_id).toBe(first.task_id);

    // A retry later answers the first body again and still creates nothing.
    clock.advance(HOUR);
    const retry = await submit(user, agent, body, key);
    expect(retry.statusCode).toBe(202);
    expect(retry.json()).toEqual(first);
    expect((await listTasks(t, user, agent)).pagination.total).toBe(1);
  });

  it('the same body with its keys in another order is the same request', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const key = randomUUID();
    const first = await submit(user, agent, { message: 'm', metadata: { a: 1, b: { c: 2, d: 3 } } }, key);
    const again = await submit(user, agent, { metadata: { b: { d: 3, c: 2 }, a: 1 }, message: 'm' }, key);
    expect(first.statusCode).toBe(202);
    expect(again.statusCode).toBe(202);
    expect(again.json()).toEqual(first.json());
    expect((await listTasks(t, user, agent)).pagination.total).toBe(1);
  });

  it('the same key with another body or another agent is 422 IDEMPOTENCY_KEY_REUSED and creates nothing', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const other = (await createAgent(t, user)).uuid;
    const key = randomUUID();
    const first = await submit(user, agent, { message: 'one' }, key);
    expect(first.statusCode).toBe(202);

    for (const [target, body] of [
      [agent, { message: 'two' }],
      [agent, { message: 'one', priority: 5 }],
      [agent, { message: 'one', metadata: {} }],
      [other, { message: 'one' }],
    ] as const) {
      const res = await submit(user, target, body, key);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.json()).toMatchObject({ success: false, error: { code: 'IDEMPOTENCY_KEY_REUSED' } });
    }
    expect((await listTasks(t, user, agent)).pagination.total).toBe(1);
    expect((await listTasks(t, user, other)).pagination.total).toBe(0);
    expect((await submit(user, agent, { message: 'one' }, key)).json()).toEqual(first.json());
  });

  it('keys are per user: another user can use the same key', async () => {
    const alice = await createUser(t);
    const bob = await createUser(t);
    const aliceAgent = (await createAgent(t, alice)).uuid;
    const bobAgent = (await createAgent(t, bob)).uuid;
    const key = randomUUID();
    const body = { message: 'same words' };
    const a = await submit(alice, aliceAgent, body, key);
    const b = await submit(bob, bobAgent, body, key);
    expect(a.statusCode).toBe(202);
    expect(b.statusCode).toBe(202);
    expect(b.json().task_id).not.toBe(a.json().task_id);
    expect((await listTasks(t, alice, aliceAgent)).pagination.total).toBe(1);
    expect((await listTasks(t, bob, bobAgent)).pagination.total).toBe(1);
    // Bob's key does not reach Alice's agent either: that agent is simply not found for him.
    expect((await submit(bob, aliceAgent, body, key)).statusCode).toBe(404);
  });

  it('a key is kept for 24 hours, then the same request creates a new task', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const key = randomUUID();
    const body = { message: 'nightly' };
    const first = await submit(user, agent, body, key);
    clock.advance(23 * HOUR);
    expect((await submit(user, agent, body, key)).json()).toEqual(first.json());
    clock.advance(HOUR + 1000);
    const fresh = await submit(user, agent, body, key);
    expect(fresh.statusCode).toBe(202);
    expect(fresh.json().task_id).not.toBe(first.json().task_id);
    expect((await listTasks(t, user, agent)).pagination.total).toBe(2);
    expect((await submit(user, agent, body, key)).json()).toEqual(fresh.json());
  });

  it('without a key every submit is a new task; a key over 255 characters is 400', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const body = { message: 'again' };
    const answers = await Promise.all([submit(user, agent, body), submit(user, agent, body)]);
    expect(new Set(answers.map((r) => r.json().task_id)).size).toBe(2);
    const long = await submit(user, agent, body, 'k'.repeat(256));
    expect(long.statusCode).toBe(400);
    expect(long.json().error.code).toBe('INVALID_REQUEST');
    expect((await submit(user, agent, body, 'k'.repeat(255))).statusCode).toBe(202);
    expect((await listTasks(t, user, agent)).pagination.total).toBe(3);
  });

  it('a retry answers the first response even after the agent was paused', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const key = randomUUID();
    const body = { message: 'the answer got lost' };
    const first = await submit(user, agent, body, key);
    expect(first.statusCode).toBe(202);
    await call(t.app, 'PATCH', `/agent/${agent}`, { headers: workerHeaders(user), body: { status: 'paused' } });
    const retry = await submit(user, agent, body, key);
    expect(retry.statusCode).toBe(202);
    expect(retry.json()).toEqual(first.json());
    const reused = await submit(user, agent, { message: 'something else' }, key);
    expect(reused.statusCode).toBe(422);
    expect((await submit(user, agent, body, randomUUID())).statusCode).toBe(503);
  });

  it('a refused submit (invalid body, paused agent) does not use up the key', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const key = randomUUID();
    expect((await submit(user, agent, { message: '' }, key)).statusCode).toBe(400);
    await call(t.app, 'PATCH', `/agent/${agent}`, { headers: workerHeaders(user), body: { status: 'paused' } });
    expect((await submit(user, agent, { message: 'later' }, key)).statusCode).toBe(503);
    await call(t.app, 'PATCH', `/agent/${agent}`, { headers: workerHeaders(user), body: { status: 'active' } });
    const ok = await submit(user, agent, { message: 'later' }, key);
    expect(ok.statusCode).toBe(202);
    expect((await submit(user, agent, { message: 'later' }, key)).json()).toEqual(ok.json());
  });
});
