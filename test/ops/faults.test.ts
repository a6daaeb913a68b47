import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { ownDatabase, POSTGRES_URL, type TestDatabase } from '../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../helpers/factories.js';
import { workerHeaders } from '../helpers/tasks.js';
import { createProxy } from '../helpers/tcp-proxy.js';

/*
 * Faults an operator meets: the LISTEN connection killed, PostgreSQL going away under load and
 * coming back, Redis going away and coming back. Instances recover without a restart and lose
 * nothing they acknowledged.
 */

const redisUrl = process.env.TEST_REDIS_URL;

/** Resolves once `check` holds, polling every 100 ms; fails after `ms`. */
async function eventually(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe.runIf(POSTGRES_URL)('faults on PostgreSQL', () => {
  let database: TestDatabase;
  let drop: () => Promise<void> = async () => undefined;
  let admin: pg.Client;

  beforeAll(async () => {
    const own = await ownDatabase({ name: 'postgres', databaseUrl: POSTGRES_URL });
    database = own.database;
    drop = own.drop;
    admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
  });
  afterAll(async () => {
    await admin.end();
    await drop();
  });

  const databaseName = () => new URL(database.databaseUrl as string).pathname.slice(1);
  const listeners = async () =>
    (
      await admin.query(
        `select pid from pg_stat_activity where datname = $1 and application_name = 'taskhook-listen'`,
        [databaseName()],
      )
    ).rows as Array<{ pid: number }>;

  it('one LISTEN connection per instance carries both the task wake-ups and the cache invalidations', async () => {
    // A minute's agent cache: only an announcement heard by the other instance makes it see a pause in time.
    const config = { agentCacheMs: 60_000 };
    const [a, b] = [await buildTestApp(database, { config }), await buildTestApp(database, { config })];
    try {
      const user = await createUser(a);
      const agent = await createAgent(a, user);
      const submit = (t: TestApp) =>
        call(t.app, 'POST', `/agent/request/${agent.uuid}`, { headers: workerHeaders(user), body: { message: 'm' } });
      await eventually('both instances listening', async () => (await listeners()).length >= 2);
      expect((await submit(b)).statusCode).toBe(202); // b caches the agent now
      const claim = (body: object) =>
        call(b.app, 'POST', `/agent/${agent.uuid}/tasks/claim`, { headers: workerHeaders(user), body });
      expect((await claim({ max_tasks: 10 })).json().tasks).toHaveLength(1);

      // A claim waiting on B wakes for a submit on A.
      const waiting = claim({ wait_seconds: 20 });
      await sleep(200);
      const submitted = await submit(a);
      expect(submitted.statusCode).toBe(202);
      expect((await waiting).json().tasks.map((t: { task_id: string }) => t.task_id)).toEqual([
        submitted.json().task_id,
      ]);

      // A pause on A reaches B's agent cache.
      const paused = await call(a.app, 'PATCH', `/agent/${agent.uuid}`, {
        token: user.token,
        body: { status: 'paused' },
      });
      expect(paused.statusCode).toBe(200);
      await eventually('the pause heard on b', async () => (await submit(b)).statusCode === 503, 5000);
      expect(await listeners()).toHaveLength(2);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 60_000);

  it('a killed LISTEN connection reconnects, and waiting claims still wake meanwhile', async () => {
    const [a, b] = [await buildTestApp(database), await buildTestApp(database)];
    try {
      const user = await createUser(a);
      const agent = await createAgent(a, user);
      // One connection per instance, for the task wake-ups and the change caches alike.
      await eventually('both instances listening', async () => (await listeners()).length === 2);
      for (const { pid } of await listeners()) await admin.query('select pg_terminate_backend($1)', [pid]);

      // A claim waiting on B is answered by a submit on A, through B's polling fallback.
      const claim = call(b.app, 'POST', `/agent/${agent.uuid}/tasks/claim`, {
        headers: workerHeaders(user),
        body: { wait_seconds: 20 },
      });
      await sleep(200);
      const submitted = await call(a.app, 'POST', `/agent/request/${agent.uuid}`, {
        headers: workerHeaders(user),
        body: { message: 'while the listener is down' },
      });
      expect(submitted.statusCode).toBe(202);
      const claimed = await claim;
      expect(claimed.statusCode).toBe(200);
      expect(claimed.json().tasks.map((t: { task_id: string }) => t.task_id)).toEqual([submitted.json().task_id]);

      // And the listeners come back by themselves.
      await eventually('listeners reconnected', async () => (await listeners()).length === 2);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 60_000);

  it('a killed LISTEN connection empties the agent cache: a change nobody announced is seen', async () => {
    // A minute's cache: only the loss of the listener can make the stale agent go in time.
    const t = await buildTestApp(database, { config: { agentCacheMs: 60_000 } });
    const direct = new pg.Client({ connectionString: database.databaseUrl });
    await direct.connect();
    try {
      const user = await createUser(t);
      const agent = await createAgent(t, user);
      const submit = () =>
        call(t.app, 'POST', `/agent/request/${agent.uuid}`, { headers: workerHeaders(user), body: { message: 'm' } });
      await eventually('listening', async () => (await listeners()).length === 1);
      expect((await submit()).statusCode).toBe(202); // the agent is cached now
      for (const { pid } of await listeners()) await admin.query('select pg_terminate_backend($1)', [pid]);
      // Written without the announcement the repository makes: only the lost connection voids the entry.
      await direct.query(`update agents set status = 'paused' where uuid = $1`, [agent.uuid]);
      await eventually('the paused agent seen', async () => (await submit()).statusCode === 503, 5000);
      await eventually('listeners reconnected', async () => (await listeners()).length === 1);
      expect((await submit()).statusCode).toBe(503);
    } finally {
      await direct.end();
      await t.close();
    }
  }, 60_000);

  it('PostgreSQL going away under load: unhealthy, then recovered without a restart, nothing acknowledged lost', async () => {
    const url = new URL(database.databaseUrl as string);
    const proxy = createProxy({ host: url.hostname, port: Number(url.port || 5432) });
    await proxy.start();
    const viaProxy = new URL(url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const t = await buildTestApp(
      { name: 'postgres', databaseUrl: viaProxy.toString() },
      { config: { databaseUrl: viaProxy.toString(), healthIntervalMs: 100 } },
    );
    const direct = await buildTestApp(database);
    try {
      const user: TestUser = await createUser(t);
      const agent = await createAgent(t, user);
      const acknowledged: string[] = [];
      const statuses = new Set<number>();
      let stop = false;
      async function client() {
        while (!stop) {
          const res = await call(t.app, 'POST', `/agent/request/${agent.uuid}`, {
            headers: workerHeaders(user),
            body: { message: 'under load' },
          });
          statuses.add(res.statusCode);
          if (res.statusCode === 202) acknowledged.push(res.json().task_id);
          else await sleep(50);
        }
      }
      const clients = Array.from({ length: 8 }, client);
      await eventually('some load', async () => acknowledged.length >= 50);

      await proxy.stop();
      await eventually('unhealthy', async () => (await call(t.app, 'GET', '/health')).statusCode === 503);
      const during = acknowledged.length;
      await proxy.start();
      await eventually('healthy again', async () => (await call(t.app, 'GET', '/health')).statusCode === 200);
      await eventually('writes again', async () => acknowledged.length >= during + 50);
      stop = true;
      await Promise.all(clients);

      // Refusals while it was away were clean 503s, never another 5xx.
      expect([...statuses].filter((s) => s >= 500 && s !== 503)).toEqual([]);
      for (const taskId of acknowledged) {
        const res = await call(direct.app, 'GET', `/agent/${agent.uuid}/task/${taskId}`, {
          headers: workerHeaders(user),
        });
        expect(res.statusCode, taskId).toBe(200);
      }
    } finally {
      await proxy.start().catch(() => undefined);
      await t.close();
      await direct.close();
      await proxy.stop();
    }
  }, 120_000);
});

describe.runIf(redisUrl)('Redis going away', () => {
  let t: TestApp;
  let proxy: ReturnType<typeof createProxy>;

  beforeAll(async () => {
    const url = new URL(redisUrl as string);
    proxy = createProxy({ host: url.hostname, port: Number(url.port || 6379) });
    await proxy.start();
    const viaProxy = new URL(url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    t = await buildTestApp(
      { name: 'sqlite', databaseUrl: undefined },
      { config: { redisUrl: viaProxy.toString(), rateLimit: 1000 } },
    );
  });
  afterAll(async () => {
    await proxy.start().catch(() => undefined);
    await t.close();
    await proxy.stop();
  });

  it('lets requests through uncounted while it is away, and counts again once it is back', async () => {
    const user = await createUser(t);
    const remaining = async () => {
      const res = await call(t.app, 'GET', '/agent/list', { token: user.token });
      expect(res.statusCode).toBe(200);
      return Number(res.headers['x-ratelimit-remaining']);
    };
    const first = await remaining();
    expect(await remaining()).toBe(first - 1);

    await proxy.stop();
    // Still answered (after at most the store's one-second wait), with the headers set.
    for (let i = 0; i < 3; i++) expect(Number.isInteger(await remaining())).toBe(true);

    await proxy.start();
    let before = -1;
    await eventually('counting again', async () => {
      const now = await remaining();
      const counting = before !== -1 && now === before - 1;
      before = now;
      return counting;
    });
  }, 60_000);
});
