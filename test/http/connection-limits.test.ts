import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONNECTION_LIMITS } from '../../src/http/connection-limits.js';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/callbacks.js';
import { DATABASES } from '../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../helpers/factories.js';
import { listen, openRawStream } from '../helpers/streams.js';
import { submitTask, workerHeaders } from '../helpers/tasks.js';

/*
 * Per-user caps on what a user holds open on an instance: 50 task event streams and 100 waiting
 * long-poll claims; one more is 429 LIMIT_EXCEEDED in the error envelope, other users are not
 * affected, and a slot frees when its connection ends.
 */

describe.each(DATABASES)('open streams and waiting claims per workspace on $name', (database) => {
  let t: TestApp;
  let base: string;
  const controllers: AbortController[] = [];

  beforeAll(async () => {
    t = await buildTestApp(database);
    base = await listen(t);
  });
  afterAll(async () => {
    for (const c of controllers) c.abort();
    await t.close();
  });

  function expectLimitExceeded(status: number, body: unknown) {
    expect(status).toBe(429);
    expect(body).toMatchObject({
      success: false,
      error: { code: 'LIMIT_EXCEEDED', message: expect.stringMatching(/^At most \d+ /) },
      meta: { request_id: expect.any(String) },
    });
  }

  async function userWithTask() {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id } = await submitTask(t, user, agent);
    return { user, agent, path: `/agent/${agent}/task/${task_id}/events` };
  }

  it('answers the 51st event stream of a user 429 LIMIT_EXCEEDED until one closes', async () => {
    const { user, path } = await userWithTask();
    const limit = CONNECTION_LIMITS.stream;
    expect(limit).toBe(50);
    const open = await Promise.all(Array.from({ length: limit }, () => openRawStream(base, path, workerHeaders(user))));
    controllers.push(...open.map((s) => ({ abort: s.close }) as AbortController));
    expect(open.map((s) => s.res.status)).toEqual(open.map(() => 200));
    expect(t.app.connections.held(user.uuid, 'stream')).toBe(limit);

    const refused = await call(t.app, 'GET', path, { headers: workerHeaders(user) });
    expectLimitExceeded(refused.statusCode, refused.json());

    // Another user is not affected.
    const other = await userWithTask();
    const theirs = await openRawStream(base, other.path, workerHeaders(other.user));
    theirs.close();
    expect(theirs.res.status).toBe(200);

    open[0]?.close();
    await eventually(
      () => (t.app.connections.held(user.uuid, 'stream') === limit - 1 ? true : undefined),
      'a freed stream slot',
    );
    const again = await openRawStream(base, path, workerHeaders(user));
    again.close();
    expect(again.res.status).toBe(200);
    for (const s of open) s.close();
  });

  async function waitingClaim(user: TestUser, agent: string) {
    const controller = new AbortController();
    controllers.push(controller);
    const answer = fetch(`${base}/agent/${agent}/tasks/claim`, {
      method: 'POST',
      headers: { ...workerHeaders(user), 'content-type': 'application/json' },
      body: JSON.stringify({ wait_seconds: 30 }),
      signal: controller.signal,
    }).catch(() => null);
    return { controller, answer };
  }

  it('answers the 101st waiting claim of a user 429 LIMIT_EXCEEDED; claims that do not wait are not counted', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const limit = CONNECTION_LIMITS.wait;
    expect(limit).toBe(100);
    const waits = await Promise.all(Array.from({ length: limit }, () => waitingClaim(user, agent)));
    await eventually(
      () => (t.app.connections.held(user.uuid, 'wait') === limit ? true : undefined),
      `${limit} waiting claims`,
    );

    const refused = await call(t.app, 'POST', `/agent/${agent}/tasks/claim`, {
      headers: workerHeaders(user),
      body: { wait_seconds: 5 },
    });
    expectLimitExceeded(refused.statusCode, refused.json());
    const noWait = await call(t.app, 'POST', `/agent/${agent}/tasks/claim`, { headers: workerHeaders(user), body: {} });
    expect(noWait.statusCode).toBe(200);

    // Another user's agent can still be waited on.
    const other = await createUser(t);
    const otherAgent = (await createAgent(t, other)).uuid;
    const theirs = await waitingClaim(other, otherAgent);
    await eventually(() => (t.app.connections.held(other.uuid, 'wait') === 1 ? true : undefined), 'their wait');
    theirs.controller.abort();

    // Workers that hang up free their slots.
    for (const w of waits) w.controller.abort();
    await eventually(() => (t.app.connections.held(user.uuid, 'wait') === 0 ? true : undefined), 'freed wait slots');
    const after = await waitingClaim(user, agent);
    await eventually(() => (t.app.connections.held(user.uuid, 'wait') === 1 ? true : undefined), 'a new wait');
    after.controller.abort();
    // A hundred claims on a shared, busy database take a while to park.
  }, 120_000);
});
